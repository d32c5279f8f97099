"""Measurement on the CPU: token counting three ways, warm-up exclusion, the window's arithmetic, stopping
when stable, and each part of the meter alone (the verdict's rules are in tests/test_analysis.py)."""
import gc
import statistics
import time
from unittest import mock

import pytest
import torch

from src.measure.meter import Measure, TokenCounter, window_tokens
from src.measure.stop import StopRule
from src.measure.timing import BusyProfiler, Clock, PHASES, StepTimer, Window
from src.base.stats import union_seconds
from src.measure.hooks import TrainerHooks


def _padded_batch():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    return {"input_ids": torch.ones(2, 4, dtype=torch.long), "attention_mask": mask}


def test_the_widest_micro_batch_counts_tokens_and_an_image_batch_has_none():
    counter = TokenCounter("classification")
    counter.add({"pixel_values": torch.zeros(8, 3, 32, 32), "labels": torch.zeros(8)})
    assert counter.widest is None  # 8 images are no 24,576 tokens
    for rows, length in ((4, 10), (2, 30), (4, 8)):
        counter.add({"input_ids": torch.ones(rows, length, dtype=torch.long), "labels": torch.zeros(rows)})
    assert counter.widest == 60


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


def test_a_batch_without_labels_scores_its_completion_tokens():
    """TRL's DPO and KTO collators send no labels but a completion_mask: their loss scores those tokens."""
    counter = TokenCounter("causal_lm")
    batch = _padded_batch()
    batch["completion_mask"] = torch.tensor([[0, 1, 1, 0], [0, 0, 1, 0]])
    start = counter.snapshot()
    counter.add(batch)
    assert window_tokens(start, counter.snapshot())["loss"] == 3


def test_packed_batches_are_counted_from_the_collators_pack_stats():
    """A packed row has no attention_mask: samples, real and loss tokens come from what the collator packed."""
    from src.data import collate
    from tests.conftest import compose

    counter = TokenCounter("causal_lm")
    rows = [{"input_ids": [5, 6, 7], "length": 3}, {"input_ids": [8, 9], "length": 2}]
    batch = collate.build_collator(compose("task=causal_lm", "padding=packed"), pad_id=0)(rows)
    start = counter.snapshot()
    counter.add(batch)
    got = window_tokens(start, counter.snapshot())
    # 64 positions computed (5 real + a dummy tail); each sequence's first token is not scored
    assert got == {"samples": 2, "all": 64, "real": 5, "loss": 3}


class FakeTime:
    """time, with a perf_counter that moves only when a simulated step says so: a loaded CI machine's clock
    never reaches the figures these tests judge."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name):
        return getattr(time, name)


def _simulate(durations, warmup, profile=0, stop_rel_error=None, min_steps=3, compiles=()):
    """Drive Measure's hooks like the Trainer does, each step taking the given seconds on a fake CPU clock and
    compiling a new graph at the steps in `compiles`."""
    import src.measure.meter
    import src.measure.timing

    clock = FakeTime()
    counter = TokenCounter("classification")
    with mock.patch.object(src.measure.timing, "time", clock), mock.patch.object(src.measure.meter, "time", clock):
        meter = Measure(counter, "cpu", warmup=warmup, max_steps=len(durations), profile_steps=profile,
                        stop_rel_error=stop_rel_error, min_steps=min_steps)
        hooks = TrainerHooks(meter)

        def work():
            counter.add({**_padded_batch(), "labels": torch.tensor([0, 1])})
            clock.sleep(durations[hooks.state.global_step])
            if hooks.state.global_step + 1 in compiles:
                torch._dynamo.utils.counters["stats"]["unique_graphs"] += 1

        last_step = hooks.run(len(durations), work)
        return meter.results(), last_step


def test_warmup_steps_are_not_timed_or_counted():
    res, _ = _simulate([0.15, 0.15, 0.01, 0.01, 0.01, 0.01], warmup=2)
    st = res["step_time_s"]
    assert st["n"] == 4 and st["warmup_steps"] == 2
    assert st["mean"] == pytest.approx(0.01)  # the slow first steps are excluded
    assert res["tokens"] == {"samples": 8, "all": 32, "real": 20, "loss": 8}  # 4 timed steps x 2 rows
    assert sum(res["breakdown_s"].values()) == pytest.approx(st["mean"], rel=1e-6)  # data+compute+optimizer+other
    assert st["wall_mean"] == pytest.approx(st["mean"])


def test_stop_when_stable_ends_training_once_the_mean_is_known():
    res, last_step = _simulate([0.01] * 40, warmup=2, stop_rel_error=0.05, min_steps=5)
    assert last_step < 40 and res["stopped_when_stable"] and res["ended_training"]  # the report: no stopped_early
    assert res["step_time_s"]["n"] >= 5
    res, last_step = _simulate([0.01] * 40, warmup=2)
    assert last_step == 40 and not res["ended_training"]


def test_compiles_keep_the_warmup_going_and_are_counted(monkeypatch):
    """Steps 2 and 3 compile: the window opens after step 4, the first step that compiled nothing."""
    monkeypatch.setitem(torch._dynamo.utils.counters["stats"], "unique_graphs", 0)
    res, _ = _simulate([0.001] * 10, warmup=2, compiles={2, 3})
    assert res["step_time_s"]["warmup_steps"] == 4 and res["step_time_s"]["n"] == 6 and res["window_steps"] == 6
    assert res["compile"]["graphs"] == 2 and res["compile"]["graphs_in_window"] == 0
    res, _ = _simulate([0.001] * 10, warmup=2, compiles={7})  # a late compile can't be kept out: it is reported
    assert res["step_time_s"]["warmup_steps"] == 2 and res["compile"]["graphs_in_window"] == 1


# -- the parts, alone ------------------------------------------------------------------------------------
class Recorder:
    """A callback that writes down its hooks' calls; asks to stop after `stop_at` steps."""

    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def __getattr__(self, name):
        def hook(args, state, control):
            self.calls.append(name[3:])
            if name == "on_step_end" and state.global_step == self.stop_at:
                control.should_training_stop = True
        return hook


def test_trainer_hooks_call_a_callback_in_the_trainers_order():
    rec = Recorder()
    hooks = TrainerHooks(rec, log_every=2)
    done = hooks.run(2, lambda: rec.calls.append("work"))
    assert done == 2
    step = ["step_begin", "work", "pre_optimizer_step", "optimizer_step", "step_end"]
    assert rec.calls == ["train_begin", *step, *step, "log", "train_end"]
    order = []
    TrainerHooks(None).step(lambda: order.append("work"), lambda: order.append("opt"), lambda: order.append("after"))
    assert order == ["work", "opt", "after"]  # no callback: the same step, bare


def test_trainer_hooks_stop_when_the_callback_asks():
    rec = Recorder(stop_at=3)
    assert TrainerHooks(rec).run(10, lambda: None) == 3
    assert rec.calls[-2:] == ["step_end", "train_end"]


def _timed_step(timer, data=0.0, compute=0.0, optimizer=0.0, other=0.0, sleep=time.sleep):
    sleep(data)
    timer.begin()
    sleep(compute)
    timer.mark("pre_opt")
    sleep(optimizer)
    timer.mark("opt")
    sleep(other)
    timer.end()


def test_step_timer_phases_sum_to_the_step_time():
    """On a fake clock that moves only by the phases' own durations: each phase reads exactly what it took, in
    the order the step took them, whatever else the machine is doing."""
    clock = FakeTime()
    timer = StepTimer(Clock(cuda=False, now=clock.perf_counter))
    timer.start()
    _timed_step(timer, data=0.01, compute=0.03, optimizer=0.02, other=0.005, sleep=clock.sleep)
    timer.keep()
    timer.drain(wait=False)
    d = {p: v[0] for p, v in timer.durations.items()}
    assert set(d) == set(PHASES) and sum(d.values()) == pytest.approx(timer.step_times[0], rel=1e-9)
    assert d == pytest.approx({"data": 0.01, "compute": 0.03, "optimizer": 0.02, "other": 0.005})
    assert timer.step_times[0] == pytest.approx(0.065)
    assert timer.host_data[0] == pytest.approx(0.01) and timer.host_launch[0] == pytest.approx(0.055)


class SlowDevice(Clock):
    """A device clock whose marks the device passes only when told: marks are counted, not timed."""

    def __init__(self):
        super().__init__(cuda=False)
        self.n, self.passed = 0, 0

    def mark(self):
        self.n += 1
        return self.n

    def done(self, mark):
        return mark <= self.passed


def test_step_timer_reads_a_step_only_once_the_device_passed_it():
    clock = SlowDevice()
    timer = StepTimer(clock)
    timer.start()  # mark 1
    _timed_step(timer)  # marks 2-5: begin, pre_opt, opt, end
    timer.keep()
    _timed_step(timer)  # an evaluated step: not timed, but its end (9) starts the next step's data phase
    _timed_step(timer)  # marks 10-13
    timer.keep()
    clock.passed = 12  # the device is still inside the last step
    timer.drain(wait=False)
    assert timer.step_times == [5 - 1] and len(timer.pending) == 1
    clock.passed = 13
    timer.drain(wait=False)
    assert timer.step_times == [4, 13 - 9] and timer.durations["data"] == [1, 10 - 9] and not timer.pending


def test_window_opens_only_after_a_step_without_a_new_compile():
    counter = TokenCounter("classification")
    window = Window(counter, cuda=False, warmup=2, last=20)
    window.begin()
    assert [window.step_end(1, compiled=False), window.step_end(2, compiled=True), window.step_end(3, compiled=True)] \
        == [False] * 3 and window.opened is None  # step 1: still in the warm-up it was asked for
    assert not window.step_end(4, compiled=False) and window.opened is not None  # opens after step 4 ...
    assert window.warmup == 4 and window.max_timed == 16
    assert window.step_end(5, compiled=True) and window.steps == 1  # ... so step 5 is the first inside
    window.finish()


def test_window_opens_at_open_by_when_every_step_compiles():
    window = Window(TokenCounter("classification"), cuda=False, warmup=2, last=20)
    assert window.open_by == 2 + 18 // 2
    step = 1
    while window.opened is None:
        window.step_end(step, compiled=True)
        step += 1
    assert window.warmup == window.open_by == 11


def test_window_counts_only_what_happens_between_its_edges():
    counter = TokenCounter("classification")
    batch = {**_padded_batch(), "labels": torch.tensor([0, 1])}
    window = Window(counter, cuda=False, warmup=0, last=2)
    counter.add(batch)  # before train begin: not in the window
    window.begin()  # no warm-up: open now
    for step in (1, 2):
        counter.step = step
        counter.add(batch)
        gc.collect()
        time.sleep(0.01)
        assert window.step_end(step, compiled=False)
    window.close()
    counter.step = 3
    counter.add({k: torch.cat([v, v]) for k, v in batch.items()})  # after the window: not counted, nor its shape
    gc.collect()
    assert not window.step_end(3, compiled=False) and window.steps == 2
    window.finish()  # already closed: the edge stays where it was
    res = window.results()
    assert window_tokens(window.opened["tokens"], window.closed["tokens"]) == {"samples": 4, "all": 16, "real": 10,
                                                                               "loss": 4}
    assert res["gc_collections"] >= 2 and 0 < res["gc_s"] < res["wall_s"]
    assert res["wall_s"] == pytest.approx(res["close_at"] - res["open_at"]) and res["wall_s"] >= 0.02
    assert res["alloc_retries"] == 0 and res["graphs"] == 0
    assert res["shapes"] == {"distinct_in_window": 1, "new_in_window": 0,  # the shape was seen before the window
                             "widest_tokens": 16}  # the run's widest micro-batch, the window's or not: the peak's
    assert window.gc._on_gc not in gc.callbacks


def test_window_that_training_stopped_inside_ends_at_train_end():
    window = Window(TokenCounter("classification"), cuda=False, warmup=0, last=100)
    window.begin()
    window.step_end(1, compiled=False)
    assert window.closed is None
    window.finish()
    assert window.closed is not None and window.results()["wall_s"] >= 0


def test_stop_rule_needs_the_batch_means_interval_within_rel_error_of_the_mean():
    rule = StopRule(rel_error=0.05, min_steps=9)
    assert not any(rule.met([0.2] * n) for n in range(9))  # no spread, but fewer than min_steps
    assert rule.met([0.2] * 9)
    # Correlated steps (a slow step is followed by slow ones): stdev/sqrt(n) is sure of the mean far too early
    from tests.test_stats import steps

    times = steps(0.2, 0.1, 1000, rho=0.9, seed=0)
    naive = next(n for n in range(9, 1000) if statistics.stdev(times[:n]) / n ** 0.5 < 0.05 * statistics.fmean(times[:n]))
    assert naive < 20 and not rule.met(times[:naive])
    assert rule.met(times)
    assert not StopRule(rel_error=0.05, min_steps=2000).met(times)


def test_busy_time_is_the_union_of_kernel_intervals():
    assert union_seconds([]) == 0
    assert union_seconds([(20, 30), (0, 10), (5, 15)]) == pytest.approx(25e-9)  # 0-15 overlap, 20-30 apart
    assert union_seconds([(0, 100), (10, 20), (30, 40)]) == pytest.approx(100e-9)  # nested: counted once
    assert union_seconds([(0, 10), (10, 20)]) == pytest.approx(20e-9)  # touching


def test_host_ops_are_the_hosts_ops_per_profiled_step_costliest_first():
    """measure.host_ops reads the profiler's CPU side (on a GPU run, beside the kernels): counts and self time
    per step, so a launch-bound step shows what its host does N times a step."""
    busy = BusyProfiler(host_ops=True)
    busy._prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    a = torch.randn(64, 64)
    with busy._prof:
        for _ in range(2):  # two "steps": 3 matmuls and 1 add each
            for _ in range(3):
                a = torch.mm(a, a).tanh_()
            a = a + 1
    ops = {row["op"]: row for row in busy._host_ops(steps=2)}
    assert ops["aten::mm"]["calls"] == 3 and ops["aten::add"]["calls"] == 1
    times = [row["self_ms"] for row in busy._host_ops(steps=2)]
    assert times == sorted(times, reverse=True) and all(t >= 0 for t in times) and times[0] > 0


def test_a_run_that_never_settled_is_not_called_stopped_when_stable_after_an_evaluation():
    """Issue 54, item 2: an evaluation dropped a timed step, so fewer steps were timed than the window held, and
    `n < max_timed` read as "stopped when stable" for a run whose mean never settled."""
    meter = Measure(TokenCounter("classification"), "cpu", warmup=1, max_steps=12, profile_steps=0,
                    stop_rel_error=1e-12, min_steps=3)  # a tolerance no real clock meets
    hooks = TrainerHooks(meter)
    hooks.train_begin()
    for step in range(12):
        hooks.step(lambda: time.sleep(0.001 * (1 + step % 3)))
        if step == 5:
            meter.on_evaluate(None, hooks.state, hooks.control)
    hooks.train_end()
    out = meter.results()
    assert out["step_time_s"]["n"] < out["window_steps"]  # the evaluated step was dropped from the timing
    assert out["stopped_when_stable"] is False


def test_the_interval_reads_every_timed_step_and_p50_is_the_median():
    """Issue 54, item 6: the interval used the first 1,000 step times while the mean used all; p50 was the upper
    middle of an even count."""
    from src.measure.meter import _stats

    assert _stats([1.0, 2.0, 3.0, 4.0])["p50"] == 2.5
    meter = Measure(TokenCounter("classification"), "cpu", warmup=0, max_steps=1500, profile_steps=0)
    meter.timer.step_times = [0.01] * 1200 + [0.05] * 300
    assert len(meter.results()["step_time_s"]["values"]) == 1500


def test_the_stop_rule_reads_the_interval_every_2_percent_more_steps_not_every_step(monkeypatch):
    """Reading the interval is O(n) on the host between two timed steps: read after every step, a 5,000-step window
    would spend 0.6 ms of each late step on it. It is read again once the steps grew by 2%."""
    import src.base.stats as stats

    reads = []
    real = stats.batch_means
    monkeypatch.setattr(stats, "batch_means", lambda values: reads.append(len(values)) or real(values))
    rule = StopRule(rel_error=1e-9, min_steps=10)  # never met: every read is a miss
    times = [0.01 * (1 + (i % 7) / 10) for i in range(5000)]
    for n in range(1, 5001):
        rule.met(times[:n])
    assert reads[:3] == [10, 11, 12] and len(reads) < 400  # every step up to 100, then every 2% more: not 4,991
    assert all(b - a <= max(1, int(a * 0.02)) for a, b in zip(reads, reads[1:]))
