"""Issue 53 G2 beyond the GEMMs (one H200): inductor's own fusion options on the bf16 reference (gpu.sh
inductor_screen, 4 layers), and one compiled layer's memory-bound kernels beside the bytes they must move
(gpu.sh bandwidth, benchmarks/layer_bandwidth.py): how much of the step better kernels could give back."""
from __future__ import annotations

from experiments.figures import Fig, HERE, _records, markdown, pct, rate, ratio

S = "speed/results/"
SCREEN = S + "h200_inductor_screen_call1.jsonl"
BANDWIDTH = S + "h200_bandwidth_call3.jsonl"  # the bf16 layer, then the FP8 one, in one call
REPEAT = S + "h200_bandwidth_call2.jsonl"  # the bf16 layer alone, an earlier call
SCREEN_FP8 = S + "h200_inductor_fp8_call1.jsonl"  # experiment=fastest on 4 layers, with and without coordinate descent
COORD_FP8 = S + "h200_inductor_fp8_call1_layer.jsonl"  # the FP8 layer under coordinate descent, the same call
# LoRA's two GEMMs that exist only to make or read a [tokens, out] product of B: y_lora = xa B^T in the forward and
# g = dY B in the backward; B taken into the base GEMM (over [x, xa] and [W, s B]) would make neither
B_ONLY = ("y_lora = xa B^T", "g = dY B")


def speed_inductor_options() -> str:
    rows = []
    for what, label, ref in [("reference (packed 8k, compiled)", "s_ref", None),
                             ("`coordinate_descent_tuning` (each kernel's block sizes tuned)", "s_coord", "s_ref"),
                             ("`combo_kernels` (independent kernels launched as one)", "s_combo", "s_ref"),
                             ("`aggressive_fusion` (fuse without shared reads)", "s_aggressive", "s_ref"),
                             ("all three", "s_all3", "s_ref"),
                             ("reference again", "s_ref_again", None),
                             ("`coordinate_descent_tuning` again", "s_coord_again", "s_ref_again")]:
        f = Fig(SCREEN, label)
        rows.append([what, rate(f), ratio(f, Fig(SCREEN, ref)) if ref else "", pct(f.get("flops.mfu")),
                     f"{_kernel_ms(f, SILU_BACKWARD):.3f}", f"{_kernel_ms(f, SILU_FORWARD):.3f}",
                     f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run (4 layers of Qwen3-4B's width)", "real tok/s (95%)", "x the reference before it", "MFU",
                     "SiLU-and-multiply backward kernel, ms a step", "its forward kernel, ms a step", "to first step"], rows)


# the two costliest elementwise kernels of the layer, by the start of inductor's names for them (the index at the end
# changes with the options)
SILU_BACKWARD, SILU_FORWARD = "triton_poi_fused_add_mul_silu_silu_backward", "triton_poi_fused__unsafe_view_add_mul_silu"


def _kernel_ms(f: Fig, prefix: str) -> float:
    found = [k["ms"] for k in f.get("top_kernels") if k["name"].startswith(prefix)]
    assert len(found) == 1, (f.label, prefix, found)
    return found[0]


def speed_inductor_fp8() -> str:
    rows = []
    for what, label, ref in [("`experiment=fastest`", "f_ref", None),
                             ("the same, `coordinate_descent_tuning`", "f_coord", "f_ref"),
                             ("`experiment=fastest` again", "f_ref_again", None),
                             ("`coordinate_descent_tuning` again", "f_coord_again", "f_ref_again")]:
        f = Fig(SCREEN_FP8, label)
        tokens = f.get("resolved.budget")["tokens"]
        same = ref and Fig(SCREEN_FP8, ref).get("resolved.budget")["tokens"] == tokens
        rows.append([what, f"{tokens:,}", rate(f), ratio(f, Fig(SCREEN_FP8, ref)) if same else
                     ("" if not ref else "another budget: not compared"), pct(f.get("flops.mfu")),
                     f"{_kernel_ms(f, FP8_SILU_BACKWARD):.3f}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run (4 layers of Qwen3-4B's width)", "budget auto chose (tokens)", "real tok/s (95%)",
                     "x the run before it", "MFU", "SiLU backward with FP8's quantisation, ms a step", "to first step"], rows)


FP8_SILU_BACKWARD = "triton_red_fused__scaled_mm__to_copy_abs_add_amax_clamp_mul_reciprocal_silu_silu_backward"


def bandwidth_rows(section: str, precision: str = "bf16", path: str = BANDWIDTH) -> list[dict]:
    """One section's rows of a bandwidth call, for the layer in `precision` (call 2 ran bf16 alone, unlabelled)."""
    return [r for r in _records(path) if r.get("section") == section and r.get("precision", "bf16") == precision]


def copy_gb_per_s(path: str = BANDWIDTH) -> float:
    """The card's copy bandwidth as the call's first run measured it (each run of a call measures it again)."""
    return next(r for r in _records(path) if r.get("section") == "copy")["gb_per_s"]


def headroom(rows: list[dict], path: str = BANDWIDTH) -> tuple[float, float, float]:
    """(ms the kernels took alone, GB they move, ms they would take at the card's copy bandwidth in their call)."""
    ms, gb = sum(r["ms"] for r in rows), sum(r["gb"] for r in rows)
    return ms, gb, gb / copy_gb_per_s(path) * 1e3


def given_back(precision: str) -> float:
    """ms of one layer's step (8,192 tokens) that its memory-bound kernels could give back at most: inductor's
    kernels and LoRA's GEMMs at the card's copy bandwidth, and B's two products gone entirely. LoRA's GEMMs are
    bf16 under either precision and timed once, with the bf16 layer."""
    lora = bandwidth_rows("lora")
    above = sum(ms - at_copy for ms, _, at_copy in (headroom(bandwidth_rows("inductor", precision)), headroom(lora)))
    return above + headroom([r for r in lora if r["op"] in B_ONLY])[2]


def forward_unbenched(precision: str) -> float:
    """ms of one layer's step (8,192 tokens, the layer's own profile) in elementwise kernels that the inductor
    section did not time alone: in calls 2-3 it caught the backward graph's kernels only. bf16: the profile's
    elementwise time (split by the kernel kinds of its day, which counted the one kernel named after attention's
    backward as attention) less the benched kernels it counted; all of it is the most better kernels could give
    back. FP8: that split also counted the quantising kernels as GEMMs, so only the unbenched inductor kernels among
    the profile's costliest: a floor on the forward's time, not a ceiling on what comes back."""
    layer = bandwidth_rows("layer", precision)[0]
    benched = bandwidth_rows("inductor", precision)
    if precision == "bf16":
        return layer["kinds_ms"]["elementwise"] - sum(r["ms"] for r in benched if "attention" not in r["name"])
    names = {r["name"] for r in benched}
    return sum(k["ms"] for k in layer["top"] if k["name"].startswith("triton_") and k["name"] not in names)


def speed_layer_bandwidth() -> str:
    lora = bandwidth_rows("lora")
    groups = [("bf16", "inductor's Triton kernels: the norms, RoPE, the activation, the residual adds, LoRA's sums",
               bandwidth_rows("inductor"), "its count of each kernel's reads and writes", BANDWIDTH),
              ("bf16", "the same, call 2 (a repeat)", bandwidth_rows("inductor", path=REPEAT), "the same", REPEAT),
              ("bf16 (FP8's too)", "LoRA's rank-16 GEMMs, six per linear", lora, "the least each must read and write",
               BANDWIDTH),
              ("bf16", "the same, call 2 (a repeat)", bandwidth_rows("lora", path=REPEAT), "the same", REPEAT),
              ("bf16 (FP8's too)", "of them, the two that exist for B's [tokens, out] product: y_lora = xa B^T, g = dY B",
               [r for r in lora if r["op"] in B_ONLY], "the least each must read and write", BANDWIDTH),
              ("FP8 + fused", "inductor's Triton kernels of the backward: the same, with FP8's quantisation of the GEMMs' operands",
               bandwidth_rows("inductor", "fp8"), "its count", BANDWIDTH),
              ("FP8 + fused", "the same under `coordinate_descent_tuning` (the inductor-fp8 call)",
               bandwidth_rows("inductor", "fp8", COORD_FP8), "its count", COORD_FP8)]
    rows = []
    for layer, what, mine, counted, path in groups:
        ms, gb, at_copy = headroom(mine, path)
        rows.append([layer, what, str(len(mine)), f"{ms:.3f}", f"{gb:.2f} ({counted})", f"{at_copy:.3f}",
                     f"{ms - at_copy:.3f}"])
    return markdown(["layer", "kernels of one layer's step (forward + backward, 8,192 tokens; call 3 unless said)",
                     "calls", "ms, each alone", "GB moved", "ms at the card's copy bandwidth", "ms above it"], rows)


TABLES = {"speed/inductor_options": (HERE / "speed/README.md", speed_inductor_options),
          "speed/inductor_fp8": (HERE / "speed/README.md", speed_inductor_fp8),
          "speed/layer_bandwidth": (HERE / "speed/README.md", speed_layer_bandwidth)}
