"""Attention kernels at Qwen3-4B's shapes on a CUDA GPU: which one to run, before a whole training run says so.

Forward + backward of one layer's attention (32 query heads, 8 key/value heads, head_dim 128, causal, bf16), timed
with CUDA events after warm-up (median of --reps), in the two layouts trainsweep trains:

- packed: --tokens tokens in documents of the classifier's lengths (~N(211, 30) in [40, 287]) laid end to end,
  attended within each document from cumulative lengths (torch.nn.attention.varlen): its flash kernel (GQA in the
  kernel), its cuDNN kernel (K/V repeated to 32 heads: cuDNN's varlen path takes no GQA), and FlashAttention-3's
  varlen kernel where flash_attn_interface imports;
- padded: --rows rows of --length tokens through sdpa (causal, GQA), once per sdpa backend: flash, cuDNN,
  memory-efficient.

A kernel this torch or card doesn't have is printed as skipped with the reason, never dropped. Each row also
gives the largest relative difference of its output from the first kernel of its layout.

    python -m benchmarks.attention_bench                 # packed 8k and padded 32 x 320; seconds on a GPU
    python -m benchmarks.attention_bench --tokens 2048

Prints a table; with OUT set, also one JSON line per kernel to $OUT/attention_bench.jsonl.
"""
import argparse
import inspect
import json
import os
import random

import torch

from benchmarks.fused_lora_bench import rel, timed

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
BF16 = torch.bfloat16


def doc_lengths(tokens: int, seed: int = 0) -> list[int]:
    """Document lengths as the classifier's rows, filling exactly `tokens` (the last one cut to fit)."""
    rng = random.Random(seed)
    lengths = []
    while sum(lengths) < tokens:
        lengths.append(max(40, min(287, round(rng.gauss(211, 30)))))
    lengths[-1] -= sum(lengths) - tokens
    return [n for n in lengths if n > 0]


def packed_kernels() -> dict:
    """name -> fn(q, k, v, cu, max_len) for [T, H, D] inputs, or a reason string where it can't run."""
    out = {}
    try:
        from torch.nn.attention import varlen
    except ImportError as exc:
        return {"varlen flash": f"torch.nn.attention.varlen: {exc}"}
    from src.model.packed import _varlen_kwargs

    kw = _varlen_kwargs()

    def flash(q, k, v, cu, m):
        return varlen.varlen_attn(q, k, v, cu, cu, m, m, **kw)

    out["varlen flash"] = flash
    if not hasattr(varlen, "_should_use_cudnn"):
        out["varlen cuDNN"] = "this torch's varlen module has no cuDNN switch"
    else:
        # The public varlen_attn spells causal as a window, which its cuDNN branch refuses: call the private op
        # with is_causal and no window, as far as this release's signature has them.
        params = inspect.signature(getattr(varlen._varlen_attn, "_init_fn", varlen._varlen_attn)).parameters
        extra = {key: val for key, val in (("is_causal", True), ("window_size", [-1, -1]), ("enable_gqa", False))
                 if key in params}

        def cudnn(q, k, v, cu, m):
            reps = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(reps, dim=1), v.repeat_interleave(reps, dim=1)
            return varlen._varlen_attn(q, k, v, cu, cu, m, m, **extra)[0]

        out["varlen cuDNN"] = cudnn
    try:
        import flash_attn_interface  # FlashAttention-3 (Hopper), built from the flash-attention repo's hopper/

        def fa3(q, k, v, cu, m):
            res = flash_attn_interface.flash_attn_varlen_func(q, k, v, cu, cu, m, m, causal=True)
            return res[0] if isinstance(res, tuple) else res

        out["FlashAttention-3 varlen"] = fa3
    except ImportError:
        out["FlashAttention-3 varlen"] = "flash_attn_interface is not installed"
    return out


class UseCudnn:
    """torch's varlen picks its kernel by _should_use_cudnn(device): True for the cuDNN runs only."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        from torch.nn.attention import varlen

        self.saved = getattr(varlen, "_should_use_cudnn", None)
        if self.on and self.saved is not None:
            varlen._should_use_cudnn = lambda device_index: True

    def __exit__(self, *exc):
        if self.saved is not None:
            from torch.nn.attention import varlen

            varlen._should_use_cudnn = self.saved


def longest_kernel(step) -> str:
    """The name of the kernel that took the most GPU time in one call: which implementation really ran."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_time_total > 0]
    return max(rows, key=lambda e: e.device_time_total).key[:90] if rows else "?"


def fwd_bwd(fn, *inputs):
    def step():
        out = fn(*inputs)
        out.backward(grad)
        return out

    grad = torch.randn_like(fn(*inputs))
    return step


def bench_packed(tokens: int, reps: int, write) -> None:
    lengths = doc_lengths(tokens)
    cu = torch.tensor([0] + [sum(lengths[: i + 1]) for i in range(len(lengths))], dtype=torch.int32, device="cuda")
    q = torch.randn(tokens, HEADS, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    k = torch.randn(tokens, KV_HEADS, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    v = torch.randn(tokens, KV_HEADS, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    print(f"\n== packed: {tokens} tokens in {len(lengths)} documents, fwd+bwd ms (median of {reps})")
    ref = None
    for name, fn in packed_kernels().items():
        if isinstance(fn, str):
            print(f"{name:<26} skipped: {fn}")
            write(layout="packed", kernel=name, tokens=tokens, skipped=fn)
            continue
        try:
            with UseCudnn(name == "varlen cuDNN"):
                out = fn(q, k, v, cu, max(lengths)).detach()
                step = fwd_bwd(fn, q, k, v, cu, max(lengths))
                t = timed(step, reps)
                kernel = longest_kernel(step)
        except Exception as exc:  # noqa: BLE001 - a kernel this build lacks is a row, not a crash
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            print(f"{name:<26} failed: {reason}")
            write(layout="packed", kernel=name, tokens=tokens, skipped=reason)
            continue
        ref = out if ref is None else ref
        diff = rel(out, ref)
        print(f"{name:<26} {t['ms']:8.3f} ms  (p10 {t['p10']:.3f}, p90 {t['p90']:.3f})  rel diff {diff:.1e}  {kernel}")
        write(layout="packed", kernel=name, tokens=tokens, documents=len(lengths), rel_diff=diff, ran=kernel, **t)


def bench_padded(rows: int, length: int, reps: int, write) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(rows, HEADS, length, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    k = torch.randn(rows, KV_HEADS, length, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    v = torch.randn(rows, KV_HEADS, length, HEAD_DIM, device="cuda", dtype=BF16, requires_grad=True)
    print(f"\n== padded: {rows} rows x {length} tokens through sdpa, fwd+bwd ms (median of {reps})")

    def sdpa(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    ref = None
    for name, backend in (("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa cuDNN", SDPBackend.CUDNN_ATTENTION),
                          ("sdpa memory-efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel([backend]):
                out = sdpa(q, k, v).detach()
                step = fwd_bwd(sdpa, q, k, v)
                t = timed(step, reps)
                kernel = longest_kernel(step)
        except Exception as exc:  # noqa: BLE001
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            print(f"{name:<26} failed: {reason}")
            write(layout="padded", kernel=name, rows=rows, length=length, skipped=reason)
            continue
        ref = out if ref is None else ref
        diff = rel(out, ref)
        print(f"{name:<26} {t['ms']:8.3f} ms  (p10 {t['p10']:.3f}, p90 {t['p90']:.3f})  rel diff {diff:.1e}  {kernel}")
        write(layout="padded", kernel=name, rows=rows, length=length, rel_diff=diff, ran=kernel, **t)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8192, help="packed tokens (packed_8k's budget)")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--length", type=int, default=320, help="padded length (the seed's max_length)")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("attention_bench times CUDA kernels: no GPU here")
    out = os.environ.get("OUT")
    sink = open(os.path.join(out, "attention_bench.jsonl"), "a") if out else None
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version()}
    print(info)

    def write(**row):
        if sink:
            sink.write(json.dumps({**info, **row}) + "\n")
            sink.flush()

    bench_packed(args.tokens, args.reps, write)
    bench_padded(args.rows, args.length, args.reps, write)


if __name__ == "__main__":
    main()
