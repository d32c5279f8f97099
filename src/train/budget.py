"""`batch.tokens=auto`: the smallest token budget per micro-batch at which the GPU, not the host, sets the pace.

A packed micro-batch of B tokens costs the host about the same launches at any B (one kernel per op; the FP8
step's quantising casts made that 0.219 s of a 0.223 s step at 8k on an H200, GPU busy 78%), while the GPU's
kernels grow with B. So one probe on the run's own built and compiled model, at REFERENCE tokens, gives both:

- host_s: the time Python takes to launch a forward and backward (no sync inside), the median of a few;
- gpu_s: the kernels' own time for the same work, launched behind a GPU sleep long enough that every launch is
  queued before the first kernel starts, so the events around it time the kernels without the host's gaps.

A budget c then takes gpu_s * c / REFERENCE on the GPU (GEMMs and varlen attention grow in step with the
tokens at the same sequence lengths), and the step is GPU-bound where that reaches BUSY of the host's time,
which the Trainer's loop makes LOOP_MARGIN longer than the probe's (the optimizer step, clipping, logging).
The choice is the smallest candidate that is GPU-bound and whose memory (the probe's peak, its activations
scaled to c, plus AdamW's two moments) fits under the capacity with the allocator's margin; where none is
GPU-bound, the largest that fits. Rows per optimizer step stay those of REFERENCE x batch.grad_accum: a larger
budget takes a smaller grad_accum, never below 1, and where it can't the choice says how many more rows a
step holds.

Without a GPU there is no host/GPU balance to find: packs of batch.size rows, as with batch.tokens unset.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from statistics import median
from typing import Callable, Optional

REFERENCE = 8192  # the probe's budget, and the rows per optimizer step auto keeps (experiment=fastest's until now)
CANDIDATES = (2048, 4096, 8192, 16384, 32768, 65536)
BUSY = 0.95  # the GPU-busy share a chosen budget is predicted to reach
LOOP_MARGIN = 1.15  # the Trainer's host work per step over the probe's forward and backward (see the docstring)
RESERVED_OVER_ALLOCATED = 1.18  # the allocator's margin over the peak it hands out (memory_model says why)


@dataclass(frozen=True)
class Probe:
    """One probe at `tokens` per micro-batch: seconds to launch a forward and backward, and its kernels' time;
    bytes allocated before it and at its peak, and the trainable parameters' bytes (AdamW's moments come later)."""
    tokens: int
    host_s: float
    gpu_s: float
    base_bytes: int = 0
    peak_bytes: int = 0
    trainable_bytes: int = 0

    def gpu_s_at(self, tokens: int) -> float:
        return self.gpu_s * tokens / self.tokens

    def busy_at(self, tokens: int) -> float:
        """The predicted GPU-busy share of a step at `tokens`: the kernels' time over the longer of theirs and
        the host's (the loop's margin included)."""
        gpu, host = self.gpu_s_at(tokens), self.host_s * LOOP_MARGIN
        return gpu / max(gpu, host)

    def memory_gb_at(self, tokens: int) -> float:
        """Peak allocated at `tokens`: what was there before, AdamW's two moments, and the probe's activations and
        gradients scaled to the budget (gradients don't grow with it: scaled, they make the figure cautious)."""
        grown = max(0, self.peak_bytes - self.base_bytes) * tokens / self.tokens
        return (self.base_bytes + 2 * self.trainable_bytes + grown) / 2**30


@dataclass(frozen=True)
class Choice:
    tokens: Optional[int]  # None: packs of batch.size rows (no GPU)
    grad_accum: int
    reason: str
    predicted_busy: Optional[float] = None
    predicted_memory_gb: Optional[float] = None
    probe: Optional[Probe] = None
    rows_per_step_vs_reference: float = 1.0  # tokens x grad_accum over REFERENCE x the asked grad_accum

    def to_dict(self) -> dict:
        d = asdict(self)
        d["reference_tokens"] = REFERENCE
        return d


def choose(probe: Probe, grad_accum: int, longest: int, capacity_gb: Optional[float],
           candidates: tuple = CANDIDATES) -> Choice:
    """The budget for this run from its probe (see the module's docstring). `longest`: the longest sequence a
    pack must hold; `capacity_gb`: what the process may use (None: no limit known)."""
    usable = [c for c in candidates if c >= longest]
    if not usable:
        usable = [longest]
    fits = [c for c in usable if capacity_gb is None or probe.memory_gb_at(c) * RESERVED_OVER_ALLOCATED <= capacity_gb]
    if not fits:
        tokens, why = usable[0], (f"no candidate fits {capacity_gb:.0f} GB with the allocator's margin; the "
                                  "smallest that holds the longest sequence")
    else:
        bound = [c for c in fits if probe.busy_at(c) >= BUSY]
        if bound:
            tokens = bound[0]
            why = f"the smallest budget predicted GPU-bound (busy >= {BUSY:.0%})"
        else:
            tokens = fits[-1]
            why = ("host-bound at every budget that fits" if fits[-1] < usable[-1] else
                   "host-bound at every candidate") + ": the largest that fits"
    step_tokens = REFERENCE * grad_accum
    accum = max(1, round(step_tokens / tokens))
    host = probe.host_s * LOOP_MARGIN
    reason = (f"{why}: the probe at {probe.tokens:,} tokens launched in {probe.host_s * 1e3:.0f} ms (x{LOOP_MARGIN} "
              f"for the loop: {host * 1e3:.0f} ms) against {probe.gpu_s * 1e3:.0f} ms of kernels, so {tokens:,} "
              f"tokens predict {probe.busy_at(tokens):.0%} busy and {probe.memory_gb_at(tokens):.1f} GB")
    return Choice(tokens=tokens, grad_accum=accum, reason=reason, predicted_busy=probe.busy_at(tokens),
                  predicted_memory_gb=probe.memory_gb_at(tokens), probe=probe,
                  rows_per_step_vs_reference=tokens * accum / step_tokens)


def without_gpu(grad_accum: int) -> Choice:
    return Choice(tokens=None, grad_accum=grad_accum,
                  reason="no GPU: no host/GPU balance to find, so packs of batch.size rows (as batch.tokens unset)")


def describe(choice: Choice, asked_accum: int) -> str:
    """The line a run prints and its summary shows."""
    if choice.tokens is None:
        return f"batch.tokens=auto: {choice.reason}"
    accum = f"grad_accum {asked_accum} -> {choice.grad_accum}" if choice.grad_accum != asked_accum else \
        f"grad_accum {choice.grad_accum}"
    more = choice.rows_per_step_vs_reference
    rows = ("the same rows per optimizer step as " if abs(more - 1) < 1e-9 else f"{more:.2g}x the rows per optimizer "
            "step of ") + f"{REFERENCE:,} tokens x the asked grad_accum"
    return f"batch.tokens=auto chose {choice.tokens:,} tokens per micro-batch, {accum} ({rows}): {choice.reason}"


# -- in a run ---------------------------------------------------------------------------------------------
def is_auto(cfg) -> bool:
    return cfg.padding.strategy == "packed" and cfg.batch.tokens == "auto"


def provisional(cfg, device: str) -> dict:
    """Sets batch.tokens to what the data is packed to before the probe: the probe's budget on a GPU (at least
    the longest sequence), batch.size rows for good without one. The report's record of it."""
    from omegaconf import open_dict

    on_gpu = device == "cuda"
    with open_dict(cfg):
        cfg.batch.tokens = max(REFERENCE, -(-cfg.data.max_length // 1024) * 1024) if on_gpu else None
    if on_gpu:
        return {"tokens": cfg.batch.tokens, "reason": "the probe's budget (not chosen yet)"}
    choice = without_gpu(cfg.batch.grad_accum)
    print(describe(choice, cfg.batch.grad_accum))
    return {**choice.to_dict(), "line": describe(choice, cfg.batch.grad_accum)}


def choose_for_run(cfg, res, model, prep):
    """Probe the built model on the first pack, choose, and set batch.tokens and batch.grad_accum: (prep packed
    to the choice, the report's record of it). A compiled layer forgets the probe's shape when the choice differs:
    two shapes would make dynamo compile the layer for any length (automatic dynamic shapes), slower than one."""
    import torch
    from omegaconf import open_dict

    from ..data import prepare
    from ..data.collate import to_device

    batch = to_device(prep.collator([prep.for_trainer[0]]), res.device)
    if cfg.trainer.gradient_checkpointing:  # as the Trainer will train it (it enables this at train())
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": cfg.trainer.checkpoint_reentrant})
        if getattr(model, "enable_input_require_grads", None):
            model.enable_input_require_grads()
    probed = probe_model(model, batch, res.amp)
    from ..model.memory_model import capacity_gb

    asked = cfg.batch.grad_accum
    choice = choose(probed, asked, cfg.data.max_length, capacity_gb(cfg, res.device))
    line = describe(choice, asked)
    print(line, flush=True)
    if choice.tokens != cfg.batch.tokens:
        with open_dict(cfg):
            cfg.batch.tokens = choice.tokens
        prep = prepare.rebudget(cfg, prep)
        if cfg.trainer.torch_compile:
            torch.compiler.reset()
    with open_dict(cfg):
        cfg.batch.grad_accum = choice.grad_accum
    return prep, {**choice.to_dict(), "line": line}


# -- the probe (GPU) --------------------------------------------------------------------------------------
class CudaKernelTimer:
    """Times a piece of GPU work without the host's launch gaps: a GPU sleep longer than the launching goes
    first, so every kernel is queued before the first one runs, and events around the work time the kernels."""

    def __init__(self):
        import torch

        self.torch = torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        torch.cuda.synchronize()
        self.cycles_per_s = 10_000_000 / (start.elapsed_time(end) / 1e3)

    def time(self, work: Callable[[], None], lead_s: float) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(self.cycles_per_s * lead_s))
        start.record()
        work()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3


def probe_step(step: Callable[[], None], sync: Callable[[], None], kernel_timer, repeats: int = 3,
               clock=time.perf_counter) -> tuple[float, float]:
    """(host_s, gpu_s) of `step` (a forward and backward; the caller clears the gradients): first one untimed
    (a compile at this shape), then `repeats` host-timed and `repeats` kernel-timed. Host launches ahead of the
    kernels by at most a queue's depth, so the sleep ahead of them is twice the host's time plus 20 ms."""
    step()
    sync()
    host = []
    for _ in range(repeats):
        t = clock()
        step()
        host.append(clock() - t)
        sync()
    host_s = median(host)
    gpu_s = median(kernel_timer.time(step, lead_s=2 * host_s + 0.02) for _ in range(repeats))
    return host_s, gpu_s


def probe_model(model, batch: dict, amp: str) -> Probe:
    """probe_step on the run's model at `batch` (a REFERENCE-token pack), leaving it as it was: gradients
    cleared, the random state restored (dropout draws from it), the peak-memory counter reset."""
    import torch

    from ..model.speed_model import _forward_backward

    cpu_rng, cuda_rng = torch.get_rng_state(), torch.cuda.get_rng_state_all()
    model.train()
    trainable = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)

    def step():
        _forward_backward(model, batch, amp, "cuda")
        model.zero_grad(set_to_none=True)

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    try:
        host_s, gpu_s = probe_step(step, torch.cuda.synchronize, CudaKernelTimer())
        peak = torch.cuda.max_memory_allocated()
    finally:
        model.zero_grad(set_to_none=True)
        torch.set_rng_state(cpu_rng)
        torch.cuda.set_rng_state_all(cuda_rng)
        torch.cuda.reset_peak_memory_stats()
    return Probe(tokens=int(batch["input_ids"].numel()), host_s=host_s, gpu_s=gpu_s, base_bytes=base,
                 peak_bytes=peak, trainable_bytes=trainable)
