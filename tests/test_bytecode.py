"""src/base/bytecode.py: on a read-only install the bytecode goes to the cache; otherwise nothing changes."""
import os
import sys

import pytest

from src.base import bytecode


@pytest.fixture
def no_prefix(monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("TRAINSWEEP_PYCACHE", raising=False)


def test_a_read_only_torch_sends_bytecode_to_the_cache(tmp_path, monkeypatch, no_prefix):
    torch_dir = os.path.dirname(__import__("torch").__file__)
    writable = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(torch_dir) else writable(p, mode))
    assert bytecode.read_only_bytecode()
    prefix = bytecode.cache_elsewhere_if_read_only(tmp_path)
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


@pytest.mark.parametrize("setting", ["dont_write_bytecode", "prefix", "off", "writable"])
def test_nothing_changes_where_the_user_chose_or_torch_is_writable(setting, tmp_path, monkeypatch, no_prefix):
    if setting != "writable":
        monkeypatch.setattr(os, "access", lambda p, mode: False)
    if setting == "dont_write_bytecode":
        monkeypatch.setattr(sys, "dont_write_bytecode", True)
    elif setting == "prefix":
        monkeypatch.setattr(sys, "pycache_prefix", "/somewhere")
    elif setting == "off":
        monkeypatch.setenv("TRAINSWEEP_PYCACHE", "off")
    before = sys.pycache_prefix
    assert bytecode.cache_elsewhere_if_read_only(tmp_path) is None
    assert sys.pycache_prefix == before
    assert not (tmp_path / "pycache").exists()
