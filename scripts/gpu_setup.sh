#!/usr/bin/env bash
# On the GPU machine (source it): install the carried .whl/ wheels into /tmp/site and put them and the
# repo on PYTHONPATH, then show what the run will use.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# datasets 5.x needs pyarrow >= 24; an older pyarrow there takes datasets 4.0 (pyarrow >= 15) from .whl/alt/
if ! python3 -c "import datasets" 2>/dev/null && ls .whl/alt/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/alt/*.whl
fi
python3 - <<'PY'
import importlib
for name in ("torch", "transformers", "peft", "accelerate", "datasets", "pyarrow", "hydra", "omegaconf",
             "pandas", "matplotlib", "pynvml", "bitsandbytes", "wandb", "submitit"):
    try:
        mod = importlib.import_module(name)
        print(f"{name} {getattr(mod, '__version__', '?')}", end="; ")
    except Exception as exc:
        print(f"{name} MISSING ({type(exc).__name__})", end="; ")
import torch
print("\n" + (torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"))
PY
