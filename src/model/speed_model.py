"""Step time predicted before a run, from the same 1- and 2-layer copies the memory model builds: each copy
trains a few steps at the run's micro-batch shape (forwards and backwards, then AdamW steps), timed in blocks
without a sync inside a part, so a host-bound step is timed as the host sets its pace and a GPU-bound one as the GPU does.
The 2-layer minus the 1-layer time is one layer, the rest is everything outside the layers (embeddings, head,
loss, the optimizer's fixed cost); both scale to the real depth. What the copies don't see (the Trainer's own
work per step, the dataloader) the planner calibrates away with one measured cell per family."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ..base import stats


@dataclass(frozen=True)
class StepPrediction:
    step_s: float
    low: float
    high: float

    def rate(self, tokens_per_step: float) -> tuple[float, float, float]:
        """tokens/s: mean, low, high (the slowest step gives the low rate)."""
        return tokens_per_step / self.step_s, tokens_per_step / self.high, tokens_per_step / self.low


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


MIN_BLOCK_S = 0.05  # a timed block at least this long: a host's hiccup of a millisecond or two stays a few percent
MAX_STEPS = 32


def time_steps(model, batch: dict, grad_accum: int, amp: str, device: str, blocks: int = 3, steps: int = 3,
               clock=time.perf_counter, min_block_s: float = MIN_BLOCK_S) -> list[float]:
    """Seconds per optimizer step, one figure per block: `steps` forwards and backwards timed together, then
    `steps` AdamW steps, so a step is grad_accum x the first plus the second. Timing the two apart keeps the
    probe's cost the same at any grad_accum (a cell of 4 rows x 16 costs what one of 64 x 1 does). After one
    untimed step (a compile, cuBLAS's first call); synced only between the timed parts. A small micro-batch's
    forward and backward take a few milliseconds on a 1-layer copy: its blocks hold more of them (up to
    MAX_STEPS), as many as make a block min_block_s long, from one more synced forward and backward; these cells
    are the cheap ones, and their 1- and 2-layer difference is what gets scaled by the depth."""
    from .memory_model import _autocast

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, fused=device == "cuda" or None)

    def forward_backward():
        with _autocast(amp, device):
            loss = model(**batch).loss
        loss.float().backward()

    forward_backward()
    opt.step()
    _sync(device)
    t0 = clock()
    forward_backward()
    _sync(device)
    one = clock() - t0
    steps = max(steps, min(MAX_STEPS, math.ceil(min_block_s / one))) if one > 0 else steps
    out = []
    for _ in range(blocks):
        _sync(device)
        t0 = clock()
        for _ in range(steps):
            forward_backward()
        _sync(device)
        t1 = clock()
        for _ in range(steps):
            opt.step()
        _sync(device)
        out.append((grad_accum * (t1 - t0) + clock() - t1) / steps)
        opt.zero_grad(set_to_none=True)
    del opt
    return out


def at_depth(one: list[float], two: list[float], layers: int) -> StepPrediction:
    """The step at `layers` layers from the 1- and 2-layer copies' block times: block i of each gives one line
    (t1 + (t2 - t1)(layers - 1)); the prediction is their mean, its interval that of the blocks (stats.of_repeats:
    the spread of 2-3 blocks, so a noisy probe says so). A 2-layer copy timed faster than the 1-layer one is noise
    at that scale: the layer's cost is then taken as zero, not negative."""
    if len(one) != len(two) or not one:
        raise ValueError(f"the copies' timings differ in length: {len(one)} and {len(two)} blocks")
    lines = [a + max(0.0, b - a) * (layers - 1) for a, b in zip(one, two)]
    ci = stats.of_repeats(lines)  # log scale: a step time stays positive
    mean = sum(lines) / len(lines)
    return StepPrediction(mean, ci.low, ci.high) if ci else StepPrediction(mean, mean, mean)
