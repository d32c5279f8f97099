"""What a profiled GPU kernel is, from its name alone (the profiler gives names and times, no shapes): its kind
(GEMM, attention, elementwise, ...), the attention implementation it belongs to, each kind's share of a profiled
wall time, and the costliest kernels by name. BusyProfiler (src/measure/timing.py) reads them off its profile."""
from __future__ import annotations

from ..base import stats

# What a kernel is, from its name (first match wins: flash attention kernels also carry "sm90"). cuBLAS/CUTLASS
# names say nothing of the shapes, so the base GEMMs and LoRA's rank-r ones fall in one "gemm" group; the report
# sets it beside the time the base GEMMs alone take at this card's measured ceiling (src/machine/ceiling.py).
KERNEL_KINDS = (("attention", ("flash", "fmha", "attn", "sdpa")),
                ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "gemv", "scaled_mm", "matmul", "cublas", "wgmma")),
                ("optimizer", ("multi_tensor", "foreach", "adam")),
                ("communication", ("nccl",)),
                ("elementwise", ("triton", "elementwise", "reduce", "vectorized", "norm", "softmax", "index",
                                 "fill", "unrolled")),
                ("copy", ("memcpy", "memset", "copy", "cat")))


# Inductor's own kernels, by the prefix it names them with, before any name search: its fused pointwise and
# reduction kernels list the ops they fused, and one fused around FP8's quantisation (`..._scaled_mm_...amax...`) or
# flash attention's backward (`..._flash_attention_backward_add_transpose...`) is still an elementwise kernel, not a
# GEMM or attention (on an H200 about a fifth of an FP8 layer's "GEMM" time was such kernels: benchmarks/layer_bandwidth.py).
# triton_tem_ kernels are its matmul templates.
INDUCTOR_KINDS = (("triton_tem_", "gemm"), ("triton_", "elementwise"))


def kernel_kind(name: str) -> str:
    low = name.lower()
    inductor = next((kind for prefix, kind in INDUCTOR_KINDS if low.startswith(prefix)), None)
    return inductor or next((kind for kind, keys in KERNEL_KINDS if any(k in low for k in keys)), "other")


# Which implementation an attention kernel belongs to, from its name (first match wins: cuDNN's names carry "flash"
# too). sdpa picks its kernel per call, so the profile, not the config, says which ran.
ATTENTION_FAMILIES = (("cuDNN", ("cudnn",)), ("FlashAttention-3", ("flash_attn_3", "flashattnfwdsm90", "flashattnbwdsm90")),
                      ("flash", ("pytorch_flash", "flash_fwd", "flash_bwd", "flash_attn")),
                      ("memory-efficient", ("fmha", "efficient", "cutlass")))


def attention_family(name: str) -> str:
    low = name.lower()
    return next((fam for fam, keys in ATTENTION_FAMILIES if any(k in low for k in keys)), "other")


def kernel_shares(kernels: list[tuple[int, int, str, str]], wall: float) -> tuple[dict, dict]:
    """The share of `wall` seconds each kind of kernel ran, and each attention implementation, from (start ns,
    end ns, kind, name) rows; overlapping kernels of one kind count once."""
    def share(rows):
        return stats.union_seconds([(s, e) for s, e, *_ in rows]) / wall

    kinds = {kind: share([r for r in kernels if r[2] == kind]) for kind, _ in (*KERNEL_KINDS, ("other", ()))}
    attention = [r for r in kernels if r[2] == "attention"]
    families = sorted({attention_family(r[3]) for r in attention})
    return kinds, {fam: share([r for r in attention if attention_family(r[3]) == fam]) for fam in families}


def top_kernels(kernels: list[tuple[int, int, str, str]], steps: int, top: int = 15) -> list[dict]:
    """The kernels that took the most GPU time, per profiled step, costliest first: which elementwise kernels
    inductor left, which GEMMs dominate. Names are cut to 160 characters (templated ones run to thousands)."""
    by_name: dict[str, list] = {}
    for start, end, kind, name in kernels:
        row = by_name.setdefault(name, [kind, 0, 0])
        row[1] += end - start
        row[2] += 1
    rows = sorted(by_name.items(), key=lambda item: item[1][1], reverse=True)[:top]
    return [{"name": name[:160], "kind": kind, "ms": round(ns / 1e6 / steps, 4), "calls": round(n / steps, 1)}
            for name, (kind, ns, n) in rows]
