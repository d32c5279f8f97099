"""The memory model's trace is reused only for the same shapes: src/model/memory_cache.py. The trace itself
needs a GPU (tests/test_gpu.py); its key and its file are checked here with a counting stand-in."""
import json

import torch

from src.machine.env import Resolved
from src.model import build, memory_cache
from tests.conftest import compose

RES = Resolved(device="cpu", weights_dtype=torch.float32, amp="none", attention="sdpa")


def batch(tokens: int = 64) -> dict:
    return {"input_ids": torch.arange(tokens).reshape(1, tokens), "labels": torch.tensor([3])}


def key_of(*overrides, b=None):
    cfg = compose(*overrides)
    return memory_cache.key(cfg, RES, build.hf_config(cfg), b if b is not None else batch())


def test_seeds_rates_steps_and_loggers_share_a_trace():
    base = key_of()
    assert key_of("trainer.seed=7", "trainer.lr=1e-3", "trainer.max_steps=500", "data.seed=3", "logger=none",
                  "measure.warmup_steps=3", "trainer.save_final=false") == base


def test_what_changes_the_activations_changes_the_key():
    base = key_of()
    others = [key_of("peft.r=32"), key_of("trainer.gradient_checkpointing=true"), key_of("precision=fp32"),
              key_of("trainer.torch_compile=true"), key_of("model.arch.num_hidden_layers=3"), key_of("peft=none"),
              key_of(b=batch(128)), key_of(b={**batch(), "input_ids": batch()["input_ids"] + 1})]
    assert base not in others and len(set(others)) == len(others)


def test_a_trace_runs_once_then_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(memory_cache.files, "CACHE", tmp_path)
    calls = []

    def trace():
        calls.append(1)
        return {"per_layer": 1.5e8, "outside": 2e7, "layers": 36, "workspace": 3e6}

    first, source = memory_cache.remembered("k1", trace)
    again, source_again = memory_cache.remembered("k1", trace)
    assert len(calls) == 1 and source is None and again == first and source_again == tmp_path / "memory" / "k1.json"
    (tmp_path / "memory" / "k1.json").write_text('{"per_layer": 1')  # a cut write, a hand edit
    memory_cache.remembered("k1", trace)
    assert len(calls) == 2 and json.loads((tmp_path / "memory" / "k1.json").read_text()) == first


def test_a_cache_it_cannot_write_costs_only_the_next_run(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(memory_cache.files, "CACHE", blocked)  # a file where the directory should be
    value, source = memory_cache.remembered("k", lambda: {"per_layer": 1, "outside": 0, "layers": 1, "workspace": 0})
    assert value["per_layer"] == 1 and source is None


def test_a_change_to_the_model_code_makes_new_traces(monkeypatch, tmp_path):
    base = key_of()
    package = tmp_path / "model"
    package.mkdir()
    for source in (memory_cache.Path(memory_cache.__file__).parent).glob("*.py"):
        (package / source.name).write_bytes(source.read_bytes())
    (package / "memory_model.py").write_text((package / "memory_model.py").read_text() + "\n# a fix\n")
    monkeypatch.setattr(memory_cache, "__file__", str(package / "memory_cache.py"))
    assert key_of() != base
