"""Issue 53 G2's autotune call (gpu.sh autotune_full, one H200): inductor's autotuned GEMMs against its default on
the bf16 reference at full depth, and who won each GEMM's contest, read from the call's log (inductor prints each
contest's timings: its Triton templates against cuBLAS, "mm")."""
from __future__ import annotations

import json
import re
from functools import cache

from experiments.figures import HERE, Fig, markdown, pct, rate, ratio

S = "speed/results/"
CALL = S + "h200_autotune_call1"


def speed_autotune() -> str:
    anchor = Fig(CALL + "_anchors.jsonl", "bf16_sdpa_b32_group")
    ref = Fig(CALL + ".jsonl", "ref_warm")
    rows = [["plain Trainer, bf16 sdpa bs 32 grouped", "", rate(anchor), "", "", "", "", ""]]
    for what, mode, label in [("bf16 reference, packed 8k compiled (cold)", "default", "ref_cold"),
                              ("the same (warm)", "default", "ref_warm"),
                              ("the same, autotuned GEMMs (cold)", "`max-autotune-no-cudagraphs`", "autotune")]:
        f = Fig(CALL + ".jsonl", label)
        rows.append([what, mode, rate(f), ratio(f, anchor), "" if label == "ref_warm" else ratio(f, ref),
                     pct(f.get("flops.mfu")), f"{f.get('compile.to_first_step_s'):.0f} s",
                     f"{f.get('compile.work')['compile_s']:.0f} s"])
    return markdown(["run (full depth)", "trainer.compile_mode", "real tok/s (95%)", "x plain", "x reference warm",
                     "MFU", "to first step", "of it: torch compiling"], rows)


@cache
def contests() -> tuple[dict, ...]:
    """Each GEMM contest of the autotuned run, in the log's order (a shape recurs where a graph has it twice): its
    shapes, the winner and its time, cuBLAS's time where the log lists it (it lists each contest's ten fastest), the
    best Triton template's time where cuBLAS won, and whether a side of it is the LoRA rank."""
    rank = Fig(CALL + ".jsonl", "autotune").get("config.peft.r")
    text = (HERE / (CALL + ".log")).read_text()
    out = []
    for block in re.split(r"Autotune Choices Stats:\n", text)[1:]:
        stats = json.loads(block.split("\n", 1)[0])
        shapes = re.search(r"^AUTOTUNE mm\(([^)]*)\)$", block, re.M)[1]
        lines = block.split("\n")
        listed = []  # the choice lines: indented, right under the dtypes line
        for line in lines[next(i for i, x in enumerate(lines) if x.startswith("dtypes:")) + 1:]:
            m = re.match(r"^  (\S+) ([\d.]+) ms", line)
            if not m:
                break
            listed.append((m[1], float(m[2])))
        out.append({"shapes": shapes, "winner": listed[0][0], "best": listed[0][1],
                    "cublas": next((t for name, t in listed if name == "mm"), None),
                    "best_triton": stats.get("best_triton_time"),
                    "lora": str(rank) in re.split(r"[x, ]+", shapes)})
    return tuple(out)


def _span(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else ""


def speed_autotune_gemms() -> str:
    rows = []
    for kind, lora in (("base (frozen weights)", False), ("LoRA's rank 16", True)):
        mine = [c for c in contests() if c["lora"] == lora]
        won = [c for c in mine if c["winner"] == "mm"]
        lost = [c["best_triton"] / c["best"] for c in won if c["best_triton"]]
        beaten = [c["cublas"] / c["best"] for c in mine if c["winner"] != "mm" and c["cublas"]]
        rows.append([kind, f"{len(mine)} ({len({c['shapes'] for c in mine})})",
                     f"{len(won)} ({len({c['shapes'] for c in won})})", _span(lost), _span(beaten),
                     str(sum(c["winner"] != "mm" and c["cublas"] is None for c in mine))])
    return markdown(["GEMMs (one layer's, forward and backward)", "contests (distinct shapes)",
                     "won by cuBLAS (distinct shapes)", "where cuBLAS won: Triton's best time over cuBLAS's",
                     "where Triton won: cuBLAS's time over Triton's", "of those, cuBLAS not in the log's ten fastest"],
                    rows)


TABLES = {"speed/autotune": (HERE / "speed/README.md", speed_autotune),
          "speed/autotune_gemms": (HERE / "speed/README.md", speed_autotune_gemms)}
