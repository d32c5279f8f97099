"""sweep.plan=predict end to end on the CPU (the predictor timed on the CPU, `predict_on_cpu`): every cell is
predicted in one process, the planner's waves run, and every cell keeps its prediction and the decision about it;
and the pieces the planner stands on: families, the speed model's depth line, what the copies can't predict."""
import json
import re

import pytest
from omegaconf import OmegaConf

from hydra_plugins.trainsweep import planning
from src import predict
from src.config.errors import ConfigError
from src.config.cli import rewrite
from src.model import speed_model
from tests.conftest import QUICK, cli, compose


@pytest.mark.parametrize("launcher, said", [
    ({"repeats": 1, "params": {}, "predict_on_cpu": False}, "no GPU here, so no cell can be predicted: every cell runs"),
    ({"repeats": 3, "params": {"gpus_per_node": 1}, "predict_on_cpu": False}, "every cell runs (repeats settle close calls")])
def test_a_planned_sweep_that_cannot_predict_says_so_and_leaves_every_cell_to_the_plain_sweep(launcher, said, caplog):
    """None from the planner: the launcher then runs every cell as a sweep without a plan does (test_sweep.py)."""
    import types

    with caplog.at_level("INFO"):
        assert planning.run_planned(types.SimpleNamespace(**launcher), [["batch.size=2"], ["batch.size=4"]], 0) is None
    assert said in caplog.text


def test_sweep_plan_takes_all_or_predict():
    assert rewrite(["sweep.plan=predict"]) == ["hydra.launcher.plan=predict"]
    with pytest.raises(ConfigError, match="sweep.plan"):
        rewrite(["sweep.plan=some"])


def test_a_family_is_everything_but_the_batch_settings():
    a = planning.family(["batch.size=4", "batch.grad_accum=16", "padding=packed", "model=qwen3"])
    b = planning.family(["model=qwen3", "batch.tokens=2048", "padding=packed", "batch=8"])
    assert a == b == "model=qwen3 padding=packed"


def test_the_step_at_depth_is_a_line_through_the_copies():
    step = speed_model.at_depth([0.10, 0.11, 0.10], [0.15, 0.16, 0.15], layers=36)
    assert step.step_s == pytest.approx((0.10 + 0.05 * 35 + 0.11 + 0.05 * 35 + 0.10 + 0.05 * 35) / 3)
    assert step.low <= step.step_s <= step.high
    rate, low, high = step.rate(8192)
    assert low <= rate <= high and rate == pytest.approx(8192 / step.step_s)
    assert speed_model.at_depth([0.2], [0.1], 10).step_s == 0.2  # a faster 2-layer copy is noise: no negative layer
    with pytest.raises(ValueError, match="differ in length"):
        speed_model.at_depth([0.1, 0.1], [0.2], 4)


def test_time_steps_times_blocks_on_the_clock_it_is_given():
    import torch

    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return type("Out", (), {"loss": (self.w * x).sum()})()

    ticks = iter(range(0, 1000, 6))  # every clock read is 6 "seconds" after the one before
    model = Counting()
    out = speed_model.time_steps(model, {"x": torch.ones(2)}, grad_accum=4, amp="none", device="cpu", blocks=2, steps=3,
                                 clock=lambda: next(ticks))
    assert out == [10.0, 10.0]  # a micro-batch 2 s (6 s over 3), x grad_accum 4, plus an AdamW step 2 s
    assert model.calls == 2 + 2 * 3  # a warm-up, one timed alone, then 2 blocks of 3: no more at any grad_accum

    # a micro-batch of 4 ms: blocks of 13 (52 ms); of 0.5 ms: of MAX_STEPS, not more
    for tick, steps in ((0.004, 13), (0.0005, speed_model.MAX_STEPS)):
        ticks = (tick * i for i in range(10_000))
        model = Counting()
        out = speed_model.time_steps(model, {"x": torch.ones(2)}, grad_accum=1, amp="none", device="cpu", blocks=2,
                                     clock=lambda: next(ticks))
        assert model.calls == 2 + 2 * steps
        assert out == pytest.approx([2 * tick / steps] * 2)  # each part's two reads are one tick apart


def test_what_the_copies_cannot_predict_is_said():
    assert "whole-model compile" in predict.why_not(compose("trainer.torch_compile=true", "trainer.compile_scope=model"))
    assert "checkpoint_every" in predict.why_not(compose("trainer.gradient_checkpointing=true", "trainer.checkpoint_every=2"))
    assert predict.why_not(compose("padding=packed_8k")) is None
    cells = [{"cell": "a", "family": "f", "config": OmegaConf.to_container(
        compose("trainer.torch_compile=true", "trainer.compile_scope=model"), resolve=True)}]
    assert predict.predict(cells)[0]["why_not"].startswith("a whole-model compile")


def test_batch_effective_gives_each_micro_batch_its_grad_accum():
    assert [compose("batch=4", "batch.effective=64").batch.grad_accum, compose("batch=16", "batch.effective=64").batch.grad_accum] == [16, 4]
    with pytest.raises(ConfigError, match="not of 48"):
        rewrite(["batch.size=4,8,48", "batch.effective=16"])
    with pytest.raises(ConfigError, match="batch.effective"):
        rewrite(["batch.effective=sixty"])


def test_a_planned_sweep_predicts_every_cell_and_confirms_the_largest_micro_batch_that_fits(tmp_path):
    """sweep=fit end to end: every cell predicted in one process; micro-batch 4 is predicted to fit (no cap on a
    CPU) but runs out of memory (debug=oom), so micro-batch 2 is then the largest that fits, runs, and the
    summary names it; every cell keeps its prediction and the decision about it."""
    proc = cli("-m", "sweep=fit", *QUICK, "batch.size=2,4", "debug=oom", "debug.oom_from_batch=4",
               "hydra.launcher.predict_on_cpu=true", "hydra.launcher.top=1", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 cells predicted" in proc.stdout and "cells ran" in proc.stdout
    predictions = json.loads((tmp_path / ".plan" / "predictions.json").read_text())
    assert len(predictions) == 2 and all(p["why_not"] is None and p["real_tokens_per_s"] > 0 for p in predictions)
    said = (tmp_path / ".plan" / "predict.log").read_text()  # where the prediction's own time went
    assert re.search(r"2 cells predicted in data [\d.]+ s, copies [\d.]+ s, speed [\d.]+ s, memory [\d.]+ s", said), said
    assert "the predictor's process: " in said
    kept = {}
    for d in tmp_path.iterdir():
        if (d / "prediction.json").exists():
            k = json.loads((d / "prediction.json").read_text())
            kept[k["config"]["batch"]["size"]] = k
            assert k["decision"].startswith("ran") == (d / "report.json").exists(), k["decision"]
    assert kept[4]["decision"].startswith("ran: oom") and not kept[4]["largest_fit"]
    assert kept[2]["largest_fit"] and kept[2]["decision"].startswith("ran")
    summary = (tmp_path / "summary.md").read_text()
    assert "the largest micro-batch predicted to fit: bs 2 x ga 32 (ran ok" in summary
