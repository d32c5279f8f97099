#!/usr/bin/env bash
# Does bs 16 run 2.4x slower per step than bs 8 on a saturated 24 GB card (Llama-3.2-3B shape, QLoRA with fp32
# compute, checkpointing, a 24 GB memory cap)? (experiments/batch_vs_accum_saturation/README.md) The
# experiment's own sweep; `bf16` runs the same jobs in bf16 compute without the cap, off the saturated regime.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh --qlora: bitsandbytes).
#   bash experiments/batch_vs_accum_saturation/gpu.sh [bf16|largest [MODEL]|claims|long|near_cap|depth]
# `long`: the claims' jobs at ~1,800-token rows, where the memory model puts a 24 GB card's saturation at bs 16:
# fp32 compute bs 8, bs 16, then bf16 compute bs 8, bs 16 (all under the cap), then fp32 bs 8 x ga 2 (8 steps each:
# 2 untimed, 3 timed, 3 profiled; trainer.max_steps=14 would give the 9 timed steps an interval needs).
# `near_cap`: fp32 bs 16 at the edge of 24 GB (rows of at most 1,900 tokens), bs 8 beside it, bs 16 once more, and
# bs 16 at rows of at most 1,800 (the near_cap results came from two calls on one warm machine: jobs 1-2, then 3-4).
# `claims`: the jobs the report's claims need, in one call: fp32 compute bs 8, bs 16, bs 8 x ga 2 under the cap,
# then bs 8 and 16 in bf16 compute without it (30 steps each; `python -m src.report` makes the summary).
# `largest [MODEL]`: SOLAR-10.7B and Polyglot-Ko-12.8B shapes (or the one named), QLoRA (bf16 compute) +
# checkpointing under the 24 GB cap, every micro-batch run (sweep=fit with sweep.plan=all: the brute force that
# experiments/planner's `g4_largest` holds the planned sweep against): 16-128 at the account-tax rows (~211 tokens), 4-32 at
# ~1,800-token rows. 6 steps a job: memory is the question. Each job's report holds the memory model's prediction
# beside the measured peak. (The results in README.md came from a search that stopped at the first failed size.)
# `depth`: Polyglot-Ko-12.8B QLoRA (bf16 compute, checkpointing, bs 16, ~211-token rows) cut to 1, 2, 4, 8 and
# 16 layers, 3 steps each: how the measured peak and the memory model's prediction grow with depth.
# Results: $OUT/<name>_reports.jsonl, summary.{md,csv}, plots, <name>.log.
set -uo pipefail
case "${1:-}" in
  "")   name=saturation args="" ;;
  bf16) name=saturation_bf16 args="precision=bf16 peft.compute_dtype=bfloat16 gpu.memory_cap_gb=null" ;;
  largest) name=largest models=${2:-solar-10.7b polyglot-ko-12.8b} ;;
  claims) name=claims ;;
  long) name=saturation_long ;;
  near_cap) name=near_cap ;;
  depth) name=depth ;;
  *) echo "usage: $0 [bf16|largest [MODEL]|claims|long|near_cap|depth]"; exit 2 ;;
esac
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/$name.log REPORTS=$OUT/${name}_reports.jsonl
LONG="data.length_mean=1800 data.length_std=200 data.length_max=2048 data.max_length=2048"
BF16="precision=bf16 peft.compute_dtype=bfloat16"
if [ "$name" = claims ]; then
  COMMON="experiment=batch_vs_accum_saturation logger=none trainer.max_steps=30 measure.warmup_steps=5 measure.stop_when_stable=true"
  run fp32_b8 batch.size=8
  run fp32_b16 batch.size=16
  run fp32_b8_ga2 batch.size=8 batch.grad_accum=2
  run bf16_b8 batch.size=8 precision=bf16 peft.compute_dtype=bfloat16 gpu.memory_cap_gb=null
  run bf16_b16 batch.size=16 precision=bf16 peft.compute_dtype=bfloat16 gpu.memory_cap_gb=null
elif [ "$name" = saturation_long ]; then
  COMMON="experiment=batch_vs_accum_saturation logger=none $LONG trainer.max_steps=8 measure.warmup_steps=2"
  run fp32_b8 batch.size=8
  run fp32_b16 batch.size=16
  run bf16_b8 batch.size=8 $BF16
  run bf16_b16 batch.size=16 $BF16
  run fp32_b8_ga2 batch.size=8 batch.grad_accum=2
elif [ "$name" = near_cap ]; then
  COMMON="experiment=batch_vs_accum_saturation logger=none trainer.max_steps=8 measure.warmup_steps=2 data.max_length=2048"
  NEAR="data.length_mean=1750 data.length_std=100 data.length_max=1900"
  run fp32_b16_near_cap batch.size=16 $NEAR
  run fp32_b8_near_cap batch.size=8 $NEAR
  # the same job again, the variable given from outside: env=tuned sets it inside the run already, and
  # tests/test_gpu.py shows that takes (so this is a second try of fp32_b16_near_cap, not another allocator)
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run fp32_b16_near_cap_expandable batch.size=16 $NEAR
  run fp32_b16_1800 batch.size=16 data.length_mean=1650 data.length_std=100 data.length_max=1800
elif [ "$name" = depth ]; then
  COMMON="model=polyglot-ko-12.8b peft=qlora $BF16 trainer.gradient_checkpointing=true batch=16 trainer.max_steps=3
          measure.warmup_steps=1 logger=none diagnostics.enabled=false"
  for layers in 1 2 4 8 16; do run "L$layers" model.arch.num_hidden_layers=$layers; done
elif [ "$name" = largest ]; then
  # memory is the question: a few steps reach the peak
  SWEEP_TIMEOUT=${SWEEP_TIMEOUT_EACH:-250}
  for model in $models; do
    COMMON="sweep=fit sweep.plan=all model=$model peft=qlora $BF16 trainer.gradient_checkpointing=true
            gpu.memory_cap_gb=24 trainer.max_steps=6 measure.warmup_steps=2 logger=none"
    sweep "largest_${model}_short" batch.size=16,32,64,128 batch.effective=128
    sweep "largest_${model}_long" $LONG batch.size=4,8,16,32 batch.effective=32
  done
else
  sweep $name experiment=batch_vs_accum_saturation $args logger=none
fi
