#!/usr/bin/env bash
# The GPU-marked tests on the device machine; with `command`, then the README's own command
# `python -m src.run model=qwen3 batch=16` (does the everyday run work on a real card?).
# Device: one GPU (nvidia-h100-x1; tests/test_gpu.py's two-GPU tests run on nvidia-h100-x2).
# Carry .whl (scripts/gpu_wheels.sh --qlora).
#   bash scripts/gpu_tests.sh            # the tests
#   bash scripts/gpu_tests.sh command    # the tests, then the command: $OUT/qwen3_bs16_report.{json,md}, qwen3_bs16.log
#   PYTEST_K="liger or qlora" bash scripts/gpu_tests.sh   # a subset (pytest -k); the full pytest output is $OUT/gpu_tests.log
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider -m gpu --durations=5 ${PYTEST_K:+-k "$PYTEST_K"} tests/ > "$OUT/gpu_tests.log" 2>&1
grep -E "^(E  |FAILED|ERROR)|passed|failed" "$OUT/gpu_tests.log" | cut -c1-300 | head -40
if [ "${1:-}" = command ]; then
  RUN_LOG=$OUT/qwen3_bs16.log
  run qwen3_bs16 model=qwen3 batch=16
  grep -v "it/s\]" "$RUN_LOG" | tail -30
  cp "$RUNS/qwen3_bs16/report.json" "$OUT/qwen3_bs16_report.json"
  cp "$RUNS/qwen3_bs16/report.md" "$OUT/qwen3_bs16_report.md"
fi
