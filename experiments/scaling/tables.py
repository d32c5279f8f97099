"""The table of experiments/scaling/README.md: one GPU, DDP x 2 and full FT on an H200 x 2."""
from __future__ import annotations

from experiments.figures import HERE, Fig, gb, markdown, pct, rate


def scaling() -> str:
    P = "scaling/results/h200x2/scaling_reports.jsonl"
    rows = []
    for what, label in [("LoRA, one GPU", "one_gpu"), ("LoRA, DDP x 2", "two_gpu_ddp"), ("full FT fp32, one GPU", "one_gpu_full_ft_fp32")]:
        f = Fig(P, label)
        peaks = {gb(m["peak_allocated"]) for m in f.get("distributed.memory_per_rank") or [f.get("memory_gb")]}
        peak = " / ".join(sorted(peaks)) + (" each" if f.get("distributed") and len(peaks) == 1 else "")
        rows.append([what, rate(f), f"{f.get('throughput.real_tokens_per_s_per_gpu'):,.0f}", f"{f.get('step_time_s.mean'):.3f}",
                     f"{f.get('gpu_busy_fraction'):.0%}", pct(f.get("flops.mfu")) + (f" (of TF32's {f.get('flops.peak_tflops'):.0f})" if f.get("config.precision.name") == "fp32" else ""), peak])
    rows.append(["full FT fp32, FSDP x 2", "did not finish", "", "", "", "", ""])  # no report: the save hung (below)
    return markdown(["run", "real tok/s (95%)", "per GPU", "step s", "GPU busy", "MFU", "peak allocated GB"], rows)


TABLES = {"scaling/h200x2": (HERE / "scaling/README.md", scaling)}
