#!/usr/bin/env bash
# Are trainsweep's numbers right, what does measuring cost, and how close is the runner to a bare PyTorch
# loop (experiments/measurement/README.md). One part per device call.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh --qlora) and, for part A, .gpu/before:
# a checkout of this repo from before the runner's host-cost fixes (the "before" row).
#   bash experiments/measurement/gpu.sh A         # runner vs bare loop at bs 8 and 32, memory vs nvidia-smi, cProfile
#   bash experiments/measurement/gpu.sh B         # the verdict on constructed cases; measurement hooks and A/B overhead
#   bash experiments/measurement/gpu.sh C         # overhead in one warm process, the Trainer's per-step model walks,
#                                                 # a runner run with GC accounting
#   bash experiments/measurement/gpu.sh overhead  # measurement on vs off, 60 paired blocks in one warm process, bs 8
# Results: $OUT/measurement_{A,B,C}.jsonl (runner reports and benchmark lines), measurement_{A,B,C}.log;
# overhead: $OUT/overhead.jsonl.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
part=${1:-}
RUN_LOG=$OUT/measurement_$part.log REPORTS=$OUT/measurement_$part.jsonl
Q="model=qwen3"
case "$part" in
A)
  B8="$Q batch=8 trainer.max_steps=60 measure.warmup_steps=15"
  run runner_bs8 $B8
  rm -rf "$RUNS/before_bs8"
  (cd .gpu/before && timeout "$RUN_TIMEOUT" python3 -m src.run $B8 hydra.run.dir="$RUNS/before_bs8" >> "$RUN_LOG" 2>&1)
  collect before_bs8 "$RUNS/before_bs8/report.json" --line
  python3 -m benchmarks.bare_loop $B8 | tee -a "$REPORTS"
  B32="$Q batch=32 trainer.max_steps=30 measure.warmup_steps=8"
  # nvidia-smi's view of memory beside torch's, sampled while the bs 32 run trains
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/smi_bs32.log" &
  SMI=$!
  run runner_bs32 $B32
  kill $SMI
  echo "{\"name\": \"nvidia_smi_bs32\", \"max_used_mib\": $(sort -n "$OUT/smi_bs32.log" | tail -1)}" | tee -a "$REPORTS"
  python3 -m benchmarks.bare_loop $Q batch=32 trainer.max_steps=24 measure.warmup_steps=8 | tee -a "$REPORTS"
  python3 -m benchmarks.profile_runner $Q batch=8 trainer.max_steps=30 measure.warmup_steps=10 > "$OUT/profile_bs8.txt" 2>&1
  grep -A28 "Ordered by: internal" "$OUT/profile_bs8.txt" | head -32
  ;;
B)
  run host_bs1 $Q batch=1 trainer.max_steps=40 measure.warmup_steps=10
  run data_slow_bs8 $Q batch=8 debug=slow_data dataloader=basic trainer.max_steps=25 measure.warmup_steps=5
  run memory_cap_bs16 $Q batch=16 gpu.memory_cap_gb=40 trainer.max_steps=30 measure.warmup_steps=8
  python3 -m benchmarks.overhead hooks $Q batch=8 | tee -a "$REPORTS"
  python3 -m benchmarks.overhead ab 2 $Q batch=8 padding=max_length trainer.max_steps=60 measure.warmup_steps=10 | tee -a "$REPORTS"
  ;;
C)
  python3 -m benchmarks.overhead ab 4 $Q batch=8 trainer.max_steps=40 measure.warmup_steps=10 | tee -a "$REPORTS"
  python3 -m benchmarks.overhead internals $Q batch=8 | tee -a "$REPORTS"
  run runner_bs8_gc $Q batch=8 trainer.max_steps=60 measure.warmup_steps=15
  ;;
overhead)  # fixed shapes, so only measurement differs between the paired blocks
  python3 -m benchmarks.overhead ab 60 $Q batch=8 padding=max_length trainer.max_steps=30 measure.warmup_steps=10 \
    | tee "$OUT/overhead.jsonl"
  ;;
*) echo "usage: $0 A|B|C|overhead"; exit 2 ;;
esac
