"""The debug group's bad habits happen once per step when asked, and trainsweep's own callbacks (timing,
token counting, logging) never do any of them: no .item() sync, no pd.concat, no empty_cache, per step."""
import functools

import pandas as pd
import pytest
import torch

from src.run import run
from tests.conftest import QUICK, compose

WATCHED = {"Tensor.item": (torch.Tensor, "item"), "pd.concat": (pd, "concat"),
           "empty_cache": (torch.cuda, "empty_cache"), "synchronize": (torch.cuda, "synchronize")}


class Spy:
    """Counts calls of the watched functions, split by whether one of our callbacks was on the stack."""

    def __init__(self, monkeypatch):
        self.ours = dict.fromkeys(WATCHED, 0)
        self.bad_habits = dict.fromkeys(WATCHED, 0)
        self.inside: str | None = None
        for name, (owner, attr) in WATCHED.items():
            monkeypatch.setattr(owner, attr, self._counting(name, getattr(owner, attr)))

    def _counting(self, name, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if self.inside == "ours":
                self.ours[name] += 1
            elif self.inside == "bad_habits":
                self.bad_habits[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    def watch(self, obj, label: str):
        """Mark every hook of a callback (and the token counter's add) as `label` while it runs."""
        for attr in dir(obj):
            if attr.startswith("on_") or attr == "add":
                method = getattr(obj, attr)
                setattr(obj, attr, self._marking(method, label))

    def _marking(self, method, label):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            before, self.inside = self.inside, label
            try:
                return method(*args, **kwargs)
            finally:
                self.inside = before
        return wrapper


def _run_watched(tmp_path, monkeypatch, *overrides, steps=8):
    spy = Spy(monkeypatch)
    from src.train import trainer as train

    original = train.trainer_class

    def watched_trainer_class(task, **kwargs):  # kwargs: what run() passes on (packed=...)
        base = original(task, **kwargs)

        class Watched(base):
            def train(self, *args, **kwargs):
                for cb in self.callback_handler.callbacks:
                    module = type(cb).__module__
                    if module == "src.train.debug" and type(cb).__name__ == "BadHabits":
                        spy.watch(cb, "bad_habits")
                    elif module.startswith("src."):
                        spy.watch(cb, "ours")
                if self.token_counter is not None:
                    spy.watch(self.token_counter, "ours")
                return super().train(*args, **kwargs)
        return Watched

    monkeypatch.setattr(train, "trainer_class", watched_trainer_class)
    rep = run(compose(*QUICK, f"trainer.max_steps={steps}", "logger=wandb", *overrides), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    return spy, rep


def test_trainsweeps_own_callbacks_never_sync_concat_or_empty_the_cache(tmp_path, monkeypatch):
    spy, _ = _run_watched(tmp_path, monkeypatch)
    assert spy.ours == dict.fromkeys(WATCHED, 0)


def test_bad_habits_happen_once_per_step(tmp_path, monkeypatch):
    steps = 8
    spy, rep = _run_watched(tmp_path, monkeypatch, "debug=all_bad", steps=steps)
    assert spy.bad_habits["Tensor.item"] == steps and spy.bad_habits["pd.concat"] == steps - 1  # the first row is the frame
    assert spy.ours == dict.fromkeys(WATCHED, 0)
    assert rep["env"]["cudnn_benchmark"] is False and torch.backends.cudnn.deterministic
    torch.backends.cudnn.deterministic = False


@pytest.mark.parametrize("option", ["empty_cache", "item_sync", "pandas_concat", "cudnn_deterministic"])
def test_each_bad_habit_is_one_switch(option):
    cfg = compose(f"debug={option}")
    switches = {k: cfg.debug[k] for k in ("empty_cache", "item_sync", "pandas_concat", "cudnn_deterministic")}
    assert [k for k, on in switches.items() if on] == [option]
