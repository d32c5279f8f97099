"""Issue 53 G2's autotune call (gpu.sh autotune_full, one H200): inductor's autotuned GEMMs against its default on
the bf16 reference at full depth, and who won each GEMM's contest, read from the call's log (inductor prints each
contest's timings: its Triton templates against cuBLAS, "mm")."""
from __future__ import annotations

import json
import re

from experiments.figures import HERE, Fig, markdown, pct, rate, ratio

S = "speed/results/"
CALL = S + "h200_autotune_call1"


def speed_autotune() -> str:
    anchor = Fig(CALL + "_anchors.jsonl", "bf16_sdpa_b32_group")
    ref = Fig(CALL + ".jsonl", "ref_warm")
    rows = [["plain Trainer, bf16 sdpa bs 32 grouped", "", rate(anchor), "", "", "", ""]]
    for what, mode, label in [("bf16 reference, packed 8k compiled (cold)", "default", "ref_cold"),
                              ("the same (warm)", "default", "ref_warm"),
                              ("the same, autotuned GEMMs", "`max-autotune-no-cudagraphs`", "autotune")]:
        f = Fig(CALL + ".jsonl", label)
        rows.append([what, mode, rate(f), ratio(f, anchor), "" if label == "ref_warm" else ratio(f, ref), pct(f.get("flops.mfu")),
                     f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run (full depth)", "trainer.compile_mode", "real tok/s (95%)", "x plain", "x reference warm",
                     "MFU", "to first step"], rows)


def contests() -> list[dict]:
    """Each GEMM contest of the autotuned run: its shapes, the winner and its time, cuBLAS's time where the log
    lists it (its top ten choices), the best Triton template's time where cuBLAS won."""
    text = (HERE / (CALL + ".log")).read_text()
    out = []
    for block in re.split(r"Autotune Choices Stats:\n", text)[1:]:
        shapes = re.search(r"AUTOTUNE mm\(([^)]*)\)", block)[1]
        listed = re.findall(r"^  (\S+) ([\d.]+) ms", block.split("\nE1")[0], re.M)
        cublas = next((float(t) for name, t in listed if name == "mm"), None)
        stats = json.loads(block.split("\n", 1)[0])
        out.append({"shapes": shapes, "winner": listed[0][0], "best": float(listed[0][1]), "cublas": cublas,
                    "best_triton": stats.get("best_triton_time"), "lora": "16" in re.split(r"[x, ]+", shapes)})
    return out


def speed_autotune_gemms() -> str:
    rows = []
    for kind, lora in (("base (frozen weights)", False), ("LoRA's rank 16", True)):
        mine = [c for c in contests() if c["lora"] == lora]
        won = [c for c in mine if c["winner"] == "mm"]
        lost = [c["best_triton"] / c["best"] for c in won if c["best_triton"]]
        beaten = [c["cublas"] / c["best"] for c in mine if c["winner"] != "mm" and c["cublas"]]
        span = lambda xs: f"{min(xs):.2f}-{max(xs):.2f}x" if xs else ""  # noqa: E731
        rows.append([kind, str(len(mine)), str(len(won)), span(lost), span(beaten),
                     str(sum(c["winner"] != "mm" and c["cublas"] is None for c in mine))])
    return markdown(["GEMM shapes (one layer's, forward and backward)", "contests", "won by cuBLAS",
                     "where cuBLAS won: Triton's best time over cuBLAS's", "where Triton won: cuBLAS's time over Triton's",
                     "of those, cuBLAS outside the log's top ten"], rows)


TABLES = {"speed/autotune": (HERE / "speed/README.md", speed_autotune),
          "speed/autotune_gemms": (HERE / "speed/README.md", speed_autotune_gemms)}
