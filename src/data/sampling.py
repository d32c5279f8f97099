"""A run's micro-batches before it runs: the rows in the order the Trainer's sampler draws them, padded as the
collator pads them. The predictor takes from it the real tokens of the run's timed window and the batch shapes the
run meets there for the first time: each costs the run its kernels' first calls at that shape (on an H100 with
cuDNN attention 0.12-0.22 s at any depth; grouped padding met 11-14 in 20 timed steps).

A random order is the run's own: accelerate's seedable sampler draws torch.randperm from a generator seeded with
data.seed plus the epoch (on an H100 the counts of new shapes it gives matched five runs' measured ones). The
length-grouped order draws from torch's global generator, whose state the run's model build has moved: that
order is averaged over SEEDS draws."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

import torch

from .collate import PadCollator

SEEDS = 8  # a length-grouped order can't be drawn as the run draws it: its figures are the mean of this many


@dataclass(frozen=True)
class MicroBatch:
    rows: int
    width: int   # padded
    real: int    # tokens that are not padding

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.width


@dataclass(frozen=True)
class Window:
    """What a run's timed window holds, on average over the orders it may draw."""
    new_shapes: float          # distinct shapes first met inside it
    real_per_micro_batch: float


def micro_batches(lengths: list[int], collator, strategy: str, batch: int, grad_accum: int, count: int,
                  seed: int) -> list[MicroBatch] | None:
    """The first `count` micro-batches, epoch after epoch; None where the collator doesn't pad rows to a width
    (padding-free packs). `seed`: data.seed for a random order, any for a length-grouped one."""
    if not isinstance(collator, PadCollator) or not lengths:
        return None
    from transformers.trainer_pt_utils import get_length_grouped_indices

    n, out, epoch = len(lengths), [], 0
    while len(out) < count:
        gen = torch.Generator().manual_seed(seed + epoch)
        if strategy == "grouped":  # the Trainer's LengthGroupedSampler groups batch x grad_accum rows at a time
            order = get_length_grouped_indices(lengths, batch * grad_accum, generator=gen)
        else:
            order = torch.randperm(n, generator=gen).tolist()
        for start in range(0, n, batch):
            real = [min(lengths[i], collator.max_length) for i in order[start:start + batch]]
            out.append(MicroBatch(len(real), collator._width(max(real), collator.max_length), sum(real)))
        epoch += 1
    return out[:count]


def new_in_window(shapes: list[tuple[int, int]], grad_accum: int, warmup: int, last: int) -> int:
    """Distinct shapes first met in optimizer steps warmup+1..last (the timed window), none of the warm-up's."""
    before = set(shapes[:warmup * grad_accum])
    return len(set(shapes[warmup * grad_accum:last * grad_accum]) - before)


def window(lengths: list[int], collator, strategy: str, batch: int, grad_accum: int, warmup: int, last: int,
           data_seed: int) -> Window | None:
    """The run's timed window (optimizer steps warmup+1..last); None where it can't be drawn."""
    seeds = [data_seed] if strategy != "grouped" else [data_seed + 1000 * i for i in range(SEEDS)]
    counts, reals = [], []
    for seed in seeds:
        drawn = micro_batches(lengths, collator, strategy, batch, grad_accum, max(last, warmup + 1) * grad_accum, seed)
        if drawn is None:
            return None
        counts.append(new_in_window([m.shape for m in drawn], grad_accum, warmup, last))
        reals += [m.real for m in drawn[warmup * grad_accum:]]
    return Window(fmean(counts), fmean(reals))
