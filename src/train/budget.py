"""`batch.tokens=auto`: the smallest token budget per micro-batch past which a larger one buys little.

A step of a packed micro-batch of B tokens costs the GPU a part that grows with B (the GEMMs, varlen attention
at the same sequence lengths) and a part that doesn't (the thousands of small kernels' tails and the gaps
between them, whose number is the same at any B), and costs the host about the same launches at any B. So
the step takes about max(host, fixed + per_token x B), and the share of it spent on the tokens' own work,
per_token x B / step, rises with B toward 1. One probe on the run's own built and compiled model measures it:

- at REFERENCE tokens and at twice that (where the memory allows; two shapes compiled, each kept for training):
  host_s, the time Python takes to launch a forward and backward (no sync inside, the median of a few; the
  smaller budget's is the host's own cost, see Probe.host_s), and
  gpu_s, the GPU's time for the same work launched behind a GPU sleep long enough that every launch is queued
  before the first kernel starts, so the events around it time the GPU without the host's gaps;
- the two gpu_s give fixed and per_token; with one point, fixed is taken as 0 (the cautious side).

The host's time in a step is the probe's times LOOP_MARGIN (the optimizer step, clipping, logging). The choice
is the smallest candidate whose predicted token share reaches BUSY and whose memory (the probe's peak, its
activations scaled to the budget, plus AdamW's two moments) fits under the capacity with the allocator's
margin; where none does, the largest that fits. Measured on an H200 (experiments/speed, h200_budget_call1):
the FP8 step at 8k took 0.221 s with 0.208 s of GPU time and 0.186 s of launches, and 16k ran 6.9% more
tokens/s: the gain is the fixed part amortised, not the host. Rows per optimizer step stay those of
REFERENCE x batch.grad_accum: a larger budget takes a smaller grad_accum, never below 1, and where it can't the
choice says how many more rows a step holds.

Without a GPU there is nothing to balance: packs of batch.size rows, as with batch.tokens unset.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass
from statistics import median
from typing import Callable, Optional

REFERENCE = 8192  # the probe's budget, and the rows per optimizer step auto keeps (experiment=fastest's until now)
CANDIDATES = (2048, 4096, 8192, 16384, 32768, 65536)
BUSY = 0.95  # the share of a step the chosen budget's token-proportional work is predicted to take
LOOP_MARGIN = 1.15  # the Trainer's host work per step over the probe's forward and backward (see the docstring)


@dataclass(frozen=True)
class Point:
    tokens: int
    host_s: float  # to launch a forward and backward
    gpu_s: float  # the GPU's time for it, without the host's gaps


@dataclass(frozen=True)
class Probe:
    """The probe's points (REFERENCE first), the bytes allocated before it and at its first point's peak, and the
    trainable parameters' bytes (AdamW's moments come later)."""
    points: tuple
    base_bytes: int = 0
    peak_bytes: int = 0
    trainable_bytes: int = 0

    @property
    def tokens(self) -> int:
        return self.points[0].tokens

    def line(self) -> tuple[float, float]:
        """(fixed_s, per_token_s) of the GPU's time per step: through two points, or through 0 with one."""
        one = self.points[0]
        if len(self.points) > 1:
            two = self.points[1]
            per_token = (two.gpu_s - one.gpu_s) / (two.tokens - one.tokens)
            if per_token > 0 and one.gpu_s - per_token * one.tokens >= 0:
                return one.gpu_s - per_token * one.tokens, per_token
        return 0.0, one.gpu_s / one.tokens

    def host_s(self) -> float:
        """The host's time in a step: the probe's fastest launch (a larger budget's launch took longer on an H200,
        334 against 184 ms at 16k and 8k, as the host waited on a full queue: the GPU's pace, not the host's)."""
        return min(p.host_s for p in self.points) * LOOP_MARGIN

    def step_s_at(self, tokens: int) -> float:
        fixed, per_token = self.line()
        return max(self.host_s(), fixed + per_token * tokens)

    def share_at(self, tokens: int) -> float:
        """The predicted share of a step at `tokens` spent on work that grows with the tokens."""
        return self.line()[1] * tokens / self.step_s_at(tokens)

    def memory_gb_at(self, tokens: int) -> float:
        """Peak allocated at `tokens`: what was there before, AdamW's two moments, and the probe's activations and
        gradients scaled to the budget (gradients don't grow with it: scaled, they make the figure cautious)."""
        grown = max(0, self.peak_bytes - self.base_bytes) * tokens / self.tokens
        return (self.base_bytes + 2 * self.trainable_bytes + grown) / 2**30

    def fits(self, tokens: int, capacity_gb: Optional[float]) -> bool:
        from ..model.memory_model import RESERVED_OVER_ALLOCATED  # the allocator's margin over the peak it hands out

        return capacity_gb is None or self.memory_gb_at(tokens) * RESERVED_OVER_ALLOCATED <= capacity_gb


@dataclass(frozen=True)
class Choice:
    tokens: Optional[int]  # None: packs of batch.size rows (no GPU)
    grad_accum: int
    reason: str
    predicted_share: Optional[float] = None  # of a step, the work that grows with the tokens
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
    usable = [c for c in candidates if c >= longest] or [longest]
    fits = [c for c in usable if probe.fits(c, capacity_gb)]
    if not fits:
        tokens, why = usable[0], (f"no candidate fits {capacity_gb:.0f} GB with the allocator's margin; the "
                                  "smallest that holds the longest sequence")
    else:
        enough = [c for c in fits if probe.share_at(c) >= BUSY]
        if enough:
            tokens, why = enough[0], f"the smallest budget whose tokens' own work is predicted >= {BUSY:.0%} of a step"
        else:
            tokens, why = fits[-1], (f"no budget that fits reaches {BUSY:.0%}: the largest that fits")
    step_tokens = REFERENCE * grad_accum
    accum = max(1, round(step_tokens / tokens))
    fixed, per_token = probe.line()
    measured = "; ".join(f"{p.tokens:,} tokens: {p.gpu_s * 1e3:.0f} ms GPU, {p.host_s * 1e3:.0f} ms to launch"
                         for p in probe.points)
    reason = (f"{why}: probed {measured}; so a step is max({probe.host_s() * 1e3:.0f} ms host (x{LOOP_MARGIN} for the "
              f"loop), {fixed * 1e3:.0f} ms + {per_token * 1e6:.1f} us/token), and {tokens:,} tokens predict "
              f"{probe.share_at(tokens):.0%} and {probe.memory_gb_at(tokens):.1f} GB")
    return Choice(tokens=tokens, grad_accum=accum, reason=reason, predicted_share=probe.share_at(tokens),
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
    """Probe the built model on a pack of the provisional budget and one of twice it (where that fits), choose,
    and set batch.tokens and batch.grad_accum: (prep packed to the choice, the report's record of it). Both
    probed shapes stay compiled (each static: automatic dynamic shapes are off while probing, as a dynamic layer
    runs slower than a static one); a choice of another shape starts compile afresh for the same reason."""
    import copy

    import torch
    from omegaconf import open_dict

    from ..data import prepare
    from ..data.collate import to_device
    from ..model.memory_model import capacity_gb

    def first_pack(p):
        return to_device(p.collator([p.for_trainer[0]]), res.device)

    capacity = capacity_gb(cfg, res.device)

    def twice(probe: Probe):
        if not probe.fits(2 * probe.tokens, capacity):
            return None
        bigger = copy.deepcopy(cfg)
        with open_dict(bigger):
            bigger.batch.tokens = 2 * probe.tokens
        return first_pack(prepare.rebudget(bigger, prep))

    if cfg.trainer.gradient_checkpointing:  # as the Trainer will train it (it enables this at train())
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": cfg.trainer.checkpoint_reentrant})
        if getattr(model, "enable_input_require_grads", None):
            model.enable_input_require_grads()
    probed = probe_model(model, first_pack(prep), res.amp, twice)
    asked = cfg.batch.grad_accum
    choice = choose(probed, asked, cfg.data.max_length, capacity)
    line = describe(choice, asked)
    print(line, flush=True)
    if choice.tokens != cfg.batch.tokens:
        with open_dict(cfg):
            cfg.batch.tokens = choice.tokens
        prep = prepare.rebudget(cfg, prep)
        if cfg.trainer.torch_compile and choice.tokens not in [p.tokens for p in probed.points]:
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


def probe_model(model, batch: dict, amp: str, second: Callable[[Probe], Optional[dict]] = lambda probe: None) -> Probe:
    """probe_step on the run's model at `batch`, then at the batch `second` makes from that first Probe (None:
    one point), leaving the model as it was: gradients cleared, the random state restored (dropout draws from
    it), the peak-memory counter reset. Each shape compiles static (see choose_for_run)."""
    import torch

    from ..model.memory_model import forward_backward as _forward_backward

    cpu_rng, cuda_rng = torch.get_rng_state(), torch.cuda.get_rng_state_all()
    model.train()
    trainable = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    timer = CudaKernelTimer()

    def point(inputs: dict) -> Point:
        def step():
            _forward_backward(model, inputs, amp, "cuda")
            model.zero_grad(set_to_none=True)

        host_s, gpu_s = probe_step(step, torch.cuda.synchronize, timer)
        return Point(int(inputs["input_ids"].numel()), host_s, gpu_s)

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    try:
        with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
            probe = Probe(points=(point(batch),), base_bytes=base, peak_bytes=torch.cuda.max_memory_allocated(),
                          trainable_bytes=trainable)
            bigger = second(probe)
            if bigger is not None:
                probe = dataclasses.replace(probe, points=(*probe.points, point(bigger)))
    finally:
        model.zero_grad(set_to_none=True)
        torch.set_rng_state(cpu_rng)
        torch.cuda.set_rng_state_all(cuda_rng)
        torch.cuda.reset_peak_memory_stats()
    return probe
