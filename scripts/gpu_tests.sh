#!/usr/bin/env bash
# The GPU-marked tests on the device machine (carry .whl from scripts/gpu_wheels.sh --qlora).
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tail -15
