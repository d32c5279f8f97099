#!/usr/bin/env bash
# Which of the 12x-slowdown report's fixes buy what, rung by rung, and why its dataloader fix lost
# (experiments/twelve_x_slowdown/README.md). Qwen3-4B shape, full depth.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh) and .gpu, the git-ignored folder holding
# the plain-HF-Trainer anchor script hf_trainer_baseline.py (one JSON line per named config; without it the
# ladder runs and the anchor lines are missing from anchor.jsonl).
#   bash experiments/twelve_x_slowdown/gpu.sh loaders   # the dataloader study: workers, pinning, persistence, prefetch
#   bash experiments/twelve_x_slowdown/gpu.sh ladder A  # the plain-Trainer anchor, then rungs 0-3 (fp32: ~2 minutes each)
#   bash experiments/twelve_x_slowdown/gpu.sh ladder B  # the best plain-Trainer anchor, then rungs 4-8
#   bash experiments/twelve_x_slowdown/gpu.sh ladder C  # the plain Trainer nearest rung 4, then rungs 3 and 4 in one
#                                                       # call in A-B-B-A order (the 3 -> 4 ratio of A and B crosses
#                                                       # calls; the order cancels a drift)
# Results: $OUT/<mode>_reports.jsonl (one labelled report per run, collected as each ends), <mode>.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
mode=${1:-ladder}
RUN_LOG=$OUT/$mode.log REPORTS=$OUT/${mode}_reports.jsonl

case $mode in
  loaders)
    # The host-bound regime where the report's dataloader fix lost 20%: bf16, fixed 320 (one shape, so only
    # the loader differs), bs 8; then bs 32. Each run its own process; the first config again at the end
    # shows the drift across the call.
    COMMON="experiment=twelve_x_slowdown model=qwen3 logger=none padding=max_length diagnostics.enabled=false
            trainer.max_steps=40 measure.warmup_steps=8"
    W2="dataloader.num_workers=2 dataloader.prefetch_factor=2 dataloader.persistent_workers=true"
    run w0_nopin       dataloader=basic
    run w2_pin         dataloader=basic $W2 dataloader.pin_memory=true
    run w2_nopin       dataloader=basic $W2
    run w0_pin         dataloader=basic dataloader.pin_memory=true
    run w4_pin         dataloader=basic $W2 dataloader.num_workers=4 dataloader.pin_memory=true
    run w8_pin         dataloader=basic $W2 dataloader.num_workers=8 dataloader.pin_memory=true
    run w2_pin_b32     dataloader=basic $W2 dataloader.pin_memory=true batch=32
    run w0_nopin_b32   dataloader=basic batch=32
    run w2_nopin_b32   dataloader=basic $W2 batch=32
    run w2_pin_transient dataloader=basic $W2 dataloader.pin_memory=true dataloader.persistent_workers=false
    run w2_pin_prefetch8 dataloader=basic $W2 dataloader.pin_memory=true dataloader.prefetch_factor=8
    run w0_nopin_again dataloader=basic
    ;;
  ladder)
    # One process per rung (conf/rung/twelve_x_*): the experiment's sweep split over two calls to fit 10 minutes.
    COMMON="experiment=twelve_x_slowdown model=qwen3 logger=none"
    if [ "${2:-A}" = C ]; then
      # the plain Trainer nearest rung 4 (bf16 sdpa with checkpointing, bs 16 in one micro-batch), same call
      timeout 150 python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b16_gc 2>>"$RUN_LOG" | python3 scripts/stamp_call.py | tee -a "$OUT/anchor.jsonl"
      run rung_3_env_a +rung=twelve_x_3_env; run rung_4_bf16_a +rung=twelve_x_4_bf16
      run rung_4_bf16_b +rung=twelve_x_4_bf16; run rung_3_env_b +rung=twelve_x_3_env
      exit 0
    elif [ "${2:-A}" = A ]; then
      # The plain HF Trainer at the seed's "before" (fp32, eager, checkpointing, pad 320, bs 8 x ga 2), same call
      timeout 240 python3 .gpu/hf_trainer_baseline.py full seed_before 2>>"$RUN_LOG" | python3 scripts/stamp_call.py | tee -a "$OUT/anchor.jsonl"
      rungs="0_before 1_padding 2_dataloader 3_env"
    else  # and the best plain-Trainer config (bf16 sdpa, bs 32, length-grouped) in this call
      timeout 150 python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b32_group 2>>"$RUN_LOG" | python3 scripts/stamp_call.py | tee -a "$OUT/anchor.jsonl"
      rungs="4_bf16 5_no_checkpointing 6_bs16 7_compile 8_padding_free"
    fi
    for r in $rungs; do run "rung_$r" "+rung=twelve_x_$r"; done
    ;;
  *) echo "usage: $0 loaders | ladder A|B"; exit 2 ;;
esac
