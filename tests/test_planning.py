"""sweep.plan=predict end to end on the CPU (the predictor timed on the CPU, `predict_on_cpu`): every cell is
predicted in one process, the planner's waves run, and every cell keeps its prediction and the decision about it;
and the pieces the planner stands on: families, the speed model's depth line, what the copies can't predict."""
import json
import re

import pytest
import torch
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
    B = speed_model.Block
    one = [B(0.10, 0, 0.01), B(0.11, 0, 0.01), B(0.10, 0, 0.01)]
    two = [B(0.15, 0, 0.01), B(0.16, 0, 0.01), B(0.15, 0, 0.01)]
    step = speed_model.at_depth(one, two, layers=36, grad_accum=2)
    assert step.step_s == pytest.approx(2 * (0.10 + 0.05 * 35 + 0.11 + 0.05 * 35 + 0.10 + 0.05 * 35) / 3 + 0.01)
    assert step.low <= step.step_s <= step.high and step.gpu_busy is None  # wall times only: not told apart
    rate, low, high = step.rate(8192)
    assert low <= rate <= high and rate == pytest.approx(8192 / step.step_s)
    assert speed_model.at_depth([B(0.2, 0, 0)], [B(0.1, 0, 0)], 10, 1).step_s == 0.2  # a faster 2-layer copy is noise
    with pytest.raises(ValueError, match="differ in length"):
        speed_model.at_depth(one[:2], two[:1], 4, 1)


def test_host_and_gpu_scale_apart_and_the_slower_sets_the_pace():
    """Copies host-bound at 1 and 2 layers (the head and loss cost the host 8 ms, the GPU 1 ms) whose layers
    cost the GPU more than the host: a line through their wall times would predict the host's pace at 36
    layers; apart, the GPU's is the one that counts."""
    B = speed_model.Block
    one, two = [B(0.010, 0.004, 0.001)] * 3, [B(0.012, 0.007, 0.001)] * 3
    step = speed_model.at_depth(one, two, layers=36, grad_accum=4)
    gpu = 0.004 + 0.003 * 35  # 0.109 s, against the host's 0.010 + 0.002 * 35 = 0.080 s
    assert step.step_s == pytest.approx(4 * gpu + 0.001)
    assert step.gpu_busy == pytest.approx(4 * gpu / step.step_s)
    shallow = speed_model.at_depth(one, two, layers=2, grad_accum=4)  # at 2 layers the host's pace holds
    assert shallow.step_s == pytest.approx(4 * 0.012 + 0.001) and shallow.gpu_busy == pytest.approx(4 * 0.007 / shallow.step_s)


class _Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return type("Out", (), {"loss": (self.w * x).sum()})()


def test_time_steps_times_blocks_on_the_clock_it_is_given():
    ticks = iter(range(0, 1000, 6))  # every clock read is 6 "seconds" after the one before
    model = _Counting()
    out = speed_model.time_steps(model, {"x": torch.ones(2)}, amp="none", device="cpu", blocks=2, steps=3,
                                 clock=lambda: next(ticks))
    assert out == [speed_model.Block(2.0, 0.0, 2.0)] * 2  # a micro-batch 2 s (6 s over 3), an AdamW step 2 s
    assert model.calls == 2 + 2 * 3  # a warm-up, one timed alone, then 2 blocks of 3: no more at any grad_accum

    # a micro-batch of 4 ms: blocks of 13 (52 ms); of 0.5 ms: of MAX_STEPS, not more
    for tick, steps in ((0.004, 13), (0.0005, speed_model.MAX_STEPS)):
        ticks = (tick * i for i in range(10_000))
        model = _Counting()
        out = speed_model.time_steps(model, {"x": torch.ones(2)}, amp="none", device="cpu", blocks=2,
                                     clock=lambda: next(ticks))
        assert model.calls == 2 + 2 * steps
        assert [b.host for b in out] == pytest.approx([tick / steps] * 2)  # each part's two reads are one tick apart


class FakeGpuClock:
    """A GPU that runs each micro-batch in `gpu` s, and whose hold runs dry while shorter than `dry_below` s."""

    def __init__(self, gpu: float, dry_below: float = 0.0):
        self.gpu, self.dry_below, self.holds = gpu, dry_below, []

    def hold(self, seconds):
        self.holds.append(seconds)

    def release(self):
        return None if self.holds[-1] < self.dry_below else self.gpu


def test_a_gpu_clock_splits_host_and_gpu_and_a_dry_hold_is_doubled_or_given_up():
    ticks = (0.01 * i for i in range(10_000))  # a micro-batch's issue: one tick, 10 ms
    clock = FakeGpuClock(gpu=0.03)
    out = speed_model.time_steps(_Counting(), {"x": torch.ones(2)}, amp="none", device="cpu", blocks=3, steps=3,
                                 clock=lambda: next(ticks), gpu_clock=clock, min_block_s=0)
    assert [b.host for b in out] == pytest.approx([0.01] * 3) and [b.gpu for b in out] == pytest.approx([0.03] * 3)
    assert clock.holds[0] == pytest.approx(1.5 * 0.01 + 0.002)  # longer than the synced micro-batch took

    clock = FakeGpuClock(gpu=0.03, dry_below=0.05)  # 17 ms runs dry, 34 too, 68 holds: kept from then on
    ticks = (0.01 * i for i in range(10_000))
    out = speed_model.time_steps(_Counting(), {"x": torch.ones(2)}, amp="none", device="cpu", blocks=2, steps=3,
                                 clock=lambda: next(ticks), gpu_clock=clock, min_block_s=0)
    assert [b.gpu for b in out] == [0.03, 0.03] and clock.holds[2:] == [clock.holds[2]] * 6

    clock = FakeGpuClock(gpu=0.03, dry_below=float("inf"))  # a model that syncs inside: wall time, GPU 0
    ticks = (0.01 * i for i in range(10_000))
    out = speed_model.time_steps(_Counting(), {"x": torch.ones(2)}, amp="none", device="cpu", blocks=2, steps=3,
                                 clock=lambda: next(ticks), gpu_clock=clock, min_block_s=0)
    assert len(clock.holds) == speed_model.HOLD_TRIES and [b.gpu for b in out] == [0.0, 0.0]
    assert [b.host for b in out] == pytest.approx([0.01 / 3] * 2)  # one tick over a block of 3, synced at its ends


def test_memory_between_two_probes_is_read_off_their_line():
    from src.model import memory_model as mm

    def batch(rows, length):
        return {"input_ids": torch.zeros(rows, length), "attention_mask": torch.zeros(rows, length)}

    widest = [batch(2, 320), batch(8, 320), batch(32, 320), batch(64, 320), batch(1, 4096), batch(1, 8192)]
    assert predict.probe_plan(widest) == {1: (0, 3), 2: (0, 3)}  # the packs differ in length: each probed
    assert predict.probe_plan(widest[:2]) == {}
    at = mm.interpolate({"peak": 10.0, "kept": 4.0}, {"peak": 70.0, "kept": 34.0}, 2, 8, 4)
    assert at == {"peak": 30.0, "kept": 14.0}


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
