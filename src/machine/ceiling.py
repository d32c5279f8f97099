"""This card's own GEMM ceiling at a model's shapes: how fast the base matmuls of one training step can go here,
measured, so a report can say "x% of this card's ceiling for this model" beside MFU.

MFU divides by the datasheet's dense peak (989 TFLOP/s bf16 on an H100), which no real GEMM reaches: at
Qwen3-4B's shapes and ~8k-token micro-batches cuBLAS runs 600-800 TFLOP/s. The ceiling here times the run's
own frozen matmuls (forward x @ W^T and input gradient dY @ W, plus the weight gradient dY^T @ x for trained
weights; in FP8 where the run converted them) at the run's tokens per micro-batch, with CUDA events on random data (speed does not depend on the
values), and turns them into tokens/s: the rate a step made of nothing but those GEMMs would reach. Everything
else a step does (LoRA's rank-r GEMMs, attention, norms, activations, the optimizer, host gaps) sits between
that ceiling and the measured rate.

Cost: a few seconds once per card, shape set, dtype and torch release; cached under CACHE/ceiling. It runs
before training, outside any timed window, and reuses one set of buffers (no per-shape allocations left
behind beyond those).
"""
from __future__ import annotations

import hashlib
import json
import logging

import torch

from ..base import files as disk  # disk.CACHE read when used

log = logging.getLogger(__name__)


def _time_ms(fn, warmup: int = 3, reps: int = 10) -> float:
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def _fp8_ms(xs, ys, ws) -> float:
    """Forward and input gradient as FP8 runs them (src/model/fp8.py): e4m3 operands, rowwise scales, the weight
    quantised once in both layouts."""
    e4m3 = torch.float8_e4m3fn
    x8, y8, w8, wt8 = xs.to(e4m3), ys.to(e4m3), ws.to(e4m3), ws.t().contiguous().to(e4m3)
    ones = lambda rows, cols: torch.ones(rows, cols, device=xs.device)  # noqa: E731
    sx, sy, sw, swt = ones(len(xs), 1), ones(len(ys), 1), ones(1, ws.shape[0]), ones(1, ws.shape[1])
    fwd = lambda: torch._scaled_mm(x8, w8.t(), sx, sw, out_dtype=torch.bfloat16, use_fast_accum=True)  # noqa: E731
    dgrad = lambda: torch._scaled_mm(y8, wt8.t(), sy, swt, out_dtype=torch.bfloat16)  # noqa: E731
    return _time_ms(fwd) + _time_ms(dgrad)


def measure(shapes: list[tuple[int, int, int, bool, bool]], tokens: int, dtype: torch.dtype = torch.bfloat16) -> dict:
    """shapes: (in_features, out_features, count, trained, fp8) of the step's matmuls; tokens: rows per micro-batch.
    Returns the FLOP-weighted TFLOP/s the card reached and the tokens/s of a step made of those GEMMs."""
    distinct = sorted({(k, n, trained, fp8) for k, n, _, trained, fp8 in shapes})
    # One flat buffer per operand, each shape a contiguous view of its start: no allocation per shape
    x = torch.randn(tokens * max(s[0] for s in distinct), device="cuda", dtype=dtype)
    dy = torch.randn(tokens * max(s[1] for s in distinct), device="cuda", dtype=dtype)
    w = torch.randn(max(s[0] * s[1] for s in distinct), device="cuda", dtype=dtype) * 0.02
    per_shape = {}
    for k, n, trained, fp8 in distinct:
        xs, ys, ws = x[:tokens * k].view(tokens, k), dy[:tokens * n].view(tokens, n), w[:n * k].view(n, k)
        if fp8:
            ms = _fp8_ms(xs, ys, ws)
        else:
            ms = _time_ms(lambda: torch.nn.functional.linear(xs, ws)) + _time_ms(lambda: ys @ ws)
        if trained:
            ms += _time_ms(lambda: ys.t() @ xs)
        per_shape[(k, n, trained, fp8)] = ms
    step_ms = sum(count * per_shape[(k, n, trained, fp8)] for k, n, count, trained, fp8 in shapes)
    flops = sum(count * (6 if trained else 4) * tokens * k * n for k, n, count, trained, _ in shapes)
    return {"tokens_per_s": tokens / (step_ms / 1e3), "tflops": flops / (step_ms / 1e3) / 1e12, "tokens": tokens,
            "per_shape_tflops": {f"{k}x{n}{' trained' if t else ''}{' fp8' if f8 else ''}":
                                 round((6 if t else 4) * tokens * k * n / ms / 1e9, 1)
                                 for (k, n, t, f8), ms in per_shape.items()}}


def cached(shapes: list[tuple[int, int, int, bool, bool]], tokens: int, dtype: torch.dtype = torch.bfloat16) -> dict:
    """measure(), remembered per card, torch release, shapes, tokens and dtype."""
    card = torch.cuda.get_device_name()
    key = json.dumps([card, torch.__version__, sorted(shapes), tokens, str(dtype)])
    result, path = disk.remembered("ceiling", hashlib.sha1(key.encode()).hexdigest()[:16],
                                   lambda: {**measure(shapes, tokens, dtype), "card": card})
    return {**result, "cached": path is not None}
