#!/usr/bin/env bash
# Issue 8's goals, on one GPU in one call, with .whl carried and the anchors copied in first
# (here: mkdir -p .gpu && cp ../shared/anchors/hf_trainer_baseline.py .gpu/; carry .gpu and .whl):
#   bash scripts/gpu_speed.sh all|baseline|goals
# 1-2. plain HF Trainer anchors (seed before/after, bf16 sdpa bs 8/16/32, grouped) beside our runner's
#      levers at bs 8 (sweep=levers) and at the best batch (buckets + compile + bf16 adapters);
# 3. padding=packed vs max_length for causal LM at bs 64 (>= 16k tokens per micro-batch);
# 4. gradient checkpointing (all, every 2nd layer) vs none at bs 32, with predicted vs measured memory;
# 5. QLoRA vs LoRA at bs 32 (>= 8k tokens per micro-batch).
# Results: $OUT/anchors.jsonl, $OUT/speed_reports.jsonl (one report per run, labelled), $OUT/*.log
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
what=${1:-all}
if [ "$what" != goals ]; then
  python3 .gpu/hf_trainer_baseline.py full seed_before,bf16_sdpa_b8,bf16_sdpa_b32_group | tee "$OUT/anchors.jsonl"
fi
[ "$what" = baseline ] && exit
Q="model=qwen3 logger=none measure.stop_when_stable=true"
run() {  # LABEL OVERRIDES...
  local label=$1; shift
  python3 -m src.run $Q "$@" hydra.run.dir=/tmp/speed/$label >> "$OUT/speed.log" 2>&1
  echo "$label: exit $?" | tee -a "$OUT/speed.log"
  python3 scripts/collect.py "$label" /tmp/speed/$label/report.json "$OUT/speed_reports.jsonl"
}
run seed_before_ours batch=8 batch.grad_accum=2 padding=longest dataloader=basic env=default precision=fp32 \
  attention=eager trainer.gradient_checkpointing=true
run bs8_default batch=8
run bs8_levers batch=8 padding=buckets peft.adapter_dtype=auto trainer.torch_compile=true measure.warmup_steps=15
run bs8_levers_graphs batch=8 padding=max_length peft.adapter_dtype=auto trainer.torch_compile=true \
  trainer.compile_mode=reduce-overhead measure.warmup_steps=15
run bs32_levers batch=32 padding=buckets peft.adapter_dtype=auto trainer.torch_compile=true measure.warmup_steps=15
run lm_max_length_bs64 task=causal_lm batch=64 padding=max_length peft.adapter_dtype=auto trainer.gradient_checkpointing=true
run lm_packed_bs64 task=causal_lm batch=64 padding=packed peft.adapter_dtype=auto trainer.gradient_checkpointing=true
run gc_none_bs32 batch=32 padding=max_length
run gc_all_bs32 batch=32 padding=max_length trainer.gradient_checkpointing=true
run gc_half_bs32 batch=32 padding=max_length trainer.gradient_checkpointing=true trainer.checkpoint_every=2
run qlora_bs32 batch=32 padding=max_length peft=qlora
