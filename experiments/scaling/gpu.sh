#!/usr/bin/env bash
# How a Qwen3-4B LoRA job scales past one GPU (experiments/scaling/README.md), one mode per device call:
#   bash experiments/scaling/gpu.sh          # DDP vs one GPU at bs 16, and FSDP for a full fine-tune (below)
#   bash experiments/scaling/gpu.sh g1g2     # issue 50 G1 and G2 at experiment=fastest, against one GPU of the
#                                            # same call (the ratios' denominator), then the plain-Trainer anchor
# Device: two GPUs of one host (nvidia-h200-x2; g1g2 adds a 4-GPU DDP run where 4 are visible). Carry .whl
# (scripts/gpu_wheels.sh) and, for g1g2, .gpu (the plain-Trainer anchor hf_trainer_baseline.py).
# Each run's report.json is appended, labelled, to $OUT/scaling_reports.jsonl as it ends: a cut call keeps its rows.
#
# The default mode, in one call on one machine:
# 1. one GPU vs two (torchrun DDP) at the best single-GPU config of experiments/batch_vs_accum
#    (Qwen3-4B shape, LoRA classification, bs 16);
# 2. a full fine-tune of the Qwen3-4B shape with fp32 weights and AdamW states (4.02B x 16 bytes = 64 GB
#    before activations: an 80 GB card holds it at bs 4, 60 GB allocated on an H200), on one GPU, then FSDP over
#    both without the final save, then with it (a watchdog prints the ranks' stacks if it hangs, as it did once).
# Results: $OUT/scaling_reports.jsonl (one line per run) and $OUT/scaling.log.
what=${1:-ddp_fsdp}
# g1g2's full-depth fastest runs take ~1.5 min each: one stuck run must not take the other goals' time
[ "$what" = g1g2 ] && RUN_TIMEOUT=${RUN_TIMEOUT:-170}
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/scaling.log REPORTS=$OUT/scaling_reports.jsonl

two_nodes() {  # LABEL OVERRIDES...: two torchrun agents on this host, one GPU each, that meet at a c10d rendezvous
  # as two hosts would (--nnodes=2, one endpoint, one id): issue 50 G2. Each agent logs to its own file; NCCL's
  # INIT lines say which transport carried the all-reduce between the two "nodes" ($OUT/LABEL_nccl.txt).
  local label=$1; shift
  local dir=$RUNS/$label t0=$SECONDS port=${RDZV_PORT:-29517} node pids=() rcs=()
  rm -rf "$dir"
  for node in 0 1; do
    CUDA_VISIBLE_DEVICES=$node NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout "$RUN_TIMEOUT" \
      torchrun --nnodes=2 --nproc_per_node=1 --node_rank=$node --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:$port \
      --rdzv-id="$label-$CALL_ID" -m src.run $COMMON distributed.nodes=2 "$@" hydra.run.dir="$dir" \
      > "$OUT/${label}_node$node.log" 2>&1 &
    pids+=($!)
  done
  for node in 0 1; do wait "${pids[$node]}"; rcs+=($?); done
  echo "$label: exit ${rcs[*]} (node 0, node 1), $((SECONDS - t0)) s" | tee -a "$RUN_LOG"
  grep -h "NCCL INFO" "$OUT/${label}_node"*.log | grep -E "via|Channel 00|NET/|P2P|SHM" | sort -u | head -40 > "$OUT/${label}_nccl.txt"
  collect "$label" "$dir/report.json" --line
}

if [ "$what" = g1g2 ]; then
  # Issue 50 G1 (DDP on 2 GPUs >= 1.90x one GPU; on 4 >= 3.8x) and G2 (two "nodes" on one host >= 1.85x), every
  # ratio against one_gpu of this call. The 8k budget is pinned: batch.tokens=auto could choose another budget
  # per rank count, and then the runs would differ in more than their GPUs (issue 50's 37,621 tok/s was 8k).
  F="model=qwen3 experiment=fastest batch.tokens=8192 trainer.max_steps=60 measure.warmup_steps=15 logger=none"
  LAUNCH="env CUDA_VISIBLE_DEVICES=0 python3" run one_gpu $F
  LAUNCH="torchrun --nproc_per_node=2" run two_gpu_ddp distributed=ddp $F
  two_nodes two_nodes_rdzv distributed=ddp $F
  # the plain-Trainer anchor (its best config), on GPU 0 of the same call: after the goals' runs, so a slow
  # anchor can't cut them
  # (each JSON row tagged with this call's id, as collect.py tags the reports: a ratio to it is a same-call ratio)
  CUDA_VISIBLE_DEVICES=0 timeout 150 python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b32_group 2>>"$RUN_LOG" \
    | python3 scripts/stamp_call.py | tee "$OUT/anchors.jsonl"
  if [ "$(python3 -c 'import torch; print(torch.cuda.device_count())')" -ge 4 ]; then
    LAUNCH="torchrun --nproc_per_node=4" run four_gpu_ddp distributed=ddp $F
  fi
  # the scaling table and plot from this call's rows (src/report/scaling.py): $OUT/scaling.md, scaling.png. Commit
  # $OUT's files to experiments/scaling/results/h200x2_g1g2/, and experiments/scaling/tables.py builds the README's table
  [ -f "$REPORTS" ] && python3 -m src.report "$REPORTS" > "$OUT/summary_stdout.txt" 2>&1
  cat "$OUT/scaling.md" 2>/dev/null
  exit 0
fi

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
