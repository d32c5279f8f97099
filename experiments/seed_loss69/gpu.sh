#!/usr/bin/env bash
# Why the 280-class Qwen3-4B classifier starts at loss 69 and whether the preflight checks catch it
# (experiments/seed_loss69/README.md): seed_loss69 and seed_loss69_fixed at full Qwen3-4B shape as one
# sweep, then mode=diagnose on seed_loss69.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/seed_loss69/gpu.sh
# Results: $OUT/loss69_reports.jsonl, summary.{md,csv}, loss_curves.png, loss69.log; diagnose.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/loss69.log REPORTS=$OUT/loss69_reports.jsonl
sweep loss69 experiment=seed_loss69,seed_loss69_fixed model=qwen3
# diagnose mode trains nothing: its answer is the printed checks and the exit code (1 on a failed check)
rm -rf "$RUNS/diagnose"
timeout "$RUN_TIMEOUT" python3 -m src.run mode=diagnose experiment=seed_loss69 model=qwen3 hydra.run.dir="$RUNS/diagnose" \
  > "$OUT/diagnose.log" 2>&1
echo "diagnose exit code: $?" | tee -a "$OUT/diagnose.log"
grep -A40 "trainsweep report" "$OUT/diagnose.log" | cut -c1-400
# the default run on random weights: no check of it fails (results/h200_qwen3_default_after.txt)
run default model=qwen3 batch=16 logger=none
