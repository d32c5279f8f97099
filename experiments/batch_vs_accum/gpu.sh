#!/usr/bin/env bash
# Which micro-batch x grad_accum is fastest for Qwen3-4B LoRA, and where memory ends it
# (experiments/batch_vs_accum/README.md): the 12-point sweep=batch_vs_accum (bs 4..128 x ga 1, 2) up to OOM, timed.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/batch_vs_accum/gpu.sh
# Results: $OUT/sweep_reports.jsonl, summary.{md,csv}, the three plots, sweep.log.
# (The measurement-overhead A/B that once shared this script is experiments/measurement/gpu.sh overhead.)
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/sweep.log REPORTS=$OUT/sweep_reports.jsonl
sweep bs_ga sweep=batch_vs_accum model=qwen3
grep -E "#[0-9]+ :|fastest|for effective|did not finish|sweep wall" "$RUN_LOG"
