#!/usr/bin/env bash
# The drop-in (src/dropin.py) on a real card: a user's script run plain and with trainsweep attached, twice each in
# P A P A order (a drift across the call lands on both alike). Same losses and a Trainer runtime within the plain
# runs' spread say attaching changes nothing; the attached report's throughput beside the script's own clock says
# whether it measured right.
#   bash scripts/gpu_dropin.sh          # a plain HF Trainer classifier (scripts/dropin_gpu.py)
#   bash scripts/gpu_dropin.sh sft      # TRL's SFTTrainer, packing + LoRA (scripts/dropin_sft_gpu.py; wheels --trl)
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh [--trl]).
# Results: $OUT/dropin[_sft].jsonl (one line per run, written as each ends), dropin.log, the attached reports.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
script=scripts/dropin_gpu.py; tag=dropin
[ "${1:-}" = sft ] && { script=scripts/dropin_sft_gpu.py; tag=dropin_sft; }
for i in 1 2; do
  for mode in plain attached; do
    rm -rf "$RUNS/${tag}_$mode"
    timeout 240 python3 $script "$RUNS/${tag}_$mode" $mode 2>>"$OUT/dropin.log" | tail -1 | tee -a "$OUT/$tag.jsonl"
    cp "$RUNS/${tag}_$mode/trainsweep/report.md" "$OUT/${tag}_report_$i.md" 2>/dev/null
  done
done
