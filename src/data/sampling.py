"""A run's micro-batch shapes before it runs: the rows in the order the Trainer's sampler draws them (a random
permutation, or Hugging Face's length-grouped order), padded as the collator pads them. The predictor counts the
shapes a run meets for the first time inside its timed window: each costs the run its kernels' first calls at that
shape (on an H100 with cuDNN attention, ~0.14 s: grouped padding met 11-14 in 20 timed steps)."""
from __future__ import annotations

from statistics import fmean

import torch

from .collate import PadCollator

SEEDS = 8  # the Trainer's own order depends on its seed: the count is the mean over this many orders


def micro_batch_shapes(lengths: list[int], collator, strategy: str, batch: int, grad_accum: int, micro_batches: int,
                       seed: int = 0) -> list[tuple[int, int]] | None:
    """(rows, width) of the first `micro_batches` micro-batches, epoch after epoch; None where the collator
    doesn't pad rows to a width (padding-free packs)."""
    if not isinstance(collator, PadCollator) or not lengths:
        return None
    from transformers.trainer_pt_utils import get_length_grouped_indices

    n, out, epoch = len(lengths), [], 0
    while len(out) < micro_batches:
        gen = torch.Generator().manual_seed(seed * 1000 + epoch)
        if strategy == "grouped":  # the Trainer's LengthGroupedSampler groups batch x grad_accum rows at a time
            order = get_length_grouped_indices(lengths, batch * grad_accum, generator=gen)
        else:
            order = torch.randperm(n, generator=gen).tolist()
        for start in range(0, n, batch):
            rows = order[start:start + batch]
            longest = min(max(lengths[i] for i in rows), collator.max_length)
            out.append((len(rows), collator._width(longest, collator.max_length)))
        epoch += 1
    return out[:micro_batches]


def new_in_window(shapes: list[tuple[int, int]], grad_accum: int, warmup: int, last: int) -> int:
    """Distinct shapes first met in optimizer steps warmup+1..last (the timed window), none of the warm-up's."""
    before = set(shapes[:warmup * grad_accum])
    return len(set(shapes[warmup * grad_accum:last * grad_accum]) - before)


def expected_new_shapes(lengths: list[int], collator, strategy: str, batch: int, grad_accum: int, warmup: int,
                        last: int) -> float | None:
    """The mean count of new shapes in the timed window over SEEDS orders; None where it can't be counted."""
    counts = []
    for seed in range(SEEDS):
        shapes = micro_batch_shapes(lengths, collator, strategy, batch, grad_accum, last * grad_accum, seed)
        if shapes is None:
            return None
        counts.append(new_in_window(shapes, grad_accum, warmup, last))
    return fmean(counts)
