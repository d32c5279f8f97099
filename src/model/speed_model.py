"""Step time predicted before a run, from the same 1- and 2-layer copies the memory model builds: each copy
runs a few forwards and backwards at the run's micro-batch shape, then AdamW steps. A step is grad_accum times a
micro-batch plus the AdamW step, and a micro-batch takes the longer of two times that scale with depth apart:
the host's, issuing the kernels, and the GPU's, running them. A line through the copies' wall times would mix
them: a copy of 1 or 2 layers is often host-bound (the embeddings, head and loss cost the host more than the
GPU) while the real depth is GPU-bound, and the line then predicts the host's pace where the GPU sets it.
The 2-layer minus the 1-layer time is one layer, the rest is everything outside the layers; both scale to the
real depth. What the copies don't see (the Trainer's own work per step, the dataloader) the planner calibrates
away with one measured cell per family."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ..base import stats


@dataclass(frozen=True)
class Block:
    """One timed block of a copy, in seconds per micro-batch (host, gpu) and per AdamW step (optimizer)."""
    host: float       # the host issuing one forward and backward (the whole wall time where gpu is 0)
    gpu: float        # the GPU running them back to back; 0 where it can't be told apart (the CPU, a syncing model)
    optimizer: float  # one AdamW step, synced


@dataclass(frozen=True)
class StepPrediction:
    step_s: float
    low: float
    high: float
    gpu_busy: float | None = None  # the GPU's share of the step (well under 1: host-bound); None: not told apart

    def rate(self, tokens_per_step: float) -> tuple[float, float, float]:
        """tokens/s: mean, low, high (the slowest step gives the low rate)."""
        return tokens_per_step / self.step_s, tokens_per_step / self.high, tokens_per_step / self.low


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class GpuClock:
    """The GPU's own time for work the host issues while the GPU is held busy: torch.cuda._sleep keeps it
    spinning until the host has issued a whole micro-batch, which it then runs without waiting for the host.
    `release` returns None where the GPU got to the work first (the hold was short, or the model syncs the host
    inside its forward): that time would include the GPU's waits."""

    def __init__(self):
        self.cycles_per_s = self._calibrate()

    @staticmethod
    def _calibrate() -> float:
        for _ in range(2):  # the first includes the sleep kernel's own first launch
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(10_000_000)
            end.record()
            end.synchronize()
        return 10_000_000 / (start.elapsed_time(end) / 1000)

    def hold(self, seconds: float) -> None:
        torch.cuda._sleep(int(seconds * self.cycles_per_s))
        self.start = torch.cuda.Event(enable_timing=True)
        self.start.record()

    def release(self) -> float | None:
        ran_dry = self.start.query()  # the GPU reached the work before the host finished issuing it
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        return None if ran_dry else self.start.elapsed_time(end) / 1000


MIN_BLOCK_S = 0.05  # a timed block at least this long: a host's hiccup of a millisecond or two stays a few percent
MAX_STEPS = 32
HOLD_TRIES = 3  # a hold that runs dry is doubled this often before the host and GPU times are given up as one


def _micro_batches(forward_backward, device: str, steps: int, clock, gpu_clock, hold: list[float]) -> tuple[float, float] | None:
    """Host and GPU seconds of `steps` forwards and backwards. Without a GpuClock they run back to back, synced
    only at the ends, so the wall time is the pace of whichever of the two is slower, and stands for the host's.
    With one, each runs behind a hold; None where a hold ran dry HOLD_TRIES times in a row (doubled each time)."""
    if gpu_clock is None:
        _sync(device)
        t0 = clock()
        for _ in range(steps):
            forward_backward()
        _sync(device)
        return clock() - t0, 0.0
    host = gpu = 0.0
    for _ in range(steps):
        for _ in range(HOLD_TRIES):
            gpu_clock.hold(hold[0])
            t0 = clock()
            forward_backward()
            issued = clock() - t0
            ran = gpu_clock.release()
            if ran is not None:
                break
            hold[0] *= 2
        else:
            return None
        host, gpu = host + issued, gpu + ran
    return host, gpu


def time_steps(model, batch: dict, amp: str, device: str, blocks: int = 3, steps: int = 3,
               clock=time.perf_counter, min_block_s: float = MIN_BLOCK_S, gpu_clock=None, split: bool = True) -> list[Block]:
    """`blocks` Blocks, each the mean of `steps` forwards and backwards and `steps` AdamW steps, after one
    untimed step (a compile, cuBLAS's first call) and one synced forward and backward that sizes the rest. Timing
    the AdamW step apart keeps the probe's cost the same at any grad_accum. A small micro-batch takes a few
    milliseconds on a 1-layer copy: its blocks hold more of them (up to MAX_STEPS), as many as make a block
    min_block_s long. On a GPU each micro-batch runs behind a hold (GpuClock), so its host and GPU times come
    apart; where that fails (a model that syncs inside its forward) each is timed synced, its wall time standing
    for the host's, and the GPU's is 0, as with split=False."""
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
    hold = [1.5 * one + 0.002]  # the GPU held a while longer than the host takes to issue a micro-batch

    def timed_blocks(gpu_clock) -> list[Block] | None:
        out = []
        for _ in range(blocks):
            times = _micro_batches(forward_backward, device, steps, clock, gpu_clock, hold)
            if times is None:
                return None
            _sync(device)
            t1 = clock()
            for _ in range(steps):
                opt.step()
            _sync(device)
            out.append(Block(times[0] / steps, times[1] / steps, (clock() - t1) / steps))
            opt.zero_grad(set_to_none=True)
        return out

    gpu_clock = (gpu_clock or (GpuClock() if device == "cuda" else None)) if split else None
    out = (timed_blocks(gpu_clock) if gpu_clock else None) or timed_blocks(None)  # None: the model syncs inside
    del opt
    return out


def _line(a: float, b: float, layers: int) -> float:
    """The figure at `layers` layers from the 1- and 2-layer ones. A 2-layer copy timed faster than the 1-layer
    one is noise at that scale: the layer's cost is then taken as zero, not negative."""
    return a + max(0.0, b - a) * (layers - 1)


def at_depth(one: list[Block], two: list[Block], layers: int, grad_accum: int) -> StepPrediction:
    """The optimizer step at `layers` layers: block i of each copy gives one step, grad_accum x the longer of the
    host's and the GPU's micro-batch (each its own line through the copies) plus the AdamW step; the prediction
    is their mean, its interval that of the blocks (stats.of_repeats: the spread of 2-3 blocks, so a noisy probe
    says so)."""
    if len(one) != len(two) or not one:
        raise ValueError(f"the copies' timings differ in length: {len(one)} and {len(two)} blocks")
    steps, busy = [], []
    for a, b in zip(one, two):
        host, gpu = _line(a.host, b.host, layers), _line(a.gpu, b.gpu, layers)
        step = grad_accum * max(host, gpu) + _line(a.optimizer, b.optimizer, layers)
        steps.append(step)
        busy.append(grad_accum * gpu / step)
    ci = stats.of_repeats(steps)  # log scale: a step time stays positive
    mean = sum(steps) / len(steps)
    gpu_busy = sum(busy) / len(busy) if any(b.gpu for b in one + two) else None
    return StepPrediction(mean, ci.low, ci.high, gpu_busy) if ci else StepPrediction(mean, mean, mean, gpu_busy)
