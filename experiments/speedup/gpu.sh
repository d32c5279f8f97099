#!/usr/bin/env bash
# trainsweep.speedup on users' scripts (experiments/speedup/scripts.py), each run as written (P) and with the one added line
# (S), each its own process, P S per script; then the GPU-marked speedup tests.
#   bash experiments/speedup/gpu.sh 4                                # 4 layers of the real widths, all four scripts
#   REPEATS=2 bash experiments/speedup/gpu.sh "" classifier8 sft      # full depth, the scripts named, P S P S
#   MODES="plain graphs" bash experiments/speedup/gpu.sh "" classifier8   # speedup(trainer, graphs=True) instead
# Separate processes of one host-bound plain script ran 7.5k and 11.2k tok/s in two calls (4 layers): repeat.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh --trl).
# Results: $OUT/speedup.jsonl (a line per run, written as each ends), $OUT/speedup.log (their stderr), gpu_tests.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
layers=${1:-}; shift || true
scripts=${*:-classifier8 classifier32 sft bert}
for s in $scripts; do
  for mode in $(for i in $(seq ${REPEATS:-1}); do echo ${MODES:-plain sped}; done); do
    rm -rf "$RUNS/speedup_${s}_$mode"
    timeout ${SCRIPT_TIMEOUT:-300} python3 experiments/speedup/scripts.py $s "$RUNS/speedup_${s}_$mode" $mode $layers 2>>"$OUT/speedup.log" \
      | tail -1 | tee -a "$OUT/speedup.jsonl" | cut -c1-400
  done
done
if [ -n "$layers" ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_speedup.py > "$OUT/gpu_tests.log" 2>&1
  grep -E "^(E  |FAILED|ERROR)|passed|failed" "$OUT/gpu_tests.log" | cut -c1-300 | head -20
fi
