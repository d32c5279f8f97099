#!/usr/bin/env bash
# Issue 4's GPU evidence (and issue 3's overhead A/B), on the device machine with .whl carried:
# 1. measurement overhead, paired blocks in one warm process, Qwen3-4B shape bs 8 (fixed shapes);
# 2. the 12-point batch x grad_accum sweep of the Qwen3-4B shape (LoRA classification) up to OOM, timed.
# Results: $OUT/overhead.jsonl, $OUT/sweep_reports.jsonl, summary.{md,csv} and the three plots.
#   bash scripts/gpu_sweep.sh overhead|sweep
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ "$1" = overhead ]; then
  python3 -m benchmarks.overhead ab 60 model=qwen3 batch=8 padding=max_length trainer.max_steps=30 measure.warmup_steps=10 | tee "$OUT/overhead.jsonl"
  exit
fi
S=/tmp/sweep_bs_ga
start=$(date +%s)
python3 -m src.run -m sweep=batch_vs_accum model=qwen3 hydra.sweep.dir=$S > "$OUT/sweep.log" 2>&1
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/sweep.log"
grep -E "#[0-9]+ :|fastest|for effective|did not finish|sweep wall" "$OUT/sweep.log"
for d in $S/*/; do python3 scripts/collect.py "$(basename "$d")" "$d/report.json" "$OUT/sweep_reports.jsonl"; done
cp $S/summary.md $S/summary.csv $S/*.png "$OUT/"
