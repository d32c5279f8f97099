"""Python's compiled bytecode, kept where the next process finds it when the packages' own folders are read-only.

Python caches each module's bytecode in a `__pycache__` beside its source. Where that folder can't be written (a
read-only container image: Apptainer's squashfs on a cluster, a read-only virtualenv), every process compiles
torch's, transformers' and accelerate's Python again, and a sweep pays it in every job. On one H200 machine whose
torch was installed so, a warm job's start was mostly that: cProfile counted 8.7 s in `compile()` over 5,122
modules (experiments/speed, G3), much of it inside the time to the first step (the Trainer's lazy imports of
FSDP and tensor parallelism). Pointing `sys.pycache_prefix` at TRAINSWEEP_CACHE/pycache lets the first job write
the bytecode and the next ones read it; Python checks each file's source stamp as it does in __pycache__.

Nothing changes where torch's folder is writable, where a prefix is already set (PYTHONPYCACHEPREFIX), or where
writing bytecode is turned off (PYTHONDONTWRITEBYTECODE, `python -B`): the user's choice stands.
TRAINSWEEP_PYCACHE=off turns it off."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def read_only_bytecode(package: str = "torch") -> bool:
    """Whether `package`'s bytecode can't be cached beside it: its __pycache__ (or, without one, its folder)
    is not writable. Found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return False
    folder = Path(spec.origin).parent
    cache = folder / "__pycache__"
    return not os.access(cache if cache.is_dir() else folder, os.W_OK)


def cache_elsewhere_if_read_only(cache_root: Path) -> Path | None:
    """Set sys.pycache_prefix to cache_root/pycache where torch's bytecode can't be cached beside it; the prefix
    set, or None where nothing changed. Call it before torch is imported (src/run.py does, first thing)."""
    if sys.dont_write_bytecode or sys.pycache_prefix or os.environ.get("TRAINSWEEP_PYCACHE", "").lower() == "off":
        return None
    if not read_only_bytecode():
        return None
    prefix = (cache_root / "pycache").resolve()
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:  # an unwritable cache: the run says so later (src/runner.py); bytecode stays as it was
        return None
    sys.pycache_prefix = str(prefix)
    return prefix
