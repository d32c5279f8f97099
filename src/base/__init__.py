"""The floor every stage stands on, knowing nothing of configs or models: files written whole or not at all
and the run-directory lock (files), who this process is under torchrun (ranks), random generators kept as they
were (rng), and how sure a measured figure is (stats). Imports nothing of trainsweep's."""
