"""The Trainer's own train_samples_per_second under speedup's packing. transformers counts a step's samples as its
micro-batch size times grad_accum: under packing that is 1 pack times grad_accum, so the figure the script's logs,
W&B and `trainer.train()`'s metrics show fell 4-5x while the steps ran faster (a newcomer's SFT script: 531.7
plain, 111.6 sped up). This puts the rows the packs held in its place, in the logs dict every logger reads and
train() returns, before the Trainer's own printers see it."""
from __future__ import annotations

from transformers import TrainerCallback

KEY = "train_samples_per_second"


class RowRate(TrainerCallback):
    """Counts the rows of every pack the Trainer fetched (the tap's pack counts, host numbers: no sync) and writes
    rows / train_runtime over the Trainer's figure at train end. Never raises into the training."""

    def __init__(self):
        self.rows = 0

    def count(self, batch, pack_stats) -> None:
        if pack_stats:
            self.rows += int(pack_stats.get("samples", 0))

    def on_log(self, args, state, control, logs=None, **kw):
        try:
            if not logs or KEY not in logs or not logs.get("train_runtime") or not self.rows:
                return
            logs[KEY] = round(self.rows / logs["train_runtime"], 3)
            last = state.log_history[-1] if state.log_history else {}
            if KEY in last:  # the Trainer stored a copy of the logs before the callbacks saw them
                last[KEY] = logs[KEY]
        except Exception:  # a figure left as the Trainer made it is no reason to stop a training
            pass


def install(trainer, taps) -> RowRate | None:
    """Put a RowRate first among the Trainer's callbacks and on its tap; returns it (None without a tap)."""
    if taps is None:
        return None
    rate = RowRate()
    taps.listeners.append(rate.count)
    trainer.callback_handler.callbacks.insert(0, rate)
    return rate


def remove(trainer, taps, rate: RowRate | None) -> None:
    if rate is None:
        return
    if rate.count in taps.listeners:
        taps.listeners.remove(rate.count)
    if rate in trainer.callback_handler.callbacks:
        trainer.callback_handler.callbacks.remove(rate)
