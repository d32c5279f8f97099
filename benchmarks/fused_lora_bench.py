"""Fused LoRA linear (src/model/fused_lora.py) against peft's lora.Linear at Qwen3-4B's shapes, on a CUDA GPU.

Three sections, each a forward + backward timed with CUDA events after warm-up (median of --reps):

1. variants: the candidate forms of the fused computation as bare op sequences (no autograd, no modules), to choose
   FusedLinearLora's: peft's op order; x A^T as its own GEMM with the scale and the sum in addmm_'s epilogue
   ("split", what fuse_lora runs in eager) or through out-of-place addmm ("addmm"); x read once by a GEMM over
   [W; A] ("concat": W stored inside an [N + r, K] buffer whose last r rows A is copied into each step, the
   output a strided view); in the backward, dx as one GEMM of [dY, s dY B] @ [W; A], with that buffer ("concat")
   or the concatenation made each call ("cat W"), against dY W then addmm_ ("split").
2. linear: one LoRA linear per projection shape (bf16 base and adapters, rank 16, --tokens tokens): peft eager, peft
   compiled, fused eager, fused compiled; then over a bitsandbytes nf4 base if bitsandbytes imports. Beside the
   wall time (close to host-bound at one linear), the profiler's kernel time and launches, the activation memory a
   forward leaves for its backward, and the fused result's largest relative difference from peft's (output, the x,
   A and B gradients).
3. layer: a 1-layer Qwen3 model at Qwen3-4B's width (random init, bf16, sdpa), LoRA r16 on every linear, its decoder
   layer at [1, --tokens], eager and then compiled with layer.compile() as trainsweep's compile_regions does: peft
   against fused, timed in alternated rounds.

    python -m benchmarks.fused_lora_bench                         # all three: ~1 minute on an H200, compiles included
    python -m benchmarks.fused_lora_bench --sections linear --reps 50

Prints a table per section; with OUT set, also one JSON line per measurement to $OUT/fused_lora_bench.jsonl.
"""
import argparse
import copy
import json
import os
import statistics
import sys
import time

import torch

from src.model.fused_lora import fuse_lora

HIDDEN, INTERMEDIATE = 2560, 9728
SHAPES = {"q_proj": (HIDDEN, 4096), "k_proj/v_proj": (HIDDEN, 1024), "o_proj": (4096, HIDDEN),
          "gate/up_proj": (HIDDEN, INTERMEDIATE), "down_proj": (INTERMEDIATE, HIDDEN)}
RANK, ALPHA = 16, 32
ROUNDS = 3
DEV = "cuda"
BF16 = torch.bfloat16


def timed(fn, reps: int, warmup: int = 5) -> dict:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    ms = sorted(start.elapsed_time(end) for start, end in events)
    return {"ms": statistics.median(ms), "p10": ms[len(ms) // 10], "p90": ms[(len(ms) * 9) // 10], "reps": reps}


def kernels(fn, reps: int = 5) -> dict:
    """GPU kernel time and kernel launches per call, from the profiler: the device's work without the host's gaps
    (a single linear at these sizes is close to host-bound in eager, so its wall time mixes in Python's)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
        device = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        return {"kernel_ms": sum(e.time_range.elapsed_us() for e in device) / reps / 1e3,
                "launches": len(device) / reps}
    except Exception as err:  # noqa: BLE001 - a profiler that can't read the device leaves the column empty
        print(f"profiler: {type(err).__name__}: {err}")
        return {"kernel_ms": float("nan"), "launches": float("nan")}


def rel(a, b) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


class Sink:
    """Collects measurements: the JSON lines file under $OUT and the rows of the printed tables."""

    def __init__(self):
        out = os.environ.get("OUT")
        self.file = open(os.path.join(out, "fused_lora_bench.jsonl"), "w") if out else None

    def write(self, **row):
        if self.file:
            self.file.write(json.dumps(row) + "\n")
            self.file.flush()
        return row


# --- 1. variants: bare op sequences -------------------------------------------------------------------------------

def variants(sink: Sink, tokens: int, reps: int) -> None:
    s = ALPHA / RANK
    print(f"\n== variants: op sequences only, fwd and bwd ms (median of {reps}), {tokens} tokens, r{RANK}, bf16")
    names = ["fwd peft", "fwd split", "fwd addmm", "fwd concat", "bwd peft", "bwd split", "bwd concat", "bwd cat W"]
    print(f"{'shape':<14}" + "".join(f"{name:>{len(name) + 2}}" for name in names) + "   max rel diff vs split")
    for shape, (k, n) in SHAPES.items():
        x = torch.randn(tokens, k, device=DEV, dtype=BF16)
        dy = torch.randn(tokens, n, device=DEV, dtype=BF16)
        wa = torch.randn(n + RANK, k, device=DEV, dtype=BF16) / k ** 0.5
        w, a = wa[:n], torch.randn(RANK, k, device=DEV, dtype=BF16) / k ** 0.5
        wa[n:].copy_(a)
        b = torch.randn(n, RANK, device=DEV, dtype=BF16) / RANK ** 0.5
        xa = x @ a.t()

        def fwd_peft():
            return x @ w.t() + (x @ a.t()) @ b.t() * s

        def fwd_split():  # FusedLinearLora's eager forward
            xa = x @ a.t()
            return (x @ w.t()).addmm_(xa, b.t(), alpha=s), xa

        def fwd_split_oop():  # the same through out-of-place addmm, which ATen runs as a copy, then addmm_
            xa = x @ a.t()
            return torch.addmm(x @ w.t(), xa, b.t(), alpha=s), xa

        def fwd_concat():
            wa[n:].copy_(a)  # the adapter's current values, as after an optimizer step
            full = x @ wa.t()
            xa = full[:, n:].clone()  # saved for backward: a view would keep all of `full` alive
            return full[:, :n].addmm_(xa, b.t(), alpha=s), xa

        def adapter_grads(g):
            return g.t() @ x, (dy.t() @ xa).mul_(s)

        def bwd_peft():  # what autograd runs for peft's base(x) + lora_B(lora_A(x)) * s
            d_lora = dy * s
            d_xa = d_lora @ b
            return dy @ w + d_xa @ a, d_xa.t() @ x, d_lora.t() @ xa

        def bwd_split():
            g = (dy @ b).mul_(s)
            return ((dy @ w).addmm_(g, a), *adapter_grads(g))

        def bwd_concat():
            g = (dy @ b).mul_(s)
            return (torch.cat([dy, g], 1) @ wa, *adapter_grads(g))

        def bwd_cat_w():  # the same without W stored inside [W; A]: the concatenation made each call
            g = (dy @ b).mul_(s)
            return (torch.cat([dy, g], 1) @ torch.cat([w, a]), *adapter_grads(g))

        ref_y, ref_d = fwd_split()[0], bwd_split()
        diff = max(rel(fwd_peft(), ref_y), rel(fwd_split_oop()[0], ref_y), rel(fwd_concat()[0], ref_y),
                   *(rel(p, q) for v in (bwd_peft, bwd_concat, bwd_cat_w) for p, q in zip(v(), ref_d)))
        row = {}
        for name, fn in [("fwd peft", fwd_peft), ("fwd split", fwd_split), ("fwd addmm", fwd_split_oop),
                         ("fwd concat", fwd_concat),
                         ("bwd peft", bwd_peft), ("bwd split", bwd_split), ("bwd concat", bwd_concat),
                         ("bwd cat W", bwd_cat_w)]:
            res = timed(fn, reps)
            row[name] = sink.write(section="variants", shape=shape, variant=name, tokens=tokens, **res)["ms"]
        print(f"{shape:<14}" + "".join(f"{row[c]:>{len(c) + 2}.3f}" for c in row) + f"   {diff:.1e}")


# --- 2. one LoRA linear -------------------------------------------------------------------------------------------

class Wrap(torch.nn.Module):
    def __init__(self, proj):
        super().__init__()
        self.proj = proj

    def forward(self, x):
        return self.proj(x)


def lora_linear(k: int, n: int, base: str) -> torch.nn.Module:
    """A peft LoRA linear (bf16 adapters, B random so every gradient is real) inside a small module."""
    from peft import LoraConfig, get_peft_model

    linear = torch.nn.Linear(k, n, bias=False, device=DEV, dtype=BF16)
    wrap = Wrap(linear if base == "bf16" else nf4(linear))
    wrap.is_loaded_in_4bit = base == "nf4"  # peft reads it to wrap a Linear4bit with its 4-bit LoRA layer
    model = get_peft_model(wrap, LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=["proj"], lora_dropout=0.0),
                           autocast_adapter_dtype=False)
    inner = model.base_model.model
    lora = inner.proj
    with torch.no_grad():
        for adapter in (lora.lora_A["default"], lora.lora_B["default"]):
            adapter.weight.data = adapter.weight.data.to(BF16)  # over a 4-bit base peft leaves them fp32
        lora.lora_B["default"].weight.normal_(0, 0.02)
    return inner


def nf4(linear: torch.nn.Linear) -> torch.nn.Module:
    import bitsandbytes as bnb

    q = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=False, compute_dtype=BF16, quant_type="nf4")
    q.weight = bnb.nn.Params4bit(linear.weight.data, requires_grad=False, quant_type="nf4").to(DEV)
    return q


def fwd_bwd(module, x, dy):
    params = [p for p in module.parameters() if p.requires_grad]

    def step():
        x.grad = None
        for p in params:
            p.grad = None
        out = module(x)
        out.backward(dy)
        return out

    return step


def activation_mb(module, x) -> float:
    """What one forward leaves allocated for its backward (its output included)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = module(x)
    held = torch.cuda.memory_allocated() - before
    del out
    return held / 2**20


def grads(module, x, dy):
    step = fwd_bwd(module, x, dy)
    out = step()
    lora = module.proj
    return [out.detach(), x.grad.clone(), lora.lora_A["default"].weight.grad.clone(),
            lora.lora_B["default"].weight.grad.clone()]


def linear(sink: Sink, tokens: int, reps: int, bases: list[str]) -> None:
    cols = ["peft", "peft compiled", "fused", "fused compiled"]
    print(f"\n== linear: one LoRA linear, fwd+bwd ms (median of {reps}), x [{tokens}, in], r{RANK}, bf16 adapters")
    print("wall: CUDA events around each call; kernel: the profiler's sum of kernel times; x: peft / fused")
    print(f"{'base':<6}{'shape':<14}" + "".join(f"{c:>15}" for c in cols) + f"{'eager x':>9}{'comp x':>8}"
          f"{'kernel ms peft/fused (compiled)':>34}{'launches':>10}{'act MB':>10}{'rel diff':>10}")
    for base in bases:
        for shape, (k, n) in SHAPES.items():
            torch.manual_seed(0)
            peft_mod = lora_linear(k, n, base)
            fused_mod = copy.deepcopy(peft_mod)
            report = fuse_lora(fused_mod)
            assert report["fused"] == 1, report
            x = torch.randn(tokens, k, device=DEV, dtype=BF16, requires_grad=True)
            dy = torch.randn(tokens, n, device=DEV, dtype=BF16)
            diff = max(rel(f, p) for f, p in zip(grads(fused_mod, x, dy), grads(peft_mod, x, dy)))
            act = {"peft": activation_mb(peft_mod, x), "fused": activation_mb(fused_mod, x)}
            row = {}
            for col in cols:
                impl, compiled = col.split()[0], col.endswith("compiled")
                module = peft_mod if impl == "peft" else fused_mod
                if compiled:
                    torch._dynamo.reset()  # each module its own compile, clear of the others' recompile budget
                    module = torch.compile(module)
                t0 = time.perf_counter()
                try:
                    fwd_bwd(module, x, dy)()  # the compile, out of the timing
                except Exception as err:  # noqa: BLE001 - one failed compile should not cost the other rows
                    print(f"{base} {shape} {col}: {type(err).__name__}: {str(err)[:300]}")
                    continue
                first_s = time.perf_counter() - t0
                torch.cuda.reset_peak_memory_stats()
                res = timed(fwd_bwd(module, x, dy), reps)
                res["peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
                res.update(kernels(fwd_bwd(module, x, dy)))
                row[col] = sink.write(section="linear", base=base, shape=shape, impl=impl, compiled=compiled,
                                      tokens=tokens, rank=RANK, first_call_s=first_s, activation_mb=act[impl],
                                      max_rel_diff=diff, **res)
            ms, kern, launches = ({c: row[c][key] if c in row else float("nan") for c in cols}
                                  for key in ("ms", "kernel_ms", "launches"))
            print(f"{base:<6}{shape:<14}" + "".join(f"{ms[c]:>15.3f}" for c in cols)
                  + f"{ms['peft'] / ms['fused']:>9.2f}{ms['peft compiled'] / ms['fused compiled']:>8.2f}"
                  + f"{kern['peft']:>10.3f}/{kern['fused']:.3f}"
                  + f" ({kern['peft compiled']:.3f}/{kern['fused compiled']:.3f})"
                  + f"{launches['peft']:>5.0f}/{launches['fused']:<4.0f}{act['peft']:>5.0f}/{act['fused']:<4.0f}"
                  + f"{diff:>10.1e}")
            del peft_mod, fused_mod, module, x, dy
            torch.cuda.empty_cache()


# --- 3. a whole decoder layer -------------------------------------------------------------------------------------

def layer(sink: Sink, tokens: int, reps: int) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Qwen3Config

    torch.manual_seed(0)
    conf = Qwen3Config(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=1,
                       num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=1024)
    with torch.device(DEV):
        model = AutoModelForCausalLM.from_config(conf, dtype=BF16, attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules="all-linear",
                                             lora_dropout=0.0, task_type="CAUSAL_LM"), autocast_adapter_dtype=False)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    fused = copy.deepcopy(model)
    report = fuse_lora(fused)
    hidden = torch.randn(1, tokens, HIDDEN, device=DEV, dtype=BF16, requires_grad=True)
    dy = torch.randn_like(hidden)
    backbone = model.base_model.model.model
    positions = torch.arange(tokens, device=DEV)[None]
    rope = backbone.rotary_emb(hidden, positions)

    def decoder(peft_model):
        one = peft_model.base_model.model.model.layers[0]

        def call(h):
            out = one(h, position_embeddings=rope, attention_mask=None, position_ids=positions)
            return out[0] if isinstance(out, tuple) else out

        call.layer = one
        return call

    print(f"\n== layer: one Qwen3-4B decoder layer, LoRA r{RANK} all-linear, fwd+bwd ms (median of {ROUNDS} "
          f"alternated rounds of {reps}), [1, {tokens}] tokens; fuse_lora: {report}")
    models = {"peft": model, "fused": fused}
    calls = {impl: decoder(m) for impl, m in models.items()}
    ref = grads_layer(calls["peft"], model, hidden, dy)
    ms = {}
    for compiled in (False, True):
        first, diff, act = {}, {}, {}
        for impl, call in calls.items():
            if compiled:
                call.layer.compile()  # as compile_regions does
            t0 = time.perf_counter()
            diff[impl] = max(rel(f, p) for f, p in zip(grads_layer(call, models[impl], hidden, dy), ref))
            first[impl] = time.perf_counter() - t0
            act[impl] = activation_mb(call, hidden)
        rounds = {impl: [] for impl in calls}
        for _ in range(ROUNDS):  # alternated, so that the card's drift falls on both alike
            for impl, call in calls.items():
                rounds[impl].append(timed(fwd_bwd_layer(call, models[impl], hidden, dy), reps)["ms"])
        mode = "compiled" if compiled else "eager"
        for impl, call in calls.items():
            ms[impl, compiled] = statistics.median(rounds[impl])
            kern = kernels(fwd_bwd_layer(call, models[impl], hidden, dy))
            sink.write(section="layer", impl=impl, compiled=compiled, tokens=tokens, rank=RANK, ms=ms[impl, compiled],
                       round_ms=rounds[impl], reps=reps, first_call_s=first[impl], activation_mb=act[impl],
                       max_rel_diff_vs_peft_eager=diff[impl], fuse_report=report, **kern)
            print(f"{impl:<6}{mode:<10}{ms[impl, compiled]:>8.3f} ms (rounds {min(rounds[impl]):.3f}-"
                  f"{max(rounds[impl]):.3f})   kernels {kern['kernel_ms']:.3f} ms, {kern['launches']:.0f} launches   "
                  f"act {act[impl]:.0f} MB   rel diff vs peft eager {diff[impl]:.1e}   first call {first[impl]:.1f} s")
        print(f"fused speed-up, {mode}: {ms['peft', compiled] / ms['fused', compiled]:.3f}x")


def fwd_bwd_layer(call, peft_model, hidden, dy):
    params = [p for p in peft_model.parameters() if p.requires_grad]

    def step():
        hidden.grad = None
        for p in params:
            p.grad = None
        call(hidden).backward(dy)

    return step


def grads_layer(call, peft_model, hidden, dy):
    fwd_bwd_layer(call, peft_model, hidden, dy)()
    names = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    by_name = dict(peft_model.named_parameters())
    return [hidden.grad.clone()] + [by_name[n].grad.clone() for n in names]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--sections", default="variants,linear,layer")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("fused_lora_bench needs a CUDA GPU")
    import peft
    import transformers

    bases = ["bf16"]
    try:
        import bitsandbytes

        bases.append("nf4")
        bnb_version = bitsandbytes.__version__
    except Exception as err:  # noqa: BLE001 - any import failure means: no 4-bit rows
        bnb_version = f"unavailable: {err}"
    sink = Sink()
    meta = sink.write(section="meta", device=torch.cuda.get_device_name(), torch=torch.__version__,
                      transformers=transformers.__version__, peft=peft.__version__, bitsandbytes=bnb_version,
                      tokens=args.tokens, reps=args.reps)
    print(meta)
    t0 = time.perf_counter()
    sections = args.sections.split(",")
    if "variants" in sections:
        variants(sink, args.tokens, args.reps)
    if "linear" in sections:
        linear(sink, args.tokens, args.reps, bases)
    if "layer" in sections:
        layer(sink, args.tokens, args.reps)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
