"""Step time predicted before a run, from copies of the model with fewer layers, built as the memory model builds
them: each copy runs a few forwards and backwards at the run's micro-batch shape, then AdamW steps, timed in
blocks without a sync inside a part, so a host-bound micro-batch is timed as the host sets its pace and a
GPU-bound one as the GPU does. The speed copies have 2 and 4 layers, 4 and 8 for a deep model (copy_depths):
their difference over 2 or 4 is one layer, the rest is everything outside the layers, and both scale to the
real depth.

Where the host sets the pace, a cell's own line is a poor guide: a block of a few milliseconds moves with the
host's state, and the line multiplies its error by the depth. So each copy also profiles the cell's kernels
(gpu_busy_s), once every cell is timed: a profile leaves CUPTI slowing each later launch (1.46x on a host-bound
micro-batch of Llama-3.2-3B QLoRA on an H200). A micro-batch whose kernels ran under HOST_BOUND of its wall time
takes the longer of the kernels' line and the host's line, the host's pooled over every host-bound cell of the
family (host_time): launching a micro-batch costs the host about the same at any number of rows.

A batch shape the run meets for the first time costs its kernels' first calls at that shape (cuDNN attention
builds its graphs per shape): the copies time that apart (first_call_s), and the predictor adds it for each new
shape the run's sampler will bring inside the timed window (src/data/sampling.py). The copies' loop does the
Trainer's model.train() and batch copy per micro-batch; the rest of the Trainer's host work and the
dataloader's the planner calibrates away with one measured cell per family (in one process on an H200, the
Trainer's training_step and train() took what the copies' loop took, within the host's drift)."""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from statistics import median

import torch

from ..base import stats
from ..model.memory_model import forward_backward as _forward_backward

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Block:
    """One timed block of a copy, in seconds: a forward and backward (its wall time), and an AdamW step."""
    micro_batch: float
    optimizer: float


@dataclass(frozen=True)
class StepPrediction:
    step_s: float
    low: float
    high: float
    bound: str | None = None  # "host" where the step is the host's pooled time, "gpu" where it is the kernels'

    def rate(self, tokens_per_step: float) -> tuple[float, float, float]:
        """tokens/s: mean, low, high (the slowest step gives the low rate)."""
        return tokens_per_step / self.step_s, tokens_per_step / self.high, tokens_per_step / self.low


def warm_up(model, batch: dict, amp: str, device: str) -> None:
    """One forward and backward, untimed: what a process allocates once (cuBLAS's workspace, cuDNN's plans) is
    then in place before anything is measured on the copy."""
    _forward_backward(model, {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}, amp, device)
    model.zero_grad(set_to_none=True)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


MIN_BLOCK_S = 0.03  # a timed block at least this long: a host's hiccup of a millisecond stays a few percent
MAX_STEPS = 32
BLOCKS = 5  # the median of 5 blocks and their range (94% for the median): a longer hiccup moves one block only


def time_steps(model, batch: dict, amp: str, device: str, blocks: int = BLOCKS, steps: int = 3,
               clock=time.perf_counter, min_block_s: float = MIN_BLOCK_S) -> list[Block]:
    """`blocks` Blocks, each the mean of `steps` forwards and backwards timed together and `steps` AdamW steps,
    after one untimed step (a compile, cuBLAS's first call) and one synced forward and backward that sizes the
    rest. Timing the AdamW step apart keeps the probe's cost the same at any grad_accum. A small micro-batch takes
    a few milliseconds on a 1-layer copy: its blocks hold more of them (up to MAX_STEPS), as many as make a block
    min_block_s long. Synced only between the timed parts."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, fused=device == "cuda" or None)
    if device == "cuda":  # on the host, pinned, as the run's dataloader hands it over
        batch = {k: v.cpu().pin_memory() if torch.is_tensor(v) else v for k, v in batch.items()}

    def forward_backward():
        # the host work the Trainer does for each micro-batch: model.train() walks every module (a layer's worth
        # per layer: the line scales it), and the batch is copied without waiting (accelerate's non_blocking)
        model.train()
        _forward_backward(model, {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v
                                  for k, v in batch.items()}, amp, device)

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
        out.append(Block((t1 - t0) / steps, (clock() - t1) / steps))
        opt.zero_grad(set_to_none=True)
    del opt
    return out


def gpu_busy_s(model, batch: dict, amp: str, device: str, steps: int = 3) -> float | None:
    """The GPU's busy time per forward and backward (the union of its kernels' spans, from torch's profiler,
    kernels only), over `steps` of them after a synced start: what the micro-batch costs the GPU whatever the host
    does. None off a GPU, or where the profiler gives no kernels."""
    if device != "cuda":
        return None
    batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
    _sync(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            _forward_backward(model, batch, amp, device)
        _sync(device)
    model.zero_grad(set_to_none=True)
    try:
        spans = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in prof.profiler.kineto_results.events()
                 if e.device_type() == torch.autograd.DeviceType.CUDA]
    except Exception as exc:  # profiler APIs move between torch releases: no figure, and the cell's own line stands
        log.warning("could not read kernel times from the profiler: %s: %s", type(exc).__name__, exc)
        return None
    return stats.union_seconds(spans) / steps if spans else None


HOST_BOUND = 0.8  # kernels busy under 80% of a micro-batch's wall time: the GPU waited for the host


def host_bound(blocks: list[Block], gpu_s: float | None) -> bool:
    return gpu_s is not None and gpu_s < HOST_BOUND * median(b.micro_batch for b in blocks)


def host_time(cells: list[tuple[list[Block], float | None]]) -> stats.Interval | None:
    """The host's time per micro-batch on one copy: the median of the blocks of every host-bound cell of a
    family, and its interval (stats.of_median). None where no cell is host-bound (its host time is hidden
    behind the kernels), or only one block is. On an H100 the 2-layer copy's blocks of single host-bound
    cells lay at 14-24 ms, and a line through one cell's own figures missed a 4-layer micro-batch by 0.65-1.59x."""
    return stats.of_median([b.micro_batch for blocks, gpu in cells if host_bound(blocks, gpu) for b in blocks])


def first_call_s(model, batches: list[dict], amp: str, device: str, clock=time.perf_counter) -> list[float]:
    """What each batch's first forward and backward took over its second: the cost of a shape this process has
    not met before (batches of shapes it has met cost nothing here, so the caller picks new ones)."""
    out = []
    for batch in batches:
        _sync(device)
        t0 = clock()
        _forward_backward(model, batch, amp, device)
        _sync(device)
        t1 = clock()
        _forward_backward(model, batch, amp, device)
        _sync(device)
        out.append(max(0.0, (t1 - t0) - (clock() - t1)))
    model.zero_grad(set_to_none=True)
    return out


DEEP_COPY = 4  # the deeper copy the speed is timed on: a layer's time read off 2 layers' difference, not 1
DEEP_MODEL = 16  # from this depth on the copies have 4 and 8 layers: the host's time per layer falls with depth


def copy_depths(layers: int) -> tuple[int, int]:
    """The two copies a cell's speed is timed on: 2 and 4 layers (fewer where the model has fewer), 4 and 8 for
    a model of DEEP_MODEL layers or more. On an H100 the host's time per micro-batch grew about 9 ms from 1 to 2
    layers and 6 ms a layer from 2 to 4 (Qwen3-4B width, LoRA): a line through 1 and 2 layers, even pooled over a
    family's cells, missed a 4-layer micro-batch by 0.90-1.31x. On an H200 the host's time per layer falls with
    depth (Llama-3.2-3B QLoRA at 8 rows: 19.4, 15.6 and 12.1 ms a layer from 2 to 4, 4 to 8 and 8 to 28 layers):
    at 28 layers the 4-8 line overshot the real depth's micro-batch by 1.19x, the 2-4 line by 1.43x (one reading
    each; the host drifts up to 1.20x within a process)."""
    if layers >= DEEP_MODEL:
        return DEEP_COPY, 2 * DEEP_COPY
    deep = min(layers, DEEP_COPY)
    return max(1, deep // 2), deep


def line(a: float, b: float, layers: int, depths: tuple[int, int] = (1, 2)) -> float:
    """The figure at `layers` layers from the figures a and b of copies of depths[0] and depths[1] layers. A
    deeper copy timed faster than the shallower one is noise at that scale: the layer's cost is then taken as
    zero, not negative."""
    shallow, deep = depths
    return a if deep == shallow else a + max(0.0, b - a) / (deep - shallow) * (layers - shallow)


def at_depth(one: list[Block], two: list[Block], layers: int, grad_accum: int, new_shapes_per_step: float = 0.0,
             first_calls: list[float] | None = None, host: tuple | None = None,
             gpu: tuple[float | None, float | None] | None = None, depths: tuple[int, int] = (1, 2)) -> StepPrediction:
    """The optimizer step at `layers` layers from copies of `depths` layers (one, two: their blocks): block i of
    each copy gives one step, grad_accum micro-batches plus the AdamW step, each a line through the copies. The
    prediction is the steps' median, its interval their range (stats.of_median: on an H100 some blocks of a
    host-bound copy took 1.5-2.4x the others).

    With `gpu` (the cell's kernel time per micro-batch on each copy) and `host` (the family's pooled host time
    on each copy, Intervals from host_time), a cell host-bound on either copy takes at depth the longer of the
    kernels' line and the host's line, the host's interval giving the step's. A run that meets new shapes pays
    each one's first calls (first_calls: their costs, measured on a copy; the same at any depth, as a shape's
    kernels are chosen once for all its layers): new_shapes_per_step of them on average."""
    if len(one) != len(two) or not one:
        raise ValueError(f"the copies' timings differ in length: {len(one)} and {len(two)} blocks")
    optimizer = [line(a.optimizer, b.optimizer, layers, depths) for a, b in zip(one, two)]
    if host and None not in host and gpu and None not in gpu and any(
            host_bound(blocks, g) for blocks, g in zip((one, two), gpu)):
        kernels = line(gpu[0], gpu[1], layers, depths)
        low, mid, high = (max(kernels, line(getattr(host[0], x), getattr(host[1], x), layers, depths))
                          for x in ("low", "mean", "high"))
        opt = stats.of_median(optimizer) or stats.Interval(optimizer[0], optimizer[0], optimizer[0], 1)
        step = StepPrediction(grad_accum * mid + opt.mean, grad_accum * min(low, mid, high) + opt.low,
                              grad_accum * max(low, mid, high) + opt.high, "host" if mid > kernels else "gpu")
    else:
        steps = [grad_accum * line(a.micro_batch, b.micro_batch, layers, depths) + o
                 for a, b, o in zip(one, two, optimizer)]
        ci = stats.of_median(steps)
        step = StepPrediction(ci.mean, ci.low, ci.high) if ci else StepPrediction(steps[0], steps[0], steps[0])
    if not new_shapes_per_step or not first_calls:
        return step
    extra = [new_shapes_per_step * x for x in (median(first_calls), min(first_calls), max(first_calls))]
    return StepPrediction(step.step_s + extra[0], step.low + extra[1], step.high + extra[2], step.bound)
