#!/usr/bin/env bash
# Issue 10's GPU evidence, on a 2-GPU device machine (nvidia-h100-x2 or nvidia-h200-x2) with .whl carried:
# 1. one GPU vs two (torchrun DDP) at the best single-GPU config of experiments/batch_vs_accum
#    (Qwen3-4B shape, LoRA classification, bs 16), in one call on one machine;
# 2. an FSDP full fine-tune of the Qwen3-4B shape with fp32 weights and AdamW states (4.02B x 16 bytes =
#    64 GB before activations: more than one 80 GB card holds at this batch), sharded over both GPUs.
# Results: $OUT/scaling_reports.jsonl (one line per run) and $OUT/scaling.log.
#   bash scripts/gpu_scaling.sh
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
COMMON="model=qwen3 batch=16 padding=max_length trainer.max_steps=40 measure.warmup_steps=10 logger=none"
run() {  # NAME LAUNCHER... -- OVERRIDES...
  local name=$1; shift
  local dir=/tmp/scaling/$name
  "$@" hydra.run.dir=$dir >> "$OUT/scaling.log" 2>&1
  echo "$name: exit $?" | tee -a "$OUT/scaling.log"
  python3 scripts/collect.py "$name" "$dir/report.json" "$OUT/scaling_reports.jsonl"
}
run one_gpu env CUDA_VISIBLE_DEVICES=0 python3 -m src.run $COMMON
run two_gpu_ddp torchrun --nproc_per_node=2 -m src.run $COMMON
run one_gpu_full_ft_fp32 env CUDA_VISIBLE_DEVICES=0 python3 -m src.run model=qwen3 peft=none precision=fp32 batch=4 \
  padding=max_length trainer.max_steps=20 measure.warmup_steps=5 logger=none
run two_gpu_fsdp_full_ft_fp32 torchrun --nproc_per_node=2 -m src.run distributed=fsdp model=qwen3 peft=none \
  precision=fp32 batch=4 padding=max_length trainer.max_steps=20 measure.warmup_steps=5 logger=none
python3 - "$OUT/scaling_reports.jsonl" <<'PY'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
for name, r in rows.items():
    th, mem = r.get("throughput") or {}, r.get("memory_gb") or {}
    print(f"{name}: {r['status']} {th.get('real_tokens_per_s') or 0:,.0f} real tok/s, "
          f"peak alloc {mem.get('peak_allocated') or 0:.1f} GB, {r.get('error') or ''}")
rate = lambda n: ((rows.get(n) or {}).get("throughput") or {}).get("real_tokens_per_s")
if rate("one_gpu") and rate("two_gpu_ddp"):
    print(f"2-GPU DDP / 1 GPU: {rate('two_gpu_ddp') / rate('one_gpu'):.2f}x real tokens/s")
PY
