"""A loss that turns non-finite or explodes: training stops at the log that shows it, and the run ends
`diverged` instead of reporting the throughput of a run that learned nothing as ok."""
from __future__ import annotations

import math

from transformers import TrainerCallback

# A logged loss this many times the larger of the first logged loss and a uniform guess's: no fine-tune gets
# there and comes back sound (lr 1e6 on the tiny classifier: 5.6 -> 1.5e7 at step 2, then 5.6 again, uniform)
EXPLODED = 100.0


def why(log_history: list[dict], expected_initial: float | None = None) -> str | None:
    """What shows the run diverged (`the loss was nan at step 2`), or None. The Trainer's logs: each `loss`
    (logging_steps' mean, step 1's alone) and the run's mean `train_loss` at the end."""
    losses = [(e.get("step"), e["loss"]) for e in log_history if isinstance(e.get("loss"), (int, float))]
    start = [abs(losses[0][1])] if losses and math.isfinite(losses[0][1]) else []
    reference = max(start + [expected_initial or 0.0, 1e-3])
    for step, loss in losses:
        if not math.isfinite(loss):
            return f"the loss was {loss} at step {step}" + (
                " (before any update: no scored token in a batch, e.g. data.max_length too short, or a model that "
                "computes nan)" if step == 1 else "")
        if abs(loss) > EXPLODED * reference:
            return (f"the loss reached {loss:.3g} at step {step}, {abs(loss) / reference:,.0f}x its start "
                    f"({reference:.4g})")
    mean = next((e["train_loss"] for e in reversed(log_history) if isinstance(e.get("train_loss"), (int, float))), None)
    if mean is not None and not math.isfinite(mean):
        return f"the mean loss over the run was {mean}"
    return None


class StopWhenDiverged(TrainerCallback):
    """Stops training at the first log that shows divergence: every step after it computes nan or worse.
    Under torchrun every rank logs the same gathered loss, so every rank stops at the same step."""

    def __init__(self, expected_initial: float | None):
        self.expected_initial = expected_initial

    def on_log(self, args, state, control, logs=None, **kwargs):
        if why(state.log_history, self.expected_initial):
            control.should_training_stop = True
