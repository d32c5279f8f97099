"""Issue 53 G2 beyond the GEMMs (one H200): inductor's own fusion options on the bf16 reference (gpu.sh
inductor_screen, 4 layers), and one compiled layer's memory-bound kernels beside the bytes they must move
(gpu.sh bandwidth, benchmarks/layer_bandwidth.py): how much of the step better kernels could give back."""
from __future__ import annotations

from experiments.figures import Fig, HERE, _records, markdown, pct, rate, ratio

S = "speed/results/"
SCREEN = S + "h200_inductor_screen_call1.jsonl"
BANDWIDTH = S + "h200_bandwidth_call2.jsonl"
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


def bandwidth_rows(section: str) -> list[dict]:
    return [r for r in _records(BANDWIDTH) if r.get("section") == section]


def copy_gb_per_s() -> float:
    return bandwidth_rows("copy")[0]["gb_per_s"]


def headroom(rows: list[dict]) -> tuple[float, float, float]:
    """(ms the kernels took alone, GB they move, ms they would take at the card's copy bandwidth)."""
    ms, gb = sum(r["ms"] for r in rows), sum(r["gb"] for r in rows)
    return ms, gb, gb / copy_gb_per_s() * 1e3


def speed_layer_bandwidth() -> str:
    lora = bandwidth_rows("lora")
    groups = [("inductor's Triton kernels: the norms, RoPE, the activation, the residual adds, LoRA's sums",
               bandwidth_rows("inductor"), "its count of each kernel's reads and writes"),
              ("LoRA's rank-16 GEMMs, six per linear", lora, "the least each must read and write"),
              ("of them, the two that exist for B's [tokens, out] product: y_lora = xa B^T, g = dY B",
               [r for r in lora if r["op"] in B_ONLY], "the least each must read and write")]
    rows = []
    for what, mine, counted in groups:
        ms, gb, at_copy = headroom(mine)
        rows.append([what, str(len(mine)), f"{ms:.3f}", f"{gb:.2f} ({counted})", f"{at_copy:.3f}",
                     f"{ms - at_copy:.3f}"])
    return markdown(["kernels of one layer's step (forward + backward, 8,192 tokens)", "calls", "ms, each alone",
                     "GB moved", "ms at the card's copy bandwidth", "ms above it"], rows)


def layer_step_ms() -> float:
    return bandwidth_rows("layer")[0]["ms"]


TABLES = {"speed/inductor_options": (HERE / "speed/README.md", speed_inductor_options),
          "speed/layer_bandwidth": (HERE / "speed/README.md", speed_layer_bandwidth)}
