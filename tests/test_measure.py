"""Measurement on the CPU: token counting three ways, warm-up exclusion, the window's arithmetic, stopping
when stable, and the verdict rules on constructed cases."""
import time
from types import SimpleNamespace

import pytest
import torch

from src.measure import Measure, TokenCounter, window_tokens


def _padded_batch():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    return {"input_ids": torch.ones(2, 4, dtype=torch.long), "attention_mask": mask}


def test_tokens_counted_three_ways_for_classification():
    counter = TokenCounter("classification")
    start = counter.snapshot()
    counter.add({**_padded_batch(), "labels": torch.tensor([3, 7])})
    got = window_tokens(start, counter.snapshot())
    assert got == {"samples": 2, "all": 8, "real": 5, "loss": 2}


def test_causal_lm_loss_tokens_skip_the_unpredicted_first_position():
    counter = TokenCounter("causal_lm")
    batch = _padded_batch()
    batch["labels"] = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    start = counter.snapshot()
    counter.add(batch)
    assert window_tokens(start, counter.snapshot())["loss"] == (3 - 1) + (2 - 1)


def test_packed_batches_are_counted_from_the_collators_pack_stats():
    """A packed row has no attention_mask: samples, real and loss tokens come from what the collator packed."""
    from src import data
    from tests.conftest import compose

    counter = TokenCounter("causal_lm")
    rows = [{"input_ids": [5, 6, 7], "length": 3}, {"input_ids": [8, 9], "length": 2}]
    batch = data.build_collator(compose("task=causal_lm", "padding=packed"), pad_id=0)(rows)
    start = counter.snapshot()
    counter.add(batch)
    got = window_tokens(start, counter.snapshot())
    # 64 positions computed (5 real + a dummy tail); each sequence's first token is not scored
    assert got == {"samples": 2, "all": 64, "real": 5, "loss": 3}


def _simulate(durations, warmup, profile=0, stop_rel_error=None, min_steps=3):
    """Drive Measure's hooks like the Trainer does, each step taking the given seconds (CPU clock)."""
    counter = TokenCounter("classification")
    meter = Measure(counter, "cpu", warmup=warmup, max_steps=len(durations), profile_steps=profile,
                    stop_rel_error=stop_rel_error, min_steps=min_steps)
    state, control = SimpleNamespace(global_step=0), SimpleNamespace(should_training_stop=False)
    meter.on_train_begin(None, state, control)
    for step, seconds in enumerate(durations, start=1):
        meter.on_step_begin(None, state, control)
        counter.add({**_padded_batch(), "labels": torch.tensor([0, 1])})
        time.sleep(seconds)
        meter.on_pre_optimizer_step(None, state, control)
        meter.on_optimizer_step(None, state, control)
        state.global_step = step
        meter.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    meter.on_train_end(None, state, control)
    return meter.results(), state.global_step


def test_warmup_steps_are_not_timed_or_counted():
    res, _ = _simulate([0.15, 0.15, 0.01, 0.01, 0.01, 0.01], warmup=2)
    st = res["step_time_s"]
    assert st["n"] == 4 and st["warmup_steps"] == 2
    assert 0.009 < st["mean"] < 0.03  # the slow first steps are excluded
    assert res["tokens"] == {"samples": 8, "all": 32, "real": 20, "loss": 8}  # 4 timed steps x 2 rows
    assert sum(res["breakdown_s"].values()) == pytest.approx(st["mean"], rel=1e-6)  # data+compute+optimizer+other
    assert st["wall_mean"] == pytest.approx(st["mean"], rel=0.05)


def test_stop_when_stable_ends_training_once_the_mean_is_known():
    res, last_step = _simulate([0.01] * 40, warmup=2, stop_rel_error=0.05, min_steps=5)
    assert last_step < 40 and res["stopped_when_stable"]
    assert res["step_time_s"]["n"] >= 5
