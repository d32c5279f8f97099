"""Does a torch.profiler session slow the kernel launches after it? Kineto leaves CUPTI subscribed once a
profile ends unless TEARDOWN_CUPTI=1 (pytorch/pytorch#144455: "the profiler slowed down training by roughly
10-20% even after completion"), and the predictor profiled each cell's kernels between timings of its micro-
batches. One copy of the model, one micro-batch, timed as the predictor times it (speed_model.time_steps), in
this order: twice, one profile of its kernels (speed_model.gpu_busy_s), twice again. The two timings before the
profile say how far the host drifts without it.

    python experiments/planner/profiler_after.py OUT.jsonl LAYERS OVERRIDES...
    python experiments/planner/profiler_after.py out.jsonl 8 experiment=batch_vs_accum_saturation batch=8
    TEARDOWN_CUPTI=1 python experiments/planner/profiler_after.py ...   # CUPTI torn down when the profile ends
"""
import json
import os
import sys
from statistics import median

from src.model import memory_model as mm
from src.plan import speed_model

from typical import setup  # this folder: the script's own directory is on sys.path


def main(out: str, layers: int, overrides: list[str]) -> None:
    cfg, res, conf, _, _, batch = setup(overrides)
    model = mm.build_copy(cfg, res, conf, layers)
    speed_model.warm_up(model, batch, res.amp, res.device)
    timings, kernels = [], None
    for when in ("before", "before", "profile", "after", "after"):
        if when == "profile":
            kernels = speed_model.gpu_busy_s(model, batch, res.amp, res.device)
            continue
        blocks = [b.micro_batch for b in speed_model.time_steps(model, batch, res.amp, res.device)]
        timings.append({"when": when, "median_s": median(blocks), "blocks_s": blocks})
        print(f"{when} the profile: {median(blocks) * 1e3:.1f} ms a micro-batch "
              f"({min(blocks) * 1e3:.1f}-{max(blocks) * 1e3:.1f})", flush=True)
    before = [t["median_s"] for t in timings if t["when"] == "before"]
    after = [t["median_s"] for t in timings if t["when"] == "after"]
    row = {"overrides": overrides, "layers": layers, "batch": cfg.batch.size,
           "teardown_cupti": os.environ.get("TEARDOWN_CUPTI"), "kernels_s": kernels, "timings": timings, "after_over_before": median(after) / median(before),
           "before_spread": max(before) / min(before)}
    print(f"after / before: {row['after_over_before']:.3f} (the two before: {row['before_spread']:.3f} apart); "
          f"kernels {(kernels or 0) * 1e3:.1f} ms", flush=True)
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
