#!/usr/bin/env bash
# Which of the 12x-slowdown report's fixes buy what, rung by rung (experiments/twelve_x_slowdown/README.md):
# the experiment's own sweep (one job per rung) at full Qwen3-4B shape.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/twelve_x_slowdown/gpu.sh
# Results: $OUT/twelve_x_reports.jsonl, summary.{md,csv}, plots, twelve_x.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/twelve_x.log REPORTS=$OUT/twelve_x_reports.jsonl
sweep twelve_x experiment=twelve_x_slowdown model=qwen3 logger=none
