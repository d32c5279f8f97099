"""FP8 against bf16 for the frozen base matmuls of a LoRA step (src/model/fp8.py), on a GPU with fp8 tensor cores.

    python -m benchmarks.fp8_bench              # a table; with OUT set, also $OUT/fp8_bench.jsonl (one JSON a row)

1. linear: every Qwen3-4B linear shape (q 2560->4096, k/v 2560->1024, o 4096->2560, gate/up 2560->9728,
   down 9728->2560) at 8192 and 2048 tokens: a frozen bf16 nn.Linear's forward and input gradient against
   FrozenFp8Linear's, tensorwise and rowwise, eager and torch.compile'd. TFLOP/s counts 4 * M * in * out (no weight
   gradient); speedup is against bf16 in the same mode; rel_y and rel_dx are ||fp8 - bf16|| / ||bf16||.
2. grad_dtype: the input gradient's error with dY in e4m3 or e5m2, for each scaling, on gaussian dY and on dY whose
   token rows spread over 3 or 6 decades, as real gradients do (prompt tokens get little, masked ones none):
   rel_dx_row_p99 is the 99th percentile of the tokens' own errors, where a flushed token shows as 1.
3. layer: one Qwen3-4B decoder layer (random init, bf16, sdpa) under peft LoRA r16 on all linears, compiled with
   layer.compile() as trainsweep compiles, forward and backward (input and LoRA gradients) at [1, 8192] tokens:
   the bf16 base against the fp8 base, tensorwise and rowwise. peak_gb is the step's memory over the model's.

Times are medians of CUDA-event timings after warm-up: `ms` of the step replayed as a CUDA graph (the GPU's time,
which TFLOP/s and speedup use), `ms_launched` of it launched from Python (host overhead included, which a lone small
matmul cannot hide and a whole model step mostly does). Takes about 2-3 minutes on an H100, most of it compiling.
"""
import argparse
import copy
import json
import os
import statistics
import sys

import torch
from torch import nn

from src.model.fp8 import E4M3, E5M2, FrozenFp8Linear, fp8_supported, to_fp8

SHAPES = {"q": (2560, 4096), "k/v": (2560, 1024), "o": (4096, 2560), "gate/up": (2560, 9728), "down": (9728, 2560)}
TOKENS = (8192, 2048)
SCALINGS = ("tensorwise", "rowwise")


def _median_ms(run, reps: int) -> float:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        run()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def median_ms(step, reps: int, warmup: int) -> tuple[float, float]:
    """(GPU ms, launched ms): medians of CUDA-event timings of `step` replayed as a CUDA graph, the GPU's own time
    (what a step pays whose host runs ahead, as a real layer's does), and launched from Python, host overhead and
    all (a lone small matmul cannot hide the dispatch of a compiled graph and its autograd)."""
    side = torch.cuda.Stream()  # warm up (compile, cuBLAS handles) off the capture stream, as CUDA graphs ask
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)
    launched = _median_ms(step, reps)
    graph = torch.cuda.CUDAGraph()
    # thread_local: the backward runs in autograd's own thread, whose stream bookkeeping a global capture refuses
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        step()
    replayed = _median_ms(graph.replay, reps)
    del graph
    return replayed, launched


def rel(a, b) -> float:
    a, b = a.detach().float(), b.detach().float()
    return float((a - b).norm() / b.norm())


def fwd_bwd(module, x, dy):
    # y leaves without its graph: a graph kept alive would pin x's gradient node to the stream it was made on,
    # which a later CUDA-graph capture must not touch
    y = module(x)
    return y.detach(), torch.autograd.grad(y, x, dy)[0]


def linear_rows(reps, warmup):
    for name, (n_in, n_out) in SHAPES.items():
        torch.manual_seed(0)
        bf16 = nn.Linear(n_in, n_out, bias=False, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
        modules = {"bf16": bf16, **{f"fp8-{s}": FrozenFp8Linear(bf16, s) for s in SCALINGS}}
        for m in TOKENS:
            x = torch.randn(m, n_in, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            dy = torch.randn(m, n_out, device="cuda", dtype=torch.bfloat16)
            y_ref, dx_ref = fwd_bwd(bf16, x, dy)
            base_ms = {}
            for variant, module in modules.items():
                y, dx = fwd_bwd(module, x, dy)
                for compiled in (False, True):
                    torch._dynamo.reset()  # one shape per compile: no recompile limit, no dynamic shapes
                    run = torch.compile(module, dynamic=False) if compiled else module
                    ms, launched = median_ms(lambda: fwd_bwd(run, x, dy), reps, warmup)
                    base_ms.setdefault(compiled, ms)  # bf16 comes first
                    yield {"bench": "linear", "shape": name, "in": n_in, "out": n_out, "tokens": m,
                           "variant": variant, "compiled": compiled, "ms": ms, "ms_launched": launched,
                           "tflops": 4 * m * n_in * n_out / ms / 1e9, "speedup": base_ms[compiled] / ms,
                           "rel_y": rel(y, y_ref), "rel_dx": rel(dx, dx_ref)}


def grad_dtype_rows(reps, warmup, m=8192):
    spreads = {"gaussian": 0.0, "rows_3_decades": 3.0, "rows_6_decades": 6.0}
    for name in ("gate/up", "down"):
        n_in, n_out = SHAPES[name]
        torch.manual_seed(0)
        bf16 = nn.Linear(n_in, n_out, bias=False, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
        x = torch.randn(m, n_in, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for dy_kind, decades in spreads.items():
            dy = torch.randn(m, n_out, device="cuda")
            if decades:
                dy *= 10 ** -torch.rand(m, 1, device="cuda").mul(decades)
            dy = dy.bfloat16()
            _, dx_ref = fwd_bwd(bf16, x, dy)
            for scaling in SCALINGS:
                default = FrozenFp8Linear(bf16, scaling)
                for grad_dtype in (E4M3, E5M2):
                    module = default if grad_dtype == default.grad_dtype else FrozenFp8Linear(bf16, scaling, grad_dtype)
                    _, dx = fwd_bwd(module, x, dy)
                    ms = median_ms(lambda: fwd_bwd(module, x, dy), reps, warmup)[0]
                    # each token's gradient error: the worst rows are the small ones a tensorwise e4m3 flushes to 0
                    row_err = (dx.float() - dx_ref.float()).norm(dim=1) / dx_ref.float().norm(dim=1).clamp(min=1e-30)
                    yield {"bench": "grad_dtype", "shape": name, "in": n_in, "out": n_out, "tokens": m,
                           "dy": dy_kind, "variant": f"fp8-{scaling}", "grad_dtype": str(grad_dtype).split(".")[-1],
                           "default": module is default, "ms": ms,
                           "rel_dx": rel(dx, dx_ref), "rel_dx_row_p99": float(row_err.quantile(0.99))}


def qwen3_layer_model():
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Qwen3Config

    # Qwen3-4B's layer; the vocabulary is cut to keep the (untimed) embedding small
    conf = Qwen3Config(hidden_size=2560, intermediate_size=9728, num_hidden_layers=1, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128, vocab_size=1024, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(conf, dtype=torch.bfloat16, attn_implementation="sdpa")
    lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    return get_peft_model(model, lora, autocast_adapter_dtype=False)


def layer_rows(reps, warmup, tokens=8192):
    base = qwen3_layer_model()
    hidden = torch.randn(1, tokens, 2560, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(hidden)
    position_ids = torch.arange(tokens, device="cuda").unsqueeze(0)
    position_embeddings = base.base_model.model.model.rotary_emb(hidden, position_ids)
    reference = base_ms = None
    for variant in ("bf16", *(f"fp8-{s}" for s in SCALINGS)):
        torch._dynamo.reset()
        model = copy.deepcopy(base)
        report = to_fp8(model, scaling=variant[4:]) if variant != "bf16" else {"converted": 0}
        layer = model.base_model.model.model.layers[0]
        layer.compile()
        lora = [p for p in layer.parameters() if p.requires_grad]

        def step():
            out = layer(hidden, attention_mask=None, position_ids=position_ids,
                        position_embeddings=position_embeddings)
            out = out[0] if isinstance(out, tuple) else out
            return out.detach(), torch.autograd.grad(out, [hidden, *lora], dy)[0]

        y, dx = step()
        if reference is None:  # bf16 comes first
            reference = (y, dx)
        ms, launched = median_ms(step, reps, warmup)
        base_ms = base_ms or ms
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        peak = torch.cuda.max_memory_allocated() - before
        yield {"bench": "layer", "shape": "qwen3-4b decoder layer + LoRA r16", "tokens": tokens, "variant": variant,
               "compiled": True, "converted": report["converted"], "ms": ms, "ms_launched": launched,
               "tokens_per_s": tokens / ms * 1e3,
               "speedup": base_ms / ms, "peak_gb": peak / 2**30,
               "rel_y": rel(y, reference[0]), "rel_dx": rel(dx, reference[1])}
        del model, layer, lora, y, dx


COLUMNS = {"linear": ("shape", "tokens", "variant", "compiled", "ms", "ms_launched", "tflops", "speedup", "rel_y",
                      "rel_dx"),
           "grad_dtype": ("shape", "dy", "variant", "grad_dtype", "default", "ms", "rel_dx", "rel_dx_row_p99"),
           "layer": ("variant", "converted", "tokens", "ms", "ms_launched", "tokens_per_s", "speedup", "peak_gb",
                     "rel_y", "rel_dx")}


def cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:,.0f}"
    return str(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=30, help="timed repetitions (their median), at least 20")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    ok, reason = fp8_supported()
    if not ok:
        print(f"fp8_bench: {reason}", file=sys.stderr)
        return 2
    reps = max(args.reps, 20)
    device = {"device": reason, "torch": torch.__version__}
    print(f"{reason}, torch {torch.__version__}: median of {reps} timings after {args.warmup} warm-up")
    out = open(os.path.join(os.environ["OUT"], "fp8_bench.jsonl"), "w") if os.environ.get("OUT") else None
    for bench, rows in (("linear", linear_rows), ("grad_dtype", grad_dtype_rows), ("layer", layer_rows)):
        print(f"\n{bench}\n" + " | ".join(COLUMNS[bench]))
        for row in rows(reps, args.warmup):
            print(" | ".join(cell(row[c]) for c in COLUMNS[bench]), flush=True)
            if out:
                out.write(json.dumps({**row, **device}) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
