#!/usr/bin/env bash
# Issue 3's GPU evidence, on the device machine with .whl and .gpu/before (the runner before the host-cost
# fixes) carried. Part A: runner vs bare loop at bs 8 and 32 (truth, runner overhead, memory vs nvidia-smi)
# and where the runner's host time goes. Part B: the verdict on constructed cases and measurement overhead.
# Part C: measurement overhead in one warm process (alternating passes), the Trainer's per-step model walks,
# and a runner run with GC accounting.
#   bash scripts/gpu_measurement.sh A|B|C    results: $OUT/measurement_{A,B,C}.jsonl and logs
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J="$OUT/measurement_$1.jsonl"
Q="model=qwen3"
runner() {  # label, overrides...: one isolated runner process, its report appended to $J
  local label=$1; shift
  python3 -m src.run "$@" hydra.run.dir=/tmp/runs/$label > /tmp/runs_$label.log 2>&1
  python3 scripts/collect.py "$label" /tmp/runs/$label/report.json "$J" && grep -A13 "trainsweep report" /tmp/runs_$label.log | grep -E "step time|throughput|breakdown|verdict|memory|status"
}
if [ "$1" = A ]; then
  B8="$Q batch=8 trainer.max_steps=60 measure.warmup_steps=15"
  runner runner_bs8 $B8
  (cd .gpu/before && python3 -m src.run $B8 hydra.run.dir=/tmp/runs/before_bs8 > /tmp/before.log 2>&1)
  python3 scripts/collect.py before_bs8 /tmp/runs/before_bs8/report.json "$J"
  python3 -m benchmarks.bare_loop $B8 | tee -a "$J"
  B32="$Q batch=32 trainer.max_steps=30 measure.warmup_steps=8"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/smi_bs32.log" &
  SMI=$!
  runner runner_bs32 $B32
  kill $SMI
  echo "{\"name\": \"nvidia_smi_bs32\", \"max_used_mib\": $(sort -n "$OUT/smi_bs32.log" | tail -1)}" | tee -a "$J"
  python3 -m benchmarks.bare_loop $Q batch=32 trainer.max_steps=24 measure.warmup_steps=8 | tee -a "$J"
  python3 -m benchmarks.profile_runner $Q batch=8 trainer.max_steps=30 measure.warmup_steps=10 > "$OUT/profile_bs8.txt" 2>&1
  grep -A28 "Ordered by: internal" "$OUT/profile_bs8.txt" | head -32
elif [ "$1" = C ]; then
  python3 -m benchmarks.overhead ab 4 $Q batch=8 trainer.max_steps=40 measure.warmup_steps=10 | tee -a "$J"
  python3 -m benchmarks.overhead internals $Q batch=8 | tee -a "$J"
  runner runner_bs8_gc $Q batch=8 trainer.max_steps=60 measure.warmup_steps=15
else
  runner host_bs1 $Q batch=1 trainer.max_steps=40 measure.warmup_steps=10
  runner data_slow_bs8 $Q batch=8 debug=slow_data dataloader=basic trainer.max_steps=25 measure.warmup_steps=5
  runner memory_cap_bs16 $Q batch=16 gpu.memory_cap_gb=40 trainer.max_steps=30 measure.warmup_steps=8
  python3 -m benchmarks.overhead hooks $Q batch=8 | tee -a "$J"
  python3 -m benchmarks.overhead ab 2 $Q batch=8 padding=max_length trainer.max_steps=60 measure.warmup_steps=10 | tee -a "$J"
fi
