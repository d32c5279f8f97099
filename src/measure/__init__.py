"""Measuring a run without perturbing it: the Trainer callback that times every step on the device's timeline
and counts tokens and memory (meter), its parts with no Trainer in sight (timing; stop: when the mean is known),
and the Trainer's hook order for tests and benchmarks (hooks). Imports base, config, machine, data and model."""

# A step on the device's timeline, as the step timer splits it; the report's breakdown has one field per phase.
# Here rather than in timing.py so the report can name them without loading torch.
PHASES = ("data", "compute", "optimizer", "other")
