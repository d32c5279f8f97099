#!/usr/bin/env bash
# The drop-in (src/dropin.py) on a real card: a plain HF Trainer script (scripts/dropin_gpu.py) run plain and with
# trainsweep attached, twice each in P A P A order (a drift across the call lands on both alike). Same losses and
# a Trainer runtime within the plain runs' spread say attaching changes nothing; the attached report says what it saw.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash scripts/gpu_dropin.sh      # results: $OUT/dropin.jsonl (one line per run), dropin.log
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
for i in 1 2; do
  for mode in plain attached; do
    rm -rf "$RUNS/dropin_$mode"
    timeout 200 python3 scripts/dropin_gpu.py "$RUNS/dropin_$mode" $mode 2>>"$OUT/dropin.log" | tail -1 | tee -a "$OUT/dropin.jsonl"
    cp "$RUNS/dropin_$mode/trainsweep/report.md" "$OUT/dropin_report_$i.md" 2>/dev/null
  done
done
