#!/usr/bin/env bash
# How a Qwen3-4B LoRA job scales from one GPU to two, and whether FSDP trains what one card can't hold
# (experiments/scaling/README.md), in one call on one machine:
# 1. one GPU vs two (torchrun DDP) at the best single-GPU config of experiments/batch_vs_accum
#    (Qwen3-4B shape, LoRA classification, bs 16);
# 2. a full fine-tune of the Qwen3-4B shape with fp32 weights and AdamW states (4.02B x 16 bytes = 64 GB
#    before activations: an 80 GB card holds it at bs 4, 60 GB allocated on an H200), on one GPU, then FSDP over
#    both without the final save, then with it (a watchdog prints the ranks' stacks if it hangs, as it did once).
# Device: two GPUs of one host (nvidia-h100-x2 or nvidia-h200-x2). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/scaling/gpu.sh
# Results: $OUT/scaling_reports.jsonl (one line per run) and $OUT/scaling.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/scaling.log REPORTS=$OUT/scaling_reports.jsonl
LORA="model=qwen3 batch=16 padding=max_length trainer.max_steps=40 measure.warmup_steps=10 logger=none"
FULL_FT="model=qwen3 peft=none precision=fp32 batch=4 padding=max_length trainer.max_steps=20 measure.warmup_steps=5 logger=none"
ONE="env CUDA_VISIBLE_DEVICES=0 python3" TWO="torchrun --nproc_per_node=2"
LAUNCH=$ONE run one_gpu $LORA
LAUNCH=$TWO run two_gpu_ddp $LORA
LAUNCH=$ONE run one_gpu_full_ft_fp32 $FULL_FT
LAUNCH=$TWO run two_gpu_fsdp_full_ft_fp32 distributed=fsdp $FULL_FT trainer.save_final=false
# The same with the final save (trainer.save_final=true, the default): on two H200s this run trained its 20 steps
# and then printed nothing for 5 minutes; a second call's stack dump found rank 0 inside the save's full-state-dict
# gather and rank 1 gone (results/h200x2/fsdp_saved_stacks.log). save_final now ends in a barrier. So here
# each rank logs to its own file (torchrun --log-dir), and if the job is not done in 150 s the watchdog sends
# SIGUSR1 (src/run.py answers with every thread's stack) to the ranks alone: torchrun's children, not their
# DataLoader workers (forked with the same command line) nor torchrun (USR1 would end it). 30 s later it stops them.
ranks() { for p in $(pgrep -f -- '-u -m src.run'); do grep -qa torchrun "/proc/$(ps -o ppid= -p "$p" | tr -d ' ')/cmdline" && echo "$p"; done; }
( sleep 150; kill -USR1 $(ranks); sleep 30; kill $(ranks) ) 2>/dev/null &
watchdog=$!
LAUNCH="$TWO --log-dir $OUT/fsdp_saved_ranks --redirects 3" run two_gpu_fsdp_full_ft_fp32_saved distributed=fsdp $FULL_FT
kill $watchdog 2>/dev/null
[ -f "$REPORTS" ] && python3 - "$REPORTS" <<'PY'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
rate = lambda n: ((rows.get(n) or {}).get("throughput") or {}).get("real_tokens_per_s")
if rate("one_gpu") and rate("two_gpu_ddp"):
    print(f"2-GPU DDP / 1 GPU: {rate('two_gpu_ddp') / rate('one_gpu'):.2f}x real tokens/s")
PY
