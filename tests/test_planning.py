"""sweep.plan=predict end to end on the CPU (the predictor timed on the CPU, `predict_on_cpu`): every cell is
predicted in one process, the planner's waves run, and every cell keeps its prediction and the decision about it;
and the pieces the planner stands on: families, the speed model's depth line, what the copies can't predict."""
import json
import re

import pytest
import torch
from omegaconf import OmegaConf

from src.plan import predict, speed_model
from src.plan import sweep as planning
from src.config.errors import ConfigError
from src.config.cli import rewrite
from tests.conftest import QUICK, cli, compose


@pytest.mark.parametrize("launcher, said", [
    ({"repeats": 1, "params": {}, "predict_on_cpu": False}, "no GPU here, so no cell can be predicted: every cell runs"),
    ({"repeats": 3, "params": {"gpus_per_node": 1}, "predict_on_cpu": False}, "(repeats settle close calls a plan skips): every cell runs")])
def test_a_planned_sweep_that_cannot_predict_says_so_and_leaves_every_cell_to_the_plain_sweep(launcher, said, caplog):
    """None from the planner: the launcher then runs every cell as a sweep without a plan does (test_sweep.py)."""
    import types

    with caplog.at_level("INFO"):
        why = planning.run_planned(types.SimpleNamespace(**launcher), [["batch.size=2"], ["batch.size=4"]], 0)
    assert said in caplog.text and f"sweep.plan=predict: {why}: every cell runs" in caplog.text  # kept for the summary


def test_sweep_plan_takes_all_or_predict():
    assert rewrite(["sweep.plan=predict"]) == ["hydra.launcher.plan=predict"]
    with pytest.raises(ConfigError, match="sweep.plan"):
        rewrite(["sweep.plan=some"])
    assert rewrite(["sweep.question=largest"]) == ["hydra.launcher.question=largest"]
    with pytest.raises(ConfigError, match="sweep.question.*largest"):
        rewrite(["sweep.question=biggest"])


def test_a_family_is_everything_but_the_batch_settings():
    a = planning.family(["batch.size=4", "batch.grad_accum=16", "padding=packed", "model=qwen3"])
    b = planning.family(["model=qwen3", "batch.tokens=2048", "padding=packed", "batch=8"])
    assert a == b == "model=qwen3 padding=packed"


def test_the_step_at_depth_is_a_line_through_the_copies():
    B = speed_model.Block
    one, two = [B(0.10, 0.01), B(0.11, 0.01), B(0.10, 0.01)], [B(0.15, 0.01), B(0.16, 0.01), B(0.15, 0.01)]
    step = speed_model.at_depth(one, two, layers=36, grad_accum=2)
    assert step.step_s == pytest.approx(2 * (0.10 + 0.05 * 35) + 0.01)  # the median block pair's line
    assert step.high == pytest.approx(2 * (0.11 + 0.05 * 35) + 0.01) and step.low == step.step_s
    hiccup = speed_model.at_depth(one + one[:2], [two[0], two[0], B(0.45, 0.01), two[0], two[1]], 36, 2)
    assert hiccup.step_s == pytest.approx(step.step_s) and hiccup.high > 5 * step.step_s  # one end moves
    rate, low, high = step.rate(8192)
    assert low <= rate <= high and rate == pytest.approx(8192 / step.step_s)
    assert speed_model.at_depth([B(0.2, 0)], [B(0.1, 0)], 10, 1).step_s == 0.2  # a faster 2-layer copy is noise
    with pytest.raises(ValueError, match="differ in length"):
        speed_model.at_depth(one[:2], two[:1], 4, 1)


def test_a_run_pays_each_new_shapes_first_call_on_top_of_the_copies_line():
    B = speed_model.Block
    one, two = [B(0.10, 0.01)] * 3, [B(0.15, 0.01)] * 3
    plain = speed_model.at_depth(one, two, layers=4, grad_accum=2)
    # 11 new shapes in 20 timed steps at 0.15 s each (median of the first calls), the range from their extremes
    step = speed_model.at_depth(one, two, 4, 2, new_shapes_per_step=11 / 20, first_calls=[0.13, 0.22, 0.15])
    assert step.step_s == pytest.approx(plain.step_s + 11 / 20 * 0.15)
    assert (step.low, step.high) == pytest.approx((plain.low + 11 / 20 * 0.13, plain.high + 11 / 20 * 0.22))
    assert speed_model.at_depth(one, two, 4, 2, new_shapes_per_step=0.5, first_calls=None) == plain  # not timed


def test_the_speed_copies_are_2_and_4_layers_4_and_8_for_a_deep_model_and_the_line_runs_through_their_depths():
    assert [speed_model.copy_depths(n) for n in (36, 16, 15, 4, 3, 2, 1)] == [
        (4, 8), (4, 8), (2, 4), (2, 4), (1, 3), (1, 2), (1, 1)]
    B = speed_model.Block
    one, two = [B(0.020, 0.001)] * 5, [B(0.032, 0.002)] * 5  # 2 and 4 layers: 6 ms a layer, 8 ms outside
    step = speed_model.at_depth(one, two, layers=36, grad_accum=1, depths=(2, 4))
    assert step.step_s == pytest.approx(0.020 + 0.006 * 34 + 0.001 + 0.0005 * 34)
    assert speed_model.at_depth(one, two, 4, 1, depths=(2, 4)).step_s == pytest.approx(0.032 + 0.002)  # its own depth
    assert speed_model.at_depth(one, one, 1, 1, depths=(1, 1)).step_s == pytest.approx(0.021)  # a 1-layer model


def test_the_host_time_is_pooled_over_the_familys_host_bound_cells():
    B = speed_model.Block
    def blocks(*ms):
        return [B(m / 1e3, 0.001) for m in ms]
    cells = [(blocks(20, 21, 19, 20, 40), 0.004),   # kernels 4 ms of a 20 ms micro-batch: host-bound
             (blocks(14, 15, 14, 15, 14), 0.003),   # host-bound too, timed in a faster moment of the host
             (blocks(30, 30, 31, 30, 30), 0.029)]   # kernels 29 of 30 ms: GPU-bound, its time says nothing of the host
    host = speed_model.host_time(cells)
    assert host.mean == pytest.approx(0.017) and host.batches == 10  # the 10 host-bound blocks' median
    assert 0.014 <= host.low <= host.mean <= host.high <= 0.021  # the 40 ms hiccup is outside the median's interval
    assert speed_model.host_time(cells[2:]) is None  # no host-bound cell: the host's time is hidden
    assert speed_model.host_time([(blocks(20, 21), None)]) is None  # no kernel time (a CPU): nothing is known host-bound


def test_a_host_bound_cell_takes_the_longer_of_the_families_host_line_and_its_kernels_line():
    B = speed_model.Block
    Interval = speed_model.stats.Interval
    host = (Interval(0.020, 0.019, 0.022, 20), Interval(0.032, 0.030, 0.034, 20))  # pooled, at 2 and 4 layers
    # the cell's own blocks: timed while the host was slow, their own line would say 60 ms at 8 layers
    one, two = [B(0.024, 0.001)] * 5, [B(0.036, 0.001)] * 5
    own = speed_model.at_depth(one, two, 8, 2, depths=(2, 4))
    step = speed_model.at_depth(one, two, 8, 2, host=host, gpu=(0.005, 0.009), depths=(2, 4))
    assert own.step_s == pytest.approx(2 * 0.060 + 0.001)
    assert step.bound == "host" and step.step_s == pytest.approx(2 * (0.020 + 0.006 * 6) + 0.001)
    assert step.low == pytest.approx(2 * (0.019 + 0.0055 * 6) + 0.001)
    assert step.high == pytest.approx(2 * (0.022 + 0.006 * 6) + 0.001)
    # kernels that outgrow the host by 8 layers (8 ms a layer against 6): the kernels' line
    gpu = speed_model.at_depth(one, two, 8, 2, host=host, gpu=(0.018, 0.034), depths=(2, 4))
    assert gpu.bound == "gpu" and gpu.step_s == pytest.approx(2 * (0.018 + 0.008 * 6) + 0.001)
    # GPU-bound on both copies: its own blocks' line, as without the host's figures
    busy = speed_model.at_depth(one, two, 8, 2, host=host, gpu=(0.023, 0.035), depths=(2, 4))
    assert busy == own
    assert speed_model.at_depth(one, two, 8, 2, host=(None, host[1]), gpu=(0.005, 0.009), depths=(2, 4)) == own


def test_a_new_shapes_first_call_is_timed_over_its_second():
    ticks = iter([0, 5, 6, 10, 13, 14])  # first call 5 s, second 1 s; then 3 s and 1 s
    model = _Counting()
    out = speed_model.first_call_s(model, [{"x": torch.ones(2)}, {"x": torch.ones(2)}], "none", "cpu",
                                   clock=lambda: next(ticks))
    assert out == [4, 2] and model.calls == 4


def test_new_shape_batches_are_new_padded_and_remembered():
    from src.data.collate import PadCollator

    collator = PadCollator(task="classification", pad_id=0, max_length=320, multiple=8)
    rows = [{"input_ids": list(range(1, n + 1)), "labels": 0} for n in (200, 213, 190, 207)]
    seen = {(4, 216), (4, 208)}  # the typical batch's own shape, and one another cell met
    batches = predict.new_shape_batches(rows, collator, seen, count=3)
    shapes = [tuple(b["input_ids"].shape) for b in batches]
    assert shapes == [(4, 200), (4, 192), (4, 184)] and set(shapes) <= seen
    assert all(not b["attention_mask"].all() for b in batches)  # padded, as a padded run's batches are: a mask
    assert predict.new_shape_batches(rows, collator, seen, count=3)[0]["input_ids"].shape == (4, 176)


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
    assert out == [speed_model.Block(2.0, 2.0)] * 2  # a micro-batch 2 s (6 s over 3), an AdamW step 2 s
    assert model.calls == 2 + 2 * 3  # a warm-up, one timed alone, then 2 blocks of 3: no more at any grad_accum

    # a micro-batch of 4 ms: blocks of 8 (32 ms); of 0.5 ms: of MAX_STEPS, not more
    for tick, steps in ((0.004, 8), (0.0005, speed_model.MAX_STEPS)):
        ticks = (tick * i for i in range(10_000))
        model = _Counting()
        out = speed_model.time_steps(model, {"x": torch.ones(2)}, amp="none", device="cpu", blocks=2,
                                     clock=lambda: next(ticks))
        assert model.calls == 2 + 2 * steps
        assert out == pytest.approx([speed_model.Block(tick / steps, tick / steps)] * 2)  # one tick a part


def test_memory_between_two_probes_is_read_off_their_line():
    from src.model import memory_model as mm

    def batch(rows, length):
        return {"input_ids": torch.zeros(rows, length), "attention_mask": torch.zeros(rows, length)}

    widest = [batch(2, 320), batch(8, 320), batch(32, 320), batch(64, 320), batch(1, 4096), batch(1, 8192)]
    assert predict.probe_plan(widest) == {1: (0, 3), 2: (0, 3)}  # the packs differ in length: each probed
    assert predict.probe_plan(widest[:2]) == {}
    at = mm.interpolate({"peak": 10.0, "kept": 4.0}, {"peak": 70.0, "kept": 34.0}, 2, 8, 4)
    assert at == {"peak": 30.0, "kept": 14.0}


def test_a_copys_activations_at_4_rows_lie_on_the_line_through_2_and_8(tmp_path):
    """What probe_plan stands on, on a real copy: the bytes a forward keeps grow with the rows in a line."""
    from src.data import prepare
    from src.machine import env
    from src.model import build as models
    from src.model import memory_model as mm

    cfg = compose(*QUICK, "padding=max_length")
    res, conf = env.setup(cfg), models.hf_config(cfg)
    prep = prepare.prepare(cfg, conf, tmp_path)
    conf.update(prep.for_model)
    model = mm.build_copy(cfg, res, conf, 1)
    acts = {}
    for rows in (2, 4, 8):
        at = OmegaConf.merge(cfg, {"batch": {"size": rows}})
        acts[rows] = mm.activation_bytes(at, res, model, mm.widest_batch(at, conf, prep.collator, prep.info["lengths"], "cpu"))
    assert acts[2]["peak"] < acts[4]["peak"] < acts[8]["peak"]
    assert mm.interpolate(acts[2], acts[8], 2, 8, 4)["peak"] == pytest.approx(acts[4]["peak"], rel=0.02)


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


@pytest.mark.slow  # the whole planned sweep (~45 s); its parts are tested fast around it
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
    assert re.search(r"2 cells predicted in data [\d.]+ s, copies [\d.]+ s, speed [\d.]+ s, new shapes [\d.]+ s, memory [\d.]+ s", said), said
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


def test_the_predictor_is_not_held_to_the_runs_memory_cap(monkeypatch):
    """gpu.memory_cap_gb caps the run, and the predictor compares its figures with it; held to it itself, an H100
    predictor ran out of its 10 GB on micro-batch 64's probes and lost a whole family's predictions."""
    from src.machine import env

    seen = []

    def setup(cfg):
        seen.append(cfg.gpu.memory_cap_gb)
        raise RuntimeError("stop here")

    monkeypatch.setattr(env, "setup", setup)
    cells = [{"cell": "a", "family": "f", "config": OmegaConf.to_container(compose("gpu.memory_cap_gb=10"), resolve=True)}]
    out = predict.predict(cells)
    assert seen == [None] and out[0]["why_not"] == "RuntimeError: stop here"


def test_a_cell_whose_copy_runs_out_of_memory_is_predicted_out_of_memory_and_its_family_still_predicted(monkeypatch):
    """On a 24 GB card a 2-layer copy's probe at the largest micro-batch can run out of memory itself: that cell
    can't fit at any cap (the whole model holds more), the one read off a line through it runs (said), and the
    rest of the family is predicted as ever."""
    from src.model import memory_model as mm

    real = mm.activation_bytes

    def activation_bytes(cfg, res, model, batch):
        if len(batch["input_ids"]) > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(cfg, res, model, batch)

    monkeypatch.setattr(mm, "activation_bytes", activation_bytes)
    cells = [{"cell": f"b{b}", "family": "f", "config": OmegaConf.to_container(compose(*QUICK, f"batch.size={b}"), resolve=True)}
             for b in (2, 4, 8)]
    out = {r["cell"]: r for r in predict.predict(cells)}
    assert out["b8"]["over_card"] == "its 1-layer copy alone ran out of memory on its widest batch"
    assert out["b4"]["why_not"] == "its memory lies between two probes, and one ran out of memory"
    assert out["b2"]["memory_gb"] > 0 and out["b2"]["real_tokens_per_s"] > 0 and not out["b2"].get("over_card")

    preds = [planning.as_prediction(r, size) for r, size in ((out["b2"], 2), (out["b4"], 4), (out["b8"], 8))]
    from src.plan import decisions, waves

    assert decisions.not_run(preds, capacity_gb=None) == {"b8": "predicted out of memory: " + out["b8"]["over_card"]}
    assert "b8" not in waves.first_wave(preds, None) and "b4" in waves.first_wave(preds, None)  # unpredicted: runs
    assert planning.line(out["b8"], "predicted out of memory: x") == "predicted out of memory: x"


def test_the_predictor_takes_host_bound_cells_at_the_familys_host_time(monkeypatch):
    """The kernels' time each copy profiles decides it: kernels far shorter than a micro-batch's wall time make a
    cell host-bound, and its step the family's pooled host line; kernels that fill the wall time leave the cell's
    own line. Off a GPU there is no kernel time, and every cell keeps its own line."""
    cells = [{"cell": f"b{b}", "family": "f", "config": OmegaConf.to_container(compose(*QUICK, f"batch.size={b}"), resolve=True)}
             for b in (2, 4)]
    for kernels, bound in ((1e-9, "host"), (1e3, None), (None, None)):
        monkeypatch.setattr(speed_model, "gpu_busy_s", lambda *a, **k: kernels)
        out = predict.predict(cells)
        assert [r["bound"] for r in out] == [bound, bound] and all(r["real_tokens_per_s"] > 0 for r in out)


def test_every_family_is_timed_before_any_kernel_is_profiled(monkeypatch):
    """torch's profiler leaves CUPTI hooked into every later kernel launch: a micro-batch timed after a profile is
    timed slow. So no family's micro-batch is timed after any profile, and every timed cell still gets its kernels'
    figure on both speed copies (here kernels far shorter than the micro-batch: host-bound)."""
    events = []
    real_time = speed_model.time_steps

    def time_steps(*a, **k):
        events.append("time")
        return real_time(*a, **k)

    def gpu_busy_s(model, *a, **k):
        events.append(("kernels", sum(1 for _ in model.modules())))
        return 1e-9

    monkeypatch.setattr(speed_model, "time_steps", time_steps)
    monkeypatch.setattr(speed_model, "gpu_busy_s", gpu_busy_s)
    cells = [{"cell": f"{padding}{b}", "family": padding, "config": OmegaConf.to_container(
        compose(*QUICK, f"batch.size={b}", f"padding={padding}"), resolve=True)}
        for padding in ("max_length", "dynamic") for b in (2, 4)]
    out = predict.predict(cells)
    assert events.count("time") == 8  # 2 families x 2 cells x 2 speed copies
    assert events.index(next(e for e in events if e != "time")) == 8  # every profile after the last timing
    profiled = [e for e in events if e != "time"]
    assert len(profiled) == 8 and len({size for _, size in profiled}) == 2  # each cell on the 1- and 2-layer copies
    assert [r["bound"] for r in out] == ["host"] * 4


def test_every_copy_has_trained_a_step_before_its_memory_is_probed(monkeypatch):
    """A process's first forward and backward allocates what it keeps for good (cuBLAS's workspace: 32 MiB on an
    H200); probed unwarmed, the 1-layer copy counted it as activations and the line put a 4-layer model 6% low."""
    from src.model import memory_model as mm

    events = []
    for module, name, tag in ((speed_model, "warm_up", "warm"), (speed_model, "time_steps", "warm"),
                              (mm, "activation_bytes", "probe")):
        real = getattr(module, name)

        def spy(*a, _real=real, _tag=tag, **k):
            model = a[2] if _tag == "probe" else a[0]
            events.append((_tag, model))  # the model itself: a freed copy's id can come back as the next one's
            return _real(*a, **k)

        monkeypatch.setattr(module, name, spy)
    cells = [{"cell": f"b{b}", "family": "f", "config": OmegaConf.to_container(
        compose(*QUICK, f"batch.size={b}", "model.arch.num_hidden_layers=4"), resolve=True)} for b in (2, 4)]
    out = predict.predict(cells)
    assert all(r["memory_gb"] > 0 for r in out)
    probed = {id(m): m for tag, m in events if tag == "probe"}.values()
    assert len(probed) == 2  # the 1- and 2-layer copies
    for m in probed:
        first = [tag for tag, x in events if x is m]
        assert first[0] == "warm", first


def test_a_cell_predicted_over_the_capacity_is_not_timed_and_says_so(monkeypatch):
    """Its memory is known from the 1- and 2-layer copies before its speed would be timed: a cell that can't run is
    not timed on the speed copies, keeps its predicted memory, and the planned table says why it has no speed."""
    from src.model import memory_model as mm

    timed = []
    real = speed_model.time_steps
    monkeypatch.setattr(speed_model, "time_steps", lambda model, batch, *a, **k: timed.append(len(batch["input_ids"]))
                        or real(model, batch, *a, **k))
    cells = [{"cell": f"b{b}", "family": "f", "config": OmegaConf.to_container(
        compose(*QUICK, f"batch.size={b}", "model.arch.num_hidden_layers=4"), resolve=True)} for b in (2, 8)]
    free = {r["cell"]: r for r in predict.predict(cells)}
    cap = (free["b2"]["memory_gb"] + free["b8"]["memory_gb"]) / 2  # b8 over it, b2 under
    monkeypatch.setattr(mm, "capacity_gb", lambda cfg, device: cap)
    timed.clear()
    out = {r["cell"]: r for r in predict.predict(cells)}
    assert set(timed) == {2} and len(timed) == 2  # b2 on the 2- and 4-layer copies, b8 on neither
    assert out["b8"]["real_tokens_per_s"] is None and out["b8"]["memory_gb"] == pytest.approx(free["b8"]["memory_gb"])
    assert out["b2"]["real_tokens_per_s"] > 0
    from src.plan import decisions, waves

    preds = [planning.as_prediction(out[c], size) for c, size in (("b2", 2), ("b8", 8))]
    said = decisions.not_run(preds, cap)
    assert list(said) == ["b8"] and planning.line(out["b8"], said["b8"]).endswith(f"GB > {cap:.1f} GB")


@pytest.mark.slow  # a planned sweep or an experiment's check of its own: make test-all
def test_sweep_question_largest_times_no_speed_and_runs_only_the_largest_that_fits(tmp_path):
    """The largest micro-batch that fits, asked alone: the predictor times no speed (memory from the 1- and 2-layer
    copies only), one cell runs, and the cells below it are said to be below it."""
    proc = cli("-m", "sweep=fit", *QUICK, "batch.size=1,2,4", "sweep.question=largest",
               "hydra.launcher.predict_on_cpu=true", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    predictions = json.loads((tmp_path / ".plan" / "predictions.json").read_text())
    assert len(predictions) == 3 and all(p["real_tokens_per_s"] is None and p["memory_gb"] > 0 for p in predictions)
    said = (tmp_path / ".plan" / "predict.log").read_text()
    assert re.search(r"speed 0\.0 s", said), said
    kept = {json.loads((d / "prediction.json").read_text())["config"]["batch"]["size"]: d
            for d in tmp_path.iterdir() if (d / "prediction.json").exists()}
    assert sorted(b for b, d in kept.items() if (d / "report.json").exists()) == [4]
    assert json.loads((kept[2] / "prediction.json").read_text())["decision"].endswith("below the largest that does")
    summary_md = (tmp_path / "summary.md").read_text()
    assert "the largest micro-batch predicted to fit: bs 4 x ga 16 (ran ok" in summary_md
    assert "0 predicted slower (not run); 2 smaller than the largest predicted to fit (not run)" in summary_md
    table = [x for x in (proc.stdout + proc.stderr).splitlines() if re.search(r"batch\.size=[124] .*: [\d.]+ GB", x)]
    assert len(table) == 3 and not any(x.endswith("; ") or x.endswith(";") for x in table), table  # no empty decision


def _experiment(script: str, tmp_path, *args: str) -> list[dict]:
    """An experiments/planner script run as its README runs it, on a tiny model: the rows it wrote."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out.jsonl"
    proc = subprocess.run([sys.executable, str(root / "experiments/planner" / script), str(out), *args],
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.slow  # a planned sweep or an experiment's check of its own: make test-all
def test_the_depth_check_reads_the_2_4_and_4_8_lines_beside_the_real_depth(tmp_path):
    """copies_check.py at 8 layers: both pairs of copies read at the real depth, beside the 8-layer copy itself."""
    rows = _experiment("copies_check.py", tmp_path, "model=tiny", "model.arch.num_hidden_layers=8", "batch=2,4", "logger=none")
    assert [r["batch"] for r in rows] == [2, 4]
    for r in rows:
        assert set(r["lines"]) == {"2-4", "4-8"} and set(r["blocks"]) == {"1", "2", "4", "8"}
        assert all(v["own_s"] > 0 and v["predicted_s"] > 0 for v in r["lines"].values()) and r["measured_s"] > 0


@pytest.mark.slow  # a planned sweep or an experiment's check of its own: make test-all
def test_the_profile_check_times_twice_before_and_twice_after_one_profile(tmp_path):
    (row,) = _experiment("profiler_after.py", tmp_path, "2", "model=tiny", "batch=4", "logger=none")
    assert [t["when"] for t in row["timings"]] == ["before", "before", "after", "after"]
    assert row["kernels_s"] is None  # no kernels off a GPU
    after = sorted(t["median_s"] for t in row["timings"] if t["when"] == "after")
    before = sorted(t["median_s"] for t in row["timings"] if t["when"] == "before")
    assert row["after_over_before"] == pytest.approx((after[0] + after[1]) / (before[0] + before[1]))


@pytest.mark.slow  # a planned sweep or an experiment's check of its own: make test-all
def test_the_trainer_gap_check_times_four_ways_in_one_process(tmp_path):
    (row,) = _experiment("trainer_gap.py", tmp_path, "model=tiny", "batch=4", "logger=none")
    assert [set(r) for r in row["rounds"]] == [{"round", "copy", "run_model", "step"}] * 2
    assert all(r[k] > 0 for r in row["rounds"] for k in ("copy", "run_model", "step"))
    assert len(row["train_steps_s"]) == 10 and row["train_s"] > 0  # steps 5-14 of Trainer.train()


def test_the_vcpu_check_times_each_vcpu_pinned_alone_together_and_at_light_load(tmp_path):
    import os

    cpus = sorted(os.sched_getaffinity(0))
    header, *rows = _experiment("vcpu_drift.py", tmp_path, "0.2", "0.3", "0.5")
    assert header["cpus"] == cpus and set(map(int, header["siblings"])) == set(cpus)
    timings = [r for r in rows if "ms" in r]
    assert all(r["ran_on"] == r["cpu"] and r["ms"] > 0 for r in timings)  # each timing ran on the vCPU it names
    for phase in ("alone", "together", "sparse"):
        assert {r["cpu"] for r in timings if r["phase"] == phase} == set(cpus)
    for cpu in cpus:  # at light load a vCPU times once per SPARSE_EVERY_S, idle between
        ts = [r["t"] for r in timings if r["phase"] == "sparse" and r["cpu"] == cpu]
        assert len(ts) <= 0.5 / 0.2 + 1 and all(b - a >= 0.19 for a, b in zip(ts, ts[1:]))
    (share,) = [r["slow_share"] for r in rows if "slow_share" in r]
    assert set(map(int, share)) == set(cpus) and all(0 <= v <= 1 for v in share.values())


def test_a_measured_cell_carries_whether_it_saturated_memory(tmp_path):
    """From call 10's reports on an H200: micro-batch 32 reserved 9.9 of 10 GB (saturated), 16 x 2 7.7 GB."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments/planner/results/h200_preset/reports_preset_predict.jsonl"
    got = []
    for i, line in enumerate(path.read_text().splitlines()):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "report.json").write_text(line)
        got.append(planning.measured(str(i), tmp_path / str(i)))
    assert [(m.status, m.saturated) for m in got] == [("ok", True), ("ok", True), ("ok", False)]
    assert [round(m.tok_s) for m in got] == [109_111, 109_708, 78_575]
    (tmp_path / "oom").mkdir()
    (tmp_path / "oom" / "report.json").write_text(json.dumps({"status": "oom"}))
    assert planning.measured("oom", tmp_path / "oom") == planning.waves.Measured("oom", "oom")  # no verdict: unsaturated


def test_the_new_shape_check_reads_six_new_shapes_synced_and_in_an_unsynced_loop_in_turn(tmp_path):
    (row,) = _experiment("new_shape_cost.py", tmp_path, "2", "model=tiny", "batch=4", "logger=none")
    readings = row["readings"]
    assert [r["how"] for r in readings] == ["synced", "in_loop"] * 3
    shapes = [tuple(r["shape"]) for r in readings]
    assert len(set(shapes)) == 6 and tuple(row["typical_shape"]) not in shapes  # each shape new once
    assert all(r["cost_s"] >= 0 for r in readings if r["how"] == "synced")  # first_call_s floors at 0


def test_the_planners_memory_for_a_cell_is_memory_model_predicts_workspace_included(monkeypatch, tmp_path):
    """Issue 54, item 8 and a mutation no test caught: the planner's total left out the first step's workspace that
    memory_model.predict adds, and its weights could go unscaled to depth (memory was asserted only > 0). One cell
    at 4 layers: the planner's figure from its 1- and 2-layer copies is the run's prediction on the 4-layer model,
    with a first-step workspace of 1 GiB standing in for a GPU's cuBLAS workspace in both."""
    from src.data import prepare
    from src.machine import env
    from src.model import memory_model as mm

    def workspace(device, warm):
        warm()
        return 2**30

    monkeypatch.setattr(mm, "first_step_workspace", workspace)
    monkeypatch.setitem(predict._WORKSPACE, "bytes", 0)
    cfg = compose(*QUICK, "batch.size=4", "model.arch.num_hidden_layers=4")
    cells = [{"cell": "b4", "family": "f", "config": OmegaConf.to_container(cfg, resolve=True)}]
    planned = predict.predict(cells, memory_only=True)[0]["memory_gb"]

    from src.model import build as models

    res, conf = env.setup(cfg), models.hf_config(cfg)
    prep = prepare.prepare(cfg, conf, tmp_path)
    conf.update(prep.for_model)
    model = mm.build_copy(cfg, res, conf, 4)  # the run's model at its real depth, built as the copies are
    widest = mm.widest_batch(cfg, conf, prep.collator, prep.info["lengths"], res.device)
    run = mm.predict(cfg, res, conf, model, widest)
    assert run["parts"]["workspace"] == 1.0 and run["parts"]["weights"] > 0
    assert planned == pytest.approx(run["peak_allocated"], rel=1e-9)


@pytest.mark.parametrize("share, host", [(0.79, True), (0.81, False)])
def test_a_copy_is_host_bound_when_its_kernels_fill_under_80_percent_of_a_micro_batch(share, host):
    """Issue 54: the threshold's boundary, against the median block (a hiccup's block doesn't move it)."""
    blocks = [speed_model.Block(ms / 1e3, 0.001) for ms in (8, 10, 10, 12, 50)]  # median 10 ms, min 8, mean 18
    assert speed_model.host_bound(blocks, share * 0.010) is host
    assert not speed_model.host_bound(blocks, None)  # no kernel time (a CPU): never called host-bound


def test_a_cell_without_kernel_times_says_why_in_its_prediction(monkeypatch):
    """Issue 54, item 4: a speed copy whose kernels could not be timed (the profile ran out of memory, or gave no
    kernels) left the cell on its own line with nothing said. Its prediction now names each copy's missing figure
    and why: here the first copy's profile runs out of memory and the second gives no figure, as on a CPU."""
    calls = []

    def gpu_busy_s(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return None

    monkeypatch.setattr(speed_model, "gpu_busy_s", gpu_busy_s)
    cells = [{"cell": "b2", "family": "f", "config": OmegaConf.to_container(compose(*QUICK, "batch.size=2"), resolve=True)}]
    out = predict.predict(cells)[0]
    shallow, deep = speed_model.copy_depths(compose(*QUICK).model.arch.num_hidden_layers)
    assert out["real_tokens_per_s"] > 0 and out["micro_batch_s"]["kernels"] is None
    assert out["not_measured"] == {
        f"micro_batch_s.kernels ({shallow}-layer copy)":
            f"could not check: its {shallow}-layer copy alone ran out of memory timing its kernels",
        f"micro_batch_s.kernels ({deep}-layer copy)": "not measured: no GPU"}
