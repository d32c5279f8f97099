"""The micro-batches a user's Trainer trains on, seen where it fetches them: Trainer.get_batch_samples, once per
optimizer step, before compute_loss can pop labels or a model hook can reshape them. Counting tokens there
counts exactly the training batches (evaluation and the checks' forwards never pass through it), whatever the
script's compute_loss does with them.

speedup's packed batches carry their exact counts from the collator (PACK_STATS); the tap takes them off each
batch before the model sees it and hands them to the listeners with the batch.
"""
from __future__ import annotations

from collections.abc import MutableMapping

from ..data.packing import PACK_STATS


class Tap:
    """Installed once per Trainer (an instance attribute over its get_batch_samples); listeners are
    fn(batch, pack_stats or None) and must not raise (the drop-in guards its own)."""

    def __init__(self, trainer):
        self.fetch = trainer.get_batch_samples  # the script's own, a subclass's override included
        self.listeners: list = []
        trainer.get_batch_samples = self

    def __call__(self, epoch_iterator, num_batches, device):
        batches, items = self.fetch(epoch_iterator, num_batches, device)
        for batch in batches:
            stats = batch.pop(PACK_STATS, None) if isinstance(batch, MutableMapping) else None
            for listen in self.listeners:
                listen(batch, stats)
        return batches, items


def tap(trainer) -> Tap | None:
    """The Trainer's tap (made on first use), or None on a transformers without get_batch_samples."""
    current = vars(trainer).get("get_batch_samples")
    if isinstance(current, Tap):
        return current
    if not hasattr(trainer, "get_batch_samples"):
        return None
    return Tap(trainer)
