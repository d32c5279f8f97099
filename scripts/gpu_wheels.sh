#!/usr/bin/env bash
# Wheels for what the GPU machine lacks (it cannot reach a package index), downloaded here into .whl/ for Python 3.12
# x86_64, at the versions this .venv runs. The machine has torch, transformers, peft, accelerate, pandas,
# pyarrow and nvidia-ml-py. Usage: scripts/gpu_wheels.sh [--qlora] [--wandb] [--liger] [--trl]   (64 MiB travel in all:
# bitsandbytes is 43 MB and wandb 20 MB, so take one of them at a time)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PKGS="hydra-core omegaconf hydra-submitit-launcher submitit cloudpickle datasets dill multiprocess xxhash"
for arg in "$@"; do
  case "$arg" in
    --qlora) PKGS="$PKGS bitsandbytes" ;;
    --wandb) PKGS="$PKGS wandb" ;;
    --liger) PKGS="$PKGS liger-kernel" ;;
    --trl) PKGS="$PKGS trl" ;;   # scripts/dropin_sft_gpu.py: TRL's SFTTrainer
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
version() { $PY -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true; }
rm -rf .whl && mkdir -p .whl
for pkg in $PKGS; do
  v=$(version "$pkg"); spec="$pkg${v:+==$v}"
  [ "$pkg" = bitsandbytes ] && spec="bitsandbytes"   # not in the CPU venv: the newest wheel
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    --platform any -d .whl "$spec" 2>&1 | grep -v "is ignored" || true
done
# antlr4-python3-runtime 4.9.3 (hydra's parser) is an sdist only: build its wheel here.
$PY -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3 2>&1 | grep -v "is ignored" || true
ls -la .whl && du -sh .whl
