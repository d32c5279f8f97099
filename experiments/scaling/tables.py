"""The tables of experiments/scaling/README.md: one GPU, DDP x 2 and full FT on an H200 x 2; issue 50's G1 and G2
(`gpu.sh g1g2`) once their call's files are committed."""
from __future__ import annotations

from experiments import calltrace
from experiments.figures import HERE, Fig, check, gb, markdown, pct, rate, ratio
from src.base import stats


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


# `gpu.sh g1g2`'s $OUT, committed here: scaling_reports.jsonl (scripts/collect.py's rows) and anchors.jsonl
G1G2 = "scaling/results/h200x2_g1g2/"
G1G2_RUNS = (("one GPU", "one_gpu"), ("DDP, one host", "two_gpu_ddp"),
             ("two torchrun agents, c10d rendezvous", "two_nodes_rdzv"), ("DDP, one host", "four_gpu_ddp"))


def _per_gpu(f: Fig, one: Fig, gpus: int) -> str:
    """Per-GPU efficiency against one GPU of the same call: the speed-up's interval over the GPU count."""
    check(f.call_id, one.call_id, what=f"{f.label} / {one.label}")
    with calltrace.allowed():
        c = stats.compare(f.interval, one.interval, f.rate, one.rate)
    return f"{c.ratio / gpus:.0%}" + (f" ({c.low / gpus:.0%}-{c.high / gpus:.0%})" if c.high != float("inf") else "")


def g1g2(folder: str = G1G2) -> str:
    reports, anchors = folder + "scaling_reports.jsonl", folder + "anchors.jsonl"
    one = Fig(reports, "one_gpu")
    anchor = Fig(anchors, "bf16_sdpa_b32_group") if (HERE / anchors).exists() else None
    rows = []
    for what, label in G1G2_RUNS:
        f = Fig(reports, label)
        try:
            f.record
        except KeyError:  # four_gpu_ddp only where four GPUs were lent; a run the call cut has no row
            continue
        gpus, nodes = f.get("env.world_size") or 1, f.get("env.nodes") or 1
        rows.append([what, f"{nodes} x {gpus // nodes}", rate(f), "1.00" if label == "one_gpu" else ratio(f, one),
                     "100%" if label == "one_gpu" else _per_gpu(f, one, gpus), f"{f.get('step_time_s.mean'):.3f}",
                     pct(f.get("gpu_busy_fraction")), ratio(f, anchor) if anchor else ""])
    return markdown(["run", "nodes x GPUs each", "real tok/s (95%)", "x one GPU (95%)", "per GPU (95%)", "step s",
                     "GPU busy", "x best plain Trainer"], rows)


TABLES = {"scaling/h200x2": (HERE / "scaling/README.md", scaling)}
if (HERE / G1G2).is_dir():  # the README then marks it: <!-- table: scaling/g1g2 --> ... <!-- /table -->
    TABLES["scaling/g1g2"] = (HERE / "scaling/README.md", g1g2)
