#!/usr/bin/env bash
# Issue 2's GPU check, one device call: the GPU tests, then the user's command `python -m src.run model=qwen3 batch=16`.
# Run on the device machine from the repo root with .whl carried (scripts/gpu_wheels.sh --qlora).
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -25
python3 -m src.run model=qwen3 batch=16 hydra.run.dir=/tmp/qwen3_bs16 2>&1 | grep -v "it/s\]" | tail -30
cp /tmp/qwen3_bs16/report.json "${OUT:-/tmp}/qwen3_bs16_report.json"
cp /tmp/qwen3_bs16/report.md "${OUT:-/tmp}/qwen3_bs16_report.md"
