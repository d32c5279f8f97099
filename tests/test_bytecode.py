"""src/base/bytecode.py: where Python keeps no bytecode (writing turned off, or a read-only install) it goes to the
cache; where Python keeps it, or the user set a prefix or TRAINSWEEP_PYCACHE=off, nothing changes."""
import os
import sys

import pytest

from src.base import bytecode


@pytest.fixture
def no_prefix(monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("TRAINSWEEP_PYCACHE", raising=False)
    for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):  # set first so monkeypatch puts them back
        monkeypatch.setenv(name, "1")
        monkeypatch.delenv(name)


@pytest.fixture
def torch_not_compiled(monkeypatch):
    """torch installed without its bytecode (the H200 machine's: no __pycache__ at all)."""
    import importlib.util

    torch_dir = os.path.dirname(__import__("torch").__file__)
    compiled = importlib.util.cache_from_source
    monkeypatch.setattr(importlib.util, "cache_from_source",
                        lambda path: "/nonexistent.pyc" if path.startswith(torch_dir) else compiled(path))
    return torch_dir


def test_a_read_only_torch_sends_bytecode_to_the_cache(tmp_path, monkeypatch, no_prefix, torch_not_compiled):
    writable = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(torch_not_compiled) else writable(p, mode))
    assert not bytecode.bytecode_kept()
    prefix = bytecode.cache_in(tmp_path)
    assert prefix == (tmp_path / "pycache").resolve() and prefix.is_dir()
    assert sys.pycache_prefix == str(prefix)


def test_a_read_only_torch_compiles_into_the_prefix_once(tmp_path, monkeypatch, no_prefix):
    """What the prefix buys: a module imported under it leaves its bytecode there for the next process."""
    import importlib

    source = tmp_path / "src_ro" / "ro_module.py"
    source.parent.mkdir()
    source.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(source.parent))
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    importlib.import_module("ro_module")
    assert list((tmp_path / "pycache").rglob("ro_module.*.pyc"))
    assert not (source.parent / "__pycache__").exists()


def test_bytecode_turned_off_goes_to_the_cache(tmp_path, monkeypatch, no_prefix, torch_not_compiled):
    """PYTHONDONTWRITEBYTECODE=1 (both machines this project runs on): written under the cache, never beside the sources."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    prefix = bytecode.cache_in(tmp_path)
    assert prefix == (tmp_path / "pycache").resolve()
    assert sys.pycache_prefix == str(prefix) and sys.dont_write_bytecode is False


def test_the_processes_a_run_starts_use_the_same_cache(tmp_path, monkeypatch, no_prefix, torch_not_compiled):
    """inductor's compile workers are processes of their own: those of a command-line run import torch with the
    run's bytecode, and write what they add under the prefix, not beside the sources."""
    import subprocess

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    prefix = bytecode.cache_in(tmp_path)
    assert "PYTHONPYCACHEPREFIX" not in os.environ  # importing src.run changes no one's environment
    bytecode.hand_down(prefix)  # the command line's cli()
    child = subprocess.run([sys.executable, "-c", "import sys; print(sys.pycache_prefix, sys.dont_write_bytecode)"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.split() == [str(prefix), "False"]


@pytest.mark.parametrize("setting", ["prefix", "off", "written", "compiled_at_install"])
def test_nothing_changes_where_the_user_chose_or_python_has_the_bytecode(setting, tmp_path, monkeypatch, no_prefix, request):
    """compiled_at_install: pip's own .pyc beside the sources (this venv's), which Python reads even with writing
    off; a prefix would make it ignore them and compile everything again."""
    if setting != "compiled_at_install":
        request.getfixturevalue("torch_not_compiled")
    monkeypatch.setattr(sys, "dont_write_bytecode", setting != "written")
    if setting == "prefix":
        monkeypatch.setattr(sys, "pycache_prefix", "/somewhere")
    elif setting == "off":
        monkeypatch.setenv("TRAINSWEEP_PYCACHE", "off")
    before = (sys.pycache_prefix, sys.dont_write_bytecode)
    assert bytecode.cache_in(tmp_path) is None
    assert (sys.pycache_prefix, sys.dont_write_bytecode) == before
    assert "PYTHONPYCACHEPREFIX" not in os.environ
    assert not (tmp_path / "pycache").exists()


@pytest.mark.slow  # compiles every module a run imports (~16 s on 2 cores)
def test_a_run_started_without_bytecode_caches_it_and_says_where(tmp_path):
    """The real entry point in a fresh process, PYTHONDONTWRITEBYTECODE=1 as on this project's machines, torch's
    bytecode hidden from it (a prefix of its own, empty), so the run's prefix is where it goes."""
    import json
    import subprocess

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TRAINSWEEP_CACHE": str(tmp_path / "cache")}
    env.pop("TRAINSWEEP_PYCACHE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)  # a prefix from outside would make the run stand aside
    subprocess.run([sys.executable, "-c", "import runpy, sys; sys.argv[0] = 'src.run'; "
                    "from unittest import mock; import importlib.util as u; "
                    "mock.patch.object(u, 'cache_from_source', lambda p: '/nonexistent.pyc').start(); "
                    "runpy.run_module('src.run', run_name='__main__', alter_sys=True)", "trainer.max_steps=1", "logger=none", "trainer.save_final=false",
                    "diagnostics.enabled=false", "data.size=32", f"hydra.run.dir={tmp_path / 'run'}"],
                   env=env, check=True, capture_output=True, timeout=240)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["env"]["pycache_prefix"] == str((tmp_path / "cache" / "pycache").resolve())
    assert list((tmp_path / "cache" / "pycache").rglob("*.pyc"))
    assert report["timing_s"]["imports"] > 0  # a command-line run says what its imports took (an in-process run() doesn't)
