#!/usr/bin/env bash
# Issue 9's GPU evidence, on one GPU with .whl carried (bitsandbytes for the QLoRA part: gpu_wheels.sh --qlora):
#   bash scripts/gpu_seeds.sh twelve_x|saturation|kobart|loops
# Each is the experiment's own sweep at full shape; the sweep's summary.md, summary.csv and plots come back.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
case "$1" in
  twelve_x)   args="experiment=twelve_x_slowdown model=qwen3" ;;
  saturation) args="experiment=batch_vs_accum_saturation" ;;
  saturation_bf16) args="experiment=batch_vs_accum_saturation precision=bf16 peft.compute_dtype=bfloat16 gpu.memory_cap_gb=null" ;;
  kobart)     args="experiment=kobart_batch" ;;
  loops)      args="experiment=loop_overheads model=qwen3" ;;
  *) echo "usage: $0 twelve_x|saturation|saturation_bf16|kobart|loops"; exit 2 ;;
esac
S=/tmp/seeds_$1
start=$(date +%s)
python3 -m src.run -m $args logger=none hydra.sweep.dir=$S > "$OUT/$1.log" 2>&1
echo "sweep wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/$1.log"
for d in $S/*/; do python3 scripts/collect.py "$(basename "$d")" "$d/report.json" "$OUT/$1_reports.jsonl"; done
cp $S/summary.md $S/summary.csv $S/*.png "$OUT/"
