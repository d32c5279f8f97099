"""The Trainer's own figures under speedup's packing: train_samples_per_second, and num_input_tokens_seen.

train_samples_per_second: transformers counts a step's samples as its
micro-batch size times grad_accum: under packing that is 1 pack times grad_accum, so the figure the script's logs,
W&B and `trainer.train()`'s metrics show fell 4-5x while the steps ran faster (a newcomer's SFT script: 531.7
plain, 111.6 sped up). This puts the rows the packs held in its place, in the logs dict every logger reads and
train() returns, before the Trainer's own printers see it.

num_input_tokens_seen (include_num_input_tokens_seen): "all" counts a batch's positions, padding included, and a
pack's positions are what was fed (fewer: less padding), so it stands, and the speedup line says so. "non_padding"
counts the attention mask, else the tokens other than the pad id: a pack has no mask, so it counted the pack's
padding (with no tokenizer on the Trainer) or missed every real token equal to the pad id (pad = eos). TokensSeen
counts each pack's real tokens instead, as the collator counted them."""
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


class TokensSeen:
    """Stands in for Trainer._track_num_input_tokens while packs train, in "non_padding" mode: a pack adds its real
    tokens (the tap hands over the collator's count before the Trainer tracks the batch), anything else goes to the
    Trainer's own count. Never raises into the training: a miss falls back to the Trainer's count."""

    def __init__(self, trainer):
        self.trainer, self.theirs = trainer, trainer._track_num_input_tokens
        self.pending: dict[int, tuple] = {}  # id(batch) -> (batch, real tokens); the batch held so its id stays its

    def count(self, batch, pack_stats) -> None:
        try:
            if pack_stats and "real" in pack_stats:
                # a step's batches are all fetched before any is tracked; older ones were never tracked (the
                # verification's) and go, oldest first
                while self.pending and len(self.pending) > 2 * self.trainer.args.gradient_accumulation_steps + 8:
                    del self.pending[next(iter(self.pending))]
                self.pending[id(batch)] = (batch, int(pack_stats["real"]))
        except Exception:  # the pack then goes to the Trainer's own count
            pass

    def __call__(self, inputs):
        try:
            held = self.pending.pop(id(inputs), None)
            ours = held is not None and held[0] is inputs \
                and self.trainer.args.include_num_input_tokens_seen == "non_padding"
        except Exception:
            ours = False
        if not ours:
            return self.theirs(inputs)
        self.trainer.state.num_input_tokens_seen += held[1]


def install_tokens_seen(trainer, taps) -> TokensSeen | None:
    """A TokensSeen over the Trainer's count where it counts non-padding tokens (None where it doesn't)."""
    if taps is None or getattr(trainer.args, "include_num_input_tokens_seen", "no") != "non_padding" \
            or not hasattr(trainer, "_track_num_input_tokens"):
        return None
    seen = TokensSeen(trainer)
    taps.listeners.append(seen.count)
    trainer._track_num_input_tokens = seen
    return seen


def remove_tokens_seen(trainer, taps, seen: TokensSeen | None) -> None:
    if seen is None:
        return
    if seen.count in taps.listeners:
        taps.listeners.remove(seen.count)
    if vars(trainer).get("_track_num_input_tokens") is seen:
        del trainer._track_num_input_tokens
