# trainsweep. `make run` and `make test` set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Without a GPU, torch 2.13.0 here is a CPU build on local disk (seconds); a bare `torch` can pull a
# multi-GB CUDA build. With nvidia-smi present, pip picks a CUDA build. Override: make setup TORCH_SPEC=...
GPU := $(shell command -v nvidia-smi 2>/dev/null)
TORCH_SPEC ?= $(if $(GPU),torch>=2.4,torch==2.13.0)
# With a GPU: QLoRA's bitsandbytes and the speed extras that ship wheels (liger-kernel). flash-attn is left out:
# it has no prebuilt wheels on PyPI (a source build needs nvcc and takes long), and trainsweep's padding-free
# attention uses torch's own varlen flash kernel. Override: make setup EXTRAS=dev
comma := ,
EXTRAS ?= $(if $(GPU),dev$(comma)qlora$(comma)speed,dev)
# make run's default job: on a GPU, Qwen3-4B's real width with 4 of its 36 layers (per-layer speed carries
# over; builds in seconds), unless ARGS names a model; on a CPU, the tiny model.
RUN_DEFAULT := $(if $(GPU),$(if $(findstring model=,$(ARGS)),,model=qwen3 model.arch.num_hidden_layers=4))

.PHONY: help setup run test test-all sweep wheels clean
help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

setup: $(VENV)/.installed  ## create .venv with everything (once; again when pyproject.toml changes)

run: setup  ## the main job: tiny Qwen3 classifier, LoRA, synthetic data (~1 min on a CPU); on a GPU, 4 real-width layers
	@$(if $(RUN_DEFAULT),echo "make run: a GPU is here: the job is $(RUN_DEFAULT) (ARGS='model=...' picks another)")
	$(PY) -m src.run $(RUN_DEFAULT) $(ARGS)

test: setup  ## the CPU suite without the tests marked slow (GPU tests skip without a GPU): what CI runs
	$(PY) -m pytest -q -x -n 2 --dist loadfile -m "not slow" $(PYTEST_ARGS)

test-all: setup  ## every CPU test, the slow ones too (a few more minutes: multi-process sweeps, every task's CLI run)
	$(PY) -m pytest -q -x -n 2 --dist loadfile $(PYTEST_ARGS)

sweep: setup  ## a 4-point CPU sweep: batch 2,4 x grad_accum 1,2
	$(PY) -m src.run -m batch=2,4 batch.grad_accum=1,2 $(ARGS)

wheels:  ## wheels the GPU machine lacks, into .whl/ (carried there; scripts/gpu_setup.sh installs them)
	scripts/gpu_wheels.sh

clean:  ## remove outputs (keeps .venv)
	rm -rf outputs/runs outputs/multiruns
