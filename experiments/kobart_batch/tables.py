"""The table of experiments/kobart_batch/README.md."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown, rate
from src.base import stats


def kobart() -> str:
    K = "kobart_batch/results/h100_sweep/kobart_reports.jsonl"
    rows = []
    for bs, ga in [(16, 2), (16, 1), (8, 2), (8, 1)]:
        f = Fig(K, f"batch.grad_accum={ga},batch.size={bs},experiment=kobart_batch,logger=none")
        spread = stats.batch_means(f.get("step_time_s.values")).half_width  # the step time's, as the report's flag has it
        rows.append([f"bs {bs} x ga {ga}", f"{f.get('throughput.samples_per_s'):.1f}", rate(f), f"{f.get('step_time_s.mean'):.3f}",
                     f"{f.get('gpu_busy_fraction'):.0%}", f"+-{spread:.0%}; {f.get('shapes.new_in_window')} new shapes in the window"])
    return markdown(["job", "samples/s", "real tok/s (95%)", "step s", "GPU busy", "flags"], rows)


TABLES = {"kobart_batch": (HERE / "kobart_batch/README.md", kobart)}
