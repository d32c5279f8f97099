#!/usr/bin/env bash
# Issue 5's GPU evidence: the loss-69 experiments at full Qwen3-4B shape, and diagnose mode on it.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=/tmp/loss69
python3 -m src.run -m experiment=seed_loss69,seed_loss69_fixed model=qwen3 hydra.sweep.dir=$S > "$OUT/loss69.log" 2>&1
for d in $S/*/; do python3 scripts/collect.py "$(basename "$d")" "$d/report.json" "$OUT/loss69_reports.jsonl"; done
cp $S/loss_curves.png $S/summary.md "$OUT/"
python3 -m src.run mode=diagnose experiment=seed_loss69 model=qwen3 hydra.run.dir=/tmp/diag > "$OUT/diagnose.log" 2>&1
echo "diagnose exit code: $?" | tee -a "$OUT/diagnose.log"
grep -A40 "trainsweep report" "$OUT/diagnose.log" | cut -c1-400
