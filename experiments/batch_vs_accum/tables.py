"""The table of experiments/batch_vs_accum/README.md: the sweep's jobs with the ranks of its summary.csv."""
from __future__ import annotations

from experiments.figures import HERE, Fig, gb, markdown, pct, ranks, rate


def batch_vs_accum() -> str:
    B = "batch_vs_accum/results/"
    rows = []
    for bs, ga in [(32, 2), (32, 1), (16, 2), (16, 1), (8, 1), (8, 2), (4, 1), (4, 2)]:
        f = Fig(B + "sweep_reports.jsonl", f"batch.grad_accum={ga},batch.size={bs},model=qwen3")
        rows.append([ranks(B + "summary.csv")[f"batch.size={bs}, batch.grad_accum={ga}"], f"bs {bs} x ga {ga}",
                     f.get("status"), str(bs * ga), rate(f), f"{f.get('throughput.samples_per_s'):.1f}",
                     f"{f.get('step_time_s.mean'):.4f}", pct(f.get("flops.mfu")), gb(f.get("memory_gb.peak_allocated")),
                     gb(f.get("memory_gb.peak_reserved")), "yes" if f.get("verdict.saturated") else "no",
                     f"{f.get('gpu_busy_fraction'):.0%}", f.get("verdict.bottleneck")])
    for bs in (64, 128):
        status = {Fig(B + "sweep_reports.jsonl", f"batch.grad_accum={ga},batch.size={bs},model=qwen3").get("status") for ga in (1, 2)}
        rows.append(["-", f"bs {bs} x ga 1, 2", *status] + [""] * 10)
    return markdown(["rank", "job", "status", "effective batch", "real tok/s (95%)", "samples/s", "step s", "MFU",
                     "peak alloc GB", "peak reserved GB", "saturated", "GPU busy", "bottleneck"], rows)


TABLES = {"batch_vs_accum": (HERE / "batch_vs_accum/README.md", batch_vs_accum)}
