#!/usr/bin/env bash
# What per-step empty_cache, .item() syncs, pd.concat and cudnn deterministic cost on a real GPU step
# (experiments/loop_overheads/README.md): the experiment's own sweep, one job per habit, at full Qwen3-4B shape.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/loop_overheads/gpu.sh
# Results: $OUT/loops_reports.jsonl, summary.{md,csv}, plots, loops.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/loops.log REPORTS=$OUT/loops_reports.jsonl
sweep loops experiment=loop_overheads model=qwen3 logger=none   # 5 habits x 3 interleaved repeats
