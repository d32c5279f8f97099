#!/usr/bin/env bash
# Does bs 16 run 2.4x slower per step than bs 8 on a saturated 24 GB card (Llama-3.2-3B shape, QLoRA with fp32
# compute, checkpointing, a 24 GB memory cap)? (experiments/batch_vs_accum_saturation/README.md) The
# experiment's own sweep; `bf16` runs the same jobs in bf16 compute without the cap, off the saturated regime.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh --qlora: bitsandbytes).
#   bash experiments/batch_vs_accum_saturation/gpu.sh [bf16]
# Results: $OUT/saturation[_bf16]_reports.jsonl, summary.{md,csv}, plots, saturation[_bf16].log.
set -uo pipefail
case "${1:-}" in
  "")   name=saturation args="" ;;
  bf16) name=saturation_bf16 args="precision=bf16 peft.compute_dtype=bfloat16 gpu.memory_cap_gb=null" ;;
  *) echo "usage: $0 [bf16]"; exit 2 ;;
esac
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/$name.log REPORTS=$OUT/${name}_reports.jsonl
sweep $name experiment=batch_vs_accum_saturation $args logger=none
