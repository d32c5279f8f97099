"""Python's compiled bytecode, kept in trainsweep's cache when Python would not keep it beside the sources.

Python caches each module's bytecode in a `__pycache__` beside its source, unless writing bytecode is turned off
(PYTHONDONTWRITEBYTECODE=1, set by many container images and by both machines this project runs on) or that folder
is read-only (a read-only image: Apptainer's squashfs on a cluster). Where torch was installed without its
bytecode as well, every process compiles torch's, transformers' and accelerate's Python again, and a sweep pays it
in every job. Importing what a run imports, in a fresh process, took 20.2 s without the bytecode and 8.7-9.7 s
with it on one H200 machine (experiments/speed, results/h200_firststep_call4_bytecode.txt); part of it falls
inside the run's time to its first step (the Trainer's lazy imports of FSDP and tensor parallelism).

So src/run.py, before torch loads, points `sys.pycache_prefix` at TRAINSWEEP_CACHE/pycache and lets Python write
there: the first job compiles, the next ones read (Python checks each file against its source, as in
__pycache__). The processes a command-line run starts (inductor's compile workers, the sweep launcher's jobs)
inherit the prefix through PYTHONPYCACHEPREFIX (hand_down). Nothing is written beside the sources. Nothing
changes where torch's bytecode is there already (pip compiles it at install; a prefix would make Python ignore
those files), where Python can write it, or where a prefix is set (PYTHONPYCACHEPREFIX); TRAINSWEEP_PYCACHE=off
keeps Python's own behaviour. The report's env.pycache_prefix says where it went."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def bytecode_kept(package: str = "torch") -> bool:
    """Whether Python finds or keeps `package`'s bytecode beside its sources: its compiled __init__ is there
    already (pip compiles at install), or writing is on and its __pycache__ (or, without one, its folder) is
    writable. Found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return True
    if Path(importlib.util.cache_from_source(spec.origin)).exists():
        return True
    folder = Path(spec.origin).parent
    cache = folder / "__pycache__"
    return not sys.dont_write_bytecode and os.access(cache if cache.is_dir() else folder, os.W_OK)


def cache_in(cache_root: Path) -> Path | None:
    """Cache bytecode under cache_root/pycache where Python would not cache torch's beside it; the prefix set,
    or None where nothing changed. Call it before torch is imported (src/run.py does, first thing)."""
    if sys.pycache_prefix or os.environ.get("TRAINSWEEP_PYCACHE", "").lower() == "off":
        return None
    if bytecode_kept():  # also where pip compiled it: a prefix would make Python ignore those files
        return None
    prefix = (cache_root / "pycache").resolve()
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:  # an unwritable cache: the run says so later (src/runner.py); bytecode stays as it was
        return None
    sys.pycache_prefix, sys.dont_write_bytecode = str(prefix), False
    return prefix


def hand_down(prefix: Path | None) -> None:
    """The processes a command-line run starts use the same bytecode: inductor's compile workers import torch in a
    process of their own, and a cold compile builds its kernels one by one in the run's process until they are up.
    Only the command line calls it (src/run.py's cli()): a notebook or a test that imports src.run keeps its
    environment as it was."""
    if prefix is not None:
        os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # under the prefix nothing is written beside the sources
