# trainsweep. `make run` and `make test` set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Without a GPU, torch 2.13.0 here is a CPU build on local disk (seconds); a bare `torch` can pull a
# multi-GB CUDA build. With nvidia-smi present, pip picks a CUDA build. Override: make setup TORCH_SPEC=...
TORCH_SPEC ?= $(if $(shell command -v nvidia-smi 2>/dev/null),torch>=2.4,torch==2.13.0)

.PHONY: help setup run test test-all sweep wheels clean
help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed  ## create .venv with everything (once; again when pyproject.toml changes)

run: setup  ## the main job: tiny Qwen3 classifier, LoRA, synthetic data (~1 min on a CPU)
	$(PY) -m src.run $(ARGS)

test: setup  ## fast tests (CPU; GPU tests skip without a GPU)
	$(PY) -m pytest -q -x -n 2 --dist loadfile $(PYTEST_ARGS)

sweep: setup  ## a 4-point CPU sweep: batch 2,4 x grad_accum 1,2
	$(PY) -m src.run -m batch=2,4 batch.grad_accum=1,2 $(ARGS)

wheels:  ## wheels the GPU machine lacks, into .whl/ (carried there; scripts/gpu_setup.sh installs them)
	scripts/gpu_wheels.sh

clean:  ## remove outputs (keeps .venv)
	rm -rf outputs/runs outputs/multiruns
