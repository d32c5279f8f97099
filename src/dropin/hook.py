"""trainsweep on every Trainer a script builds, without a line changed in the script: `Trainer.train` wrapped so
that each Trainer, on its first train() call, gets `attach` (modes "measure") and/or `speedup` ("speedup") before
it trains. `trainsweep measure -- python train.py` (launch.py) sets this up in the child through a sitecustomize
(site/sitecustomize.py) that calls `when_imported()`: the wrap happens the moment the script imports
transformers.trainer, so the script, TRL's trainers and any Trainer subclass meet the wrapped train().

What trainsweep does there is guarded like the rest of the drop-in: if attaching fails, one line says so and
train() runs as the script wrote it. Errors of the script's own training pass through untouched.
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import json
import os
import sys
from pathlib import Path

from .guard import Guard

TARGET = "transformers.trainer"
MODES, OUT, SPEEDUP_ARGS, REPORTS = "TRAINSWEEP_MODES", "TRAINSWEEP_OUT", "TRAINSWEEP_SPEEDUP_ARGS", "TRAINSWEEP_REPORTS"
_settings: dict = {}


def install(modes, out_dir: str | None = None, speedup_args: dict | None = None, reports: str | None = None) -> None:
    """Wrap Trainer.train now if transformers.trainer is loaded, else the moment it is. modes: {"measure"},
    {"speedup"} or both; out_dir: reports go to out_dir (out_dir/trainer-<k> for a script's k-th Trainer) rather
    than <output_dir>/trainsweep; reports: a file each written report's path is appended to."""
    _settings.update(modes=frozenset(modes), out=out_dir, speedup=dict(speedup_args or {}), reports=reports, count=0)
    if TARGET in sys.modules:
        _wrap(sys.modules[TARGET])
    elif not any(isinstance(f, _WhenImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenImported())


def when_imported() -> None:
    """install() from the environment the launcher set (the sitecustomize's call)."""
    modes = {m for m in os.environ.get(MODES, "").split(",") if m}
    if modes:
        install(modes, os.environ.get(OUT) or None, json.loads(os.environ.get(SPEEDUP_ARGS) or "{}"),
                os.environ.get(REPORTS) or None)


class _WhenImported(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it lets the other finders find transformers.trainer and wraps Trainer.train once the
    module has run."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path, target=None):
        if name != TARGET or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _ThenWrap(spec.loader)
        sys.meta_path.remove(self)
        return spec


class _ThenWrap(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _wrap(module)


def _wrap(module) -> None:
    trainer_cls = getattr(module, "Trainer", None)
    if trainer_cls is None or getattr(trainer_cls.train, "__trainsweep__", False):
        return
    original = trainer_cls.train

    @functools.wraps(original)
    def train(self, *args, **kwargs):
        if "_trainsweep_hooked" not in vars(self):
            self._trainsweep_hooked = True
            self._trainsweep_callback = Guard().run("attaching", _attach, self)
        result = original(self, *args, **kwargs)
        callback = vars(self).get("_trainsweep_callback")
        if callback is not None and _settings.get("reports"):  # every train() call's report, each in its folder
            Guard().run("listing the report", _list_report, callback)
        return result

    train.__trainsweep__ = True
    trainer_cls.train = train


def _attach(trainer):
    """attach and/or speedup on this Trainer, as the launcher asked; the callback (None without "measure")."""
    from ..levers.apply import speedup
    from .callback import attach

    modes, k = _settings["modes"], _settings["count"]
    _settings["count"] += 1
    out = _settings["out"]
    out = str(Path(out) / f"trainer-{k}") if out and k else out
    if "measure" in modes:
        return attach(trainer, out_dir=out, speedup=(_settings["speedup"] or True) if "speedup" in modes else False)
    if "speedup" in modes:
        speedup(trainer, **_settings["speedup"])
    return None


def _list_report(callback) -> None:
    path = callback.out_dir / "report.json" if callback.out_dir else None
    if path is not None and path.exists() and callback.trainer.is_world_process_zero():
        with open(_settings["reports"], "a") as f:
            f.write(f"{path}\n")
