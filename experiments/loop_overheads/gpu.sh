#!/usr/bin/env bash
# What per-step empty_cache, .item() syncs, pd.concat and cudnn deterministic cost on a real GPU step
# (experiments/loop_overheads/README.md): the experiment's own sweep, one job per habit, at full Qwen3-4B shape.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/loop_overheads/gpu.sh          # 3 interleaved rounds (~9 min: a call's limit may cut the last)
#   bash experiments/loop_overheads/gpu.sh round    # one round, 5 jobs (~5 min): add it to earlier rounds' reports
# Results: $OUT/loops_reports.jsonl, summary.{md,csv}, plots, loops.log.
set -uo pipefail
case "${1:-}" in
  "") name=loops args="" ;;   # 5 habits x 3 interleaved repeats
  round) name=loops_round args="hydra.launcher.repeats=1" ;;
  *) echo "usage: $0 [round]"; exit 2 ;;
esac
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/loops.log REPORTS=$OUT/loops_reports.jsonl
sweep $name experiment=loop_overheads model=qwen3 logger=none $args
