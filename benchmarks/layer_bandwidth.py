"""Where one compiled Qwen3-4B decoder layer's time goes, kernel by kernel, beside the bytes each kernel must move:
what fusing inductor's kernels further, or LoRA's GEMMs, could buy the bf16 step (issue 53 G2). On a CUDA GPU.

One decoder layer at Qwen3-4B's width, LoRA r16 on every linear (peft, bf16 adapters, as the bf16 reference),
[1, --tokens] tokens, forward + backward, the layer compiled as compile_regions does:

1. copy: the card's copy bandwidth, a 1 GiB device-to-device copy (bytes read + written per second): what a
   memory-bound kernel can reach on this card;
2. layer: the step's time (CUDA events) and its kernels under torch.profiler, by kind and the costliest by name
   (the runner's own kernel classes, src/measure/kernels.py);
3. inductor: each Triton kernel inductor generated, from a second compile in inductor's profile_bandwidth mode:
   its time alone (inductor's benchmark), the bytes inductor counts it reading and writing, its GB/s. That mode
   benchmarks each kernel instead of running it, so its step computes nothing usable: it is only read for these.
   On torch 2.11 (H200, calls 2-3) only the backward graph's kernels showed in inductor's record; why the
   forward's did not is not traced (section 2's profile has them, by name and time). Since then the section
   compiles with the mode set for the whole section and the caches off, not yet run on a GPU;
4. lora: LoRA's rank-r GEMMs of the layer at its shapes, each timed alone, beside the least bytes it must move.

    python -m benchmarks.layer_bandwidth                 # ~1 minute on an H200, compiles included
    python -m benchmarks.layer_bandwidth --fp8           # the same layer under experiment=fastest's FP8 + fused LoRA
    python -m benchmarks.layer_bandwidth --fp8 --inductor coordinate_descent_tuning=true   # under inductor's options

Prints a table per section; with OUT set, also one JSON line per row to $OUT/layer_bandwidth.jsonl
(experiments/speed/tables_bandwidth.py reads it).
"""
import argparse
import json
import os
import statistics
import sys

import torch

HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIM = 2560, 9728, 32, 8, 128
RANK = 16
BF16 = torch.bfloat16
# (projection, input width, output width) of a Qwen3-4B decoder layer
PROJECTIONS = (("q_proj", HIDDEN, HEADS * HEAD_DIM), ("k_proj", HIDDEN, KV_HEADS * HEAD_DIM),
               ("v_proj", HIDDEN, KV_HEADS * HEAD_DIM), ("o_proj", HEADS * HEAD_DIM, HIDDEN),
               ("gate_proj", HIDDEN, INTERMEDIATE), ("up_proj", HIDDEN, INTERMEDIATE), ("down_proj", INTERMEDIATE, HIDDEN))


class Sink:
    def __init__(self, **every_row):
        out = os.environ.get("OUT")
        self.path = os.path.join(out, "layer_bandwidth.jsonl") if out else None
        self.every_row = every_row

    def write(self, **row):
        row.update(self.every_row, call=os.environ.get("CALL_ID"))  # every row names its device call (experiments/figures.py)
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")
        return row


def cuda_ms(fn, reps: int, warmup: int = 3, inner: int = 1) -> float:
    """Median milliseconds of one `fn` call over `reps` timings of `inner` calls each, CUDA events around each
    timing. A kernel of tens of microseconds needs inner > 1: timed one by one, the host's launch between the
    events is what the events measure (the GPU waits for it), not the kernel."""
    for _ in range(warmup):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    torch.cuda.synchronize()
    if inner > 1:
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU work ahead of the timings: the host queues them meanwhile
    for start, end in events:
        start.record()
        for _ in range(inner):
            fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events) / inner


def copy_bandwidth(sink: Sink, reps: int) -> float:
    src = torch.empty(2 ** 29, dtype=BF16, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    ms = cuda_ms(lambda: dst.copy_(src), reps)
    gbps = 2 * src.numel() * src.element_size() / 1e9 / (ms / 1e3)
    print(f"== copy: 1 GiB device-to-device {ms:.3f} ms, {gbps:,.0f} GB/s (read + written)")
    sink.write(section="copy", ms=ms, gb_per_s=gbps)
    return gbps


def build_layer(tokens: int, fp8: bool = False):
    """A one-layer Qwen3 at Qwen3-4B's width under peft LoRA r16 on every linear (bf16), its decoder layer as a
    function of the hidden states, and the step: forward + backward from a fixed output gradient. fp8: the frozen
    base's linears in FP8 (rowwise) and the fused LoRA linear over them, as experiment=fastest runs."""
    from peft import LoraConfig, get_peft_model
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers import AutoModelForCausalLM, Qwen3Config

    torch.manual_seed(0)
    conf = Qwen3Config(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=1, num_attention_heads=HEADS,
                       num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, vocab_size=1024)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(conf, dtype=BF16, attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=2 * RANK, target_modules="all-linear", lora_dropout=0.0,
                                             task_type="CAUSAL_LM"), autocast_adapter_dtype=False)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # B starts at zero: nonzero, so every adapter gradient is real work
            torch.nn.init.normal_(p, std=0.02)
    if fp8:
        from src.model.fp8 import to_fp8
        from src.model.fused_lora import fuse_lora

        to_fp8(model, scaling="rowwise")
        fuse_lora(model)
    backbone = model.base_model.model.model
    layer = backbone.layers[0]
    hidden = torch.randn(1, tokens, HIDDEN, device="cuda", dtype=BF16, requires_grad=True)  # as compile_one_graph
    dy = torch.randn_like(hidden)
    positions = torch.arange(tokens, device="cuda")[None]
    rope = backbone.rotary_emb(hidden, positions)
    params = [p for p in model.parameters() if p.requires_grad]

    def step():
        hidden.grad = None
        for p in params:
            p.grad = None
        # flash, the family of the runner's varlen kernel for packed rows (sdpa would pick cuDNN for one causal row)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = layer(hidden, position_embeddings=rope, attention_mask=None, position_ids=positions)
            (out[0] if isinstance(out, tuple) else out).backward(dy)

    return layer, step


def layer_kernels(sink: Sink, layer, step, reps: int, options: dict) -> dict:
    from src.measure.timing import BusyProfiler

    layer.compile(options=options or None)  # as compile_regions does: inductor, default mode
    ms = cuda_ms(step, reps)
    prof = BusyProfiler()
    prof.start()
    for _ in range(reps):
        step()
    prof.stop(steps=reps)
    kinds_ms = {kind: share * ms for kind, share in (prof.kinds or {}).items() if share}
    print(f"\n== layer: fwd+bwd {ms:.3f} ms, GPU busy {prof.fraction:.0%}; by kind (ms): "
          + ", ".join(f"{k} {v:.3f}" for k, v in sorted(kinds_ms.items(), key=lambda kv: -kv[1])))
    for row in prof.top or []:
        print(f"  {row['ms']:8.3f} ms {row['calls']:5.1f}x  {row['kind']:<11} {row['name'][:100]}")
    return sink.write(section="layer", ms=ms, busy=prof.fraction, kinds_ms=kinds_ms, top=prof.top)


def inductor_kernels(sink: Sink, layer, step, copy_gbps: float, options: dict) -> list[dict]:
    """Each Triton kernel of the compiled layer: inductor's benchmark of it alone, its bytes, its GB/s."""
    import torch._inductor.config as inductor_config
    from torch._inductor.runtime import triton_heuristics

    torch._dynamo.reset()
    layer.compile(options=options or None)
    # For the whole section, caches off: calls 2-3 passed profile_bandwidth as a compile option, and only the
    # backward's kernels showed (a guess, not traced: the forward came from the cache the layer section filled)
    with inductor_config.patch(profile_bandwidth=True, force_disable_caches=True), \
            torch.compiler.config.patch(force_disable_caches=True):
        step()  # compiles; each kernel is benchmarked at its first call, with the step's own arguments
        triton_heuristics.collected_calls.clear()
        step()  # every kernel call of one step, from what the first step benchmarked
    rows = []
    for ms, gb, gbps, name in triton_heuristics.collected_calls:
        rows.append(sink.write(section="inductor", name=name, ms=ms, gb=gb, gb_per_s=gbps, of_copy=gbps / copy_gbps))
    total_ms, total_gb = sum(r["ms"] for r in rows), sum(r["gb"] for r in rows)
    print(f"\n== inductor: {len(rows)} kernel calls, {total_ms:.3f} ms alone, {total_gb:.2f} GB; at the copy bandwidth "
          f"{total_gb / copy_gbps * 1e3:.3f} ms")
    for r in sorted(rows, key=lambda r: -r["ms"])[:20]:
        print(f"  {r['ms']:7.3f} ms {r['gb']:6.3f} GB {r['gb_per_s']:7.0f} GB/s ({r['of_copy']:4.0%} of copy)  {r['name'][:90]}")
    torch._dynamo.reset()
    return rows


def lora_gemms(sink: Sink, tokens: int, reps: int, copy_gbps: float) -> list[dict]:
    """LoRA's six rank-r GEMMs per linear (what peft's modules and autograd run, or the fused linear), alone."""
    m, r, e = tokens, RANK, 2  # bf16 bytes
    rows = []
    for proj, k, n in PROJECTIONS:
        x, dy = torch.randn(m, k, device="cuda", dtype=BF16), torch.randn(m, n, device="cuda", dtype=BF16)
        a, b = torch.randn(r, k, device="cuda", dtype=BF16), torch.randn(n, r, device="cuda", dtype=BF16)
        xa, g, dx = x @ a.t(), dy @ b, torch.randn(m, k, device="cuda", dtype=BF16)
        ops = {  # op: (call, least bytes read + written)
            "xa = x A^T": (lambda: x @ a.t(), e * (m * k + r * k + m * r)),
            "y_lora = xa B^T": (lambda: xa @ b.t(), e * (m * r + n * r + m * n)),
            "g = dY B": (lambda: dy @ b, e * (m * n + n * r + m * r)),
            "dx += g A": (lambda: dx.addmm_(g, a), e * (m * r + r * k + 2 * m * k)),
            "dA = g^T x": (lambda: g.t() @ x, e * (m * r + m * k + r * k)),
            "dB = dY^T xa": (lambda: dy.t() @ xa, e * (m * n + m * r + n * r)),
        }
        for op, (call, nbytes) in ops.items():
            ms = cuda_ms(call, reps, inner=20)
            gbps = nbytes / 1e9 / (ms / 1e3)
            rows.append(sink.write(section="lora", proj=proj, op=op, ms=ms, gb=nbytes / 1e9, gb_per_s=gbps,
                                   of_copy=gbps / copy_gbps))
    total = sum(r["ms"] for r in rows)
    by_op = {op: sum(r["ms"] for r in rows if r["op"] == op) for op in dict.fromkeys(r["op"] for r in rows)}
    print(f"\n== lora: {len(rows)} rank-{RANK} GEMMs per layer step, {total:.3f} ms alone; by op (ms): "
          + ", ".join(f"{op} {v:.3f}" for op, v in by_op.items()))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--inductor", nargs="*", default=[], metavar="OPTION=VALUE",
                    help="torch._inductor.config options for both compiles, as trainer.inductor takes them")
    ap.add_argument("--fp8", action="store_true", help="the base's linears in FP8 with the fused LoRA linear "
                    "(experiment=fastest's layer); LoRA's GEMMs, bf16 either way, are then not timed again")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("layer_bandwidth needs a CUDA GPU")
    import peft
    import transformers

    options = {key: json.loads(value) for key, _, value in (o.partition("=") for o in args.inductor)}  # true -> True
    sink = Sink(precision="fp8" if args.fp8 else "bf16", **({"inductor": options} if options else {}))
    print(sink.write(section="meta", device=torch.cuda.get_device_name(), torch=torch.__version__,
                     transformers=transformers.__version__, peft=peft.__version__, tokens=args.tokens, rank=RANK,
                     fp8=args.fp8))
    copy_gbps = copy_bandwidth(sink, args.reps)
    layer, step = build_layer(args.tokens, args.fp8)
    sections = ((layer_kernels, (sink, layer, step, args.reps, options)),
                (inductor_kernels, (sink, layer, step, copy_gbps, options)),
                *(() if args.fp8 else ((lora_gemms, (sink, args.tokens, args.reps, copy_gbps)),)))
    for section, section_args in sections:  # one section failing leaves the others' rows
        try:
            section(*section_args)
        except Exception as exc:  # noqa: BLE001 - said, and written, so a missing section reads as failed, not absent
            print(f"\n== {section.__name__} failed: {type(exc).__name__}: {exc}")
            sink.write(section=section.__name__, failed=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
