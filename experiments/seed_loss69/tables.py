"""The before-and-after table of experiments/seed_loss69/README.md: each run's logged loss at steps 1, 20 and 200 and
its preflight (initial loss, step-1 grad norm, the LR at step 20 as a share of its target), from results/."""
from __future__ import annotations

from experiments.figures import HERE, _records, markdown

R = "seed_loss69/results/"
# (run, card, its file, its label, decimals): the zero-head rerun and the CPU runs are printed as their files round
RUNS = [("seed_loss69, Qwen3-4B shape", "NVIDIA H200", "h200_qwen3_reports.jsonl", "experiment=seed_loss69,model=qwen3", 2),
        ("seed_loss69_fixed (scaled head*), Qwen3-4B shape", "NVIDIA H200", "h200_qwen3_reports.jsonl",
         "experiment=seed_loss69_fixed,model=qwen3", 2),
        ("seed_loss69_fixed (zero head), Qwen3-4B shape, 30 steps (\\*\\*)", "NVIDIA H200", "h200_qwen3_fixed_zero_head.jsonl",
         "loss69_fixed_zero_head", 3),
        ("seed_loss69, tiny shape", "CPU", "cpu_tiny_reports.jsonl", "experiment=seed_loss69", 2),
        ("seed_loss69_fixed (zero head), tiny shape", "CPU", "cpu_tiny_reports.jsonl", "experiment=seed_loss69_fixed", 2)]


def before_after() -> str:
    # the field report's own figures, as it gave them (no file of ours holds them)
    rows = [["the report", "24 GB card, real weights", "69.53", "64.19", "", "- / ~200 / 2.84e-7 (2.84%)"]]
    for what, card, path, label, d in RUNS:
        r = next(x for x in _records(R + path) if x.get("label") == label)
        curve, checks = dict(map(tuple, r["loss"]["curve"])), {c["check"]: c["value"] for c in r["diagnostics"]}
        at = [f"{curve[s]:.{d}f}" if s in curve else "" for s in (1, 20, 200)]
        pre = (f"{checks['model.initial_loss']['loss']:.{d}f} / {checks['train.grad_norm']['grad_norm']:.1f} / "
               f"{checks['train.schedule']['fraction_of_target']:.{0 if checks['train.schedule']['fraction_of_target'] == 1 else 2}%}")
        rows.append([what, card, *at, pre])
    return markdown(["run", "card", "step-1 loss (logged)", "loss at step 20", "loss at step 200",
                     "preflight: initial loss / grad norm / LR at step 20"], rows)


TABLES = {"seed_loss69/before_after": (HERE / "seed_loss69/README.md", before_after)}
