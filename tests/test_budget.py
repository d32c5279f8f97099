"""batch.tokens=auto (src/train/budget.py): the budget's choice from a probe on a fake clock and a fake memory
model, the probe's timing on a fake clock, and the run's wiring (repacked data, grad_accum, the report's line).
The probe itself on a GPU is in tests/test_gpu.py."""
import pytest

from src.data import prepare
from src.machine import env
from src.model import build as models
from src.run import run
from src.train import budget
from src.train.budget import LOOP_MARGIN, Point, Probe, choose, probe_step
from tests.conftest import QUICK, compose

GB = 2**30


def _probe(*points, base_gb=10.0, peak_gb=20.0, trainable_gb=0.0):
    """points: (tokens, host_s, gpu_s) each; the first is the probe's budget."""
    return Probe(points=tuple(Point(*p) for p in points), base_bytes=int(base_gb * GB), peak_bytes=int(peak_gb * GB),
                 trainable_bytes=int(trainable_gb * GB))


H200_FP8 = ((8192, 0.186, 0.208), (16384, 0.186, 0.400))  # call 1's 8k probe; 16k as its step times imply


def test_the_fixed_part_of_a_step_makes_a_larger_budget_pay_and_the_rows_say_so():
    """An FP8 step at 8k on an H200: 0.208 s on the GPU, of which ~16 ms don't grow with the tokens, behind 0.214 s
    of host: 8k spends 90% of its step on the tokens' work, 16k 96%. The step's rows double (grad_accum 1)."""
    probe = _probe(*H200_FP8)
    fixed, per_token = probe.line()
    assert fixed == pytest.approx(0.016) and per_token == pytest.approx(0.192 / 8192)
    assert probe.share_at(8192) == pytest.approx(0.192 / (0.186 * LOOP_MARGIN))
    choice = choose(probe, grad_accum=1, longest=320, capacity_gb=140)
    assert choice.tokens == 16384 and choice.grad_accum == 1 and choice.rows_per_step_vs_reference == 2
    assert choice.predicted_share == pytest.approx(0.384 / 0.400) and "smallest budget whose" in choice.reason
    line = budget.describe(choice, 1)
    assert "chose 16,384 tokens" in line and "2x the rows per optimizer step" in line and "16 ms + 23.4 us/token" in line


def test_a_larger_budget_takes_a_smaller_grad_accum_keeping_the_rows_per_step():
    choice = choose(_probe(*H200_FP8), grad_accum=4, longest=320, capacity_gb=None)
    assert (choice.tokens, choice.grad_accum, choice.rows_per_step_vs_reference) == (16384, 2, 1.0)
    assert "grad_accum 4 -> 2 (the same rows per optimizer step" in budget.describe(choice, 4)


def test_a_gpu_bound_probe_takes_the_smallest_budget_that_stays_gpu_bound():
    """One point, kernels 5x the host's launches at 8k: 2k's 0.125 s still outlasts the host's 0.115 s."""
    choice = choose(_probe((8192, 0.1, 0.5)), grad_accum=1, longest=320, capacity_gb=None)
    assert (choice.tokens, choice.grad_accum, choice.predicted_share) == (2048, 4, 1.0)


def test_the_boundary_of_the_share_is_the_threshold_not_below_it():
    host = 0.1
    at_threshold = budget.BUSY * host * LOOP_MARGIN  # the GPU's time at 16k exactly BUSY of the loop's host time
    below = choose(_probe((8192, host, at_threshold / 2 * 0.999)), 1, 320, None)
    exact = choose(_probe((8192, host, at_threshold / 2 * 1.001)), 1, 320, None)
    assert below.tokens == 32768 and exact.tokens == 16384


def test_a_large_fixed_part_never_reaches_the_share_and_takes_the_largest_that_fits():
    probe = _probe((8192, 0.05, 0.30), (16384, 0.05, 0.35))  # 0.25 s that no budget amortises below 64k
    assert probe.line()[0] == pytest.approx(0.25)
    choice = choose(probe, 1, 320, capacity_gb=None)
    assert choice.tokens == 65536 and "no budget that fits reaches 95%" in choice.reason
    capped = choose(probe, 1, 320, capacity_gb=55)  # 10 GB + 10 GB per 8k of activations: 32k is 50 GB x 1.18 = 59
    assert capped.tokens == 16384


def test_noisy_points_fall_back_to_a_line_through_zero():
    """A second point faster than the first (noise, or a kernel choice) gives no fixed part, not a negative one."""
    probe = _probe((8192, 0.1, 0.30), (16384, 0.1, 0.29))
    assert probe.line() == (0.0, pytest.approx(0.30 / 8192))
    steep = _probe((8192, 0.1, 0.10), (16384, 0.1, 0.40))  # the line would cross zero above 0 tokens
    assert steep.line() == (0.0, pytest.approx(0.10 / 8192))


def test_memory_keeps_the_budget_where_a_larger_one_would_not_fit():
    """A fake memory model: 10 GB before, 20 GB at the probe's 8k peak, 1 GB of adapters. 16k would need
    10 + 2 + 20 = 32 GB (x1.18 the allocator's margin: 37.8) over a 30 GB cap: the largest that fits."""
    probe = _probe(*H200_FP8, base_gb=10, peak_gb=20, trainable_gb=1)
    assert probe.memory_gb_at(16384) == pytest.approx(32.0)
    choice = choose(probe, grad_accum=1, longest=320, capacity_gb=30)
    assert choice.tokens == 8192 and "no budget that fits reaches" in choice.reason
    assert choice.predicted_memory_gb == pytest.approx(22.0)
    tiny = choose(probe, grad_accum=1, longest=320, capacity_gb=5)
    assert tiny.tokens == 2048 and "no candidate fits" in tiny.reason


def test_a_pack_holds_the_longest_sequence_whatever_the_probe_says():
    choice = choose(_probe((8192, 0.01, 1.0)), grad_accum=1, longest=5000, capacity_gb=None)
    assert choice.tokens == 8192  # 2k and 4k can't hold a 5,000-token row
    assert choose(_probe((8192, 0.01, 1.0)), 1, longest=100_000, capacity_gb=None).tokens == 100_000


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_probe_times_the_host_without_its_first_call_and_the_kernels_behind_a_sleep():
    """The first call compiles (30 s on the fake clock) and is left out; the host's median of 3; the kernels'
    timer is asked for a lead of twice the host's time plus 20 ms."""
    clock, calls, leads = FakeClock(), [], []
    durations = iter([30.0, 0.21, 0.19, 0.20, 0.5, 0.5, 0.5])

    def step():
        calls.append(clock.now)
        clock.now += next(durations)

    class Kernels:
        def time(self, work, lead_s):
            leads.append(lead_s)
            work()
            return 0.17 + 0.01 * len(leads)

    host_s, gpu_s = probe_step(step, lambda: None, Kernels(), repeats=3, clock=clock)
    assert host_s == pytest.approx(0.20) and gpu_s == pytest.approx(0.19)
    assert len(calls) == 7 and leads == [pytest.approx(0.42)] * 3


def test_without_a_gpu_auto_packs_batch_size_rows_and_says_so(tmp_path):
    rep = run(compose(*QUICK, "padding=packed", "batch.tokens=auto"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    chosen = rep["resolved"]["budget"]
    assert chosen["tokens"] is None and chosen["line"].startswith("batch.tokens=auto: no GPU")
    assert rep["config"]["batch"]["tokens"] == "auto"  # the config as given; what it became is in resolved
    assert rep["shapes"]["distinct_in_window"] >= 1 and rep["tokens"]["all"] > 0


def test_the_run_repacks_its_data_to_the_probes_choice(tmp_path, monkeypatch):
    """choose_for_run on a built model with a fake probe: the data is packed again to the chosen budget, the
    collator fills it, grad_accum keeps the rows per step, and the record carries the line."""
    cfg = compose(*QUICK, "padding=packed", "batch.tokens=auto", "batch.grad_accum=2", "data.size=512")
    res = env.resolve(cfg)
    budget.provisional(cfg, "cuda")  # as on a GPU: packs of the probe's budget first
    assert cfg.batch.tokens == budget.REFERENCE
    conf = models.hf_config(cfg)
    prep = prepare.prepare(cfg, conf, tmp_path)
    conf.update(prep.for_model)
    model = models.build_model(cfg, res, conf)
    before = len(prep.for_trainer)
    seen = []
    def fake_probe(m, batch, amp, second):
        seen.append(batch["input_ids"].numel())
        first = _probe((8192, 0.1, 0.06))
        bigger = second(first)  # the run builds a real pack of twice the budget where it fits (no cap on a CPU)
        seen.append(bigger["input_ids"].numel())
        return _probe((8192, 0.1, 0.06), (16384, 0.1, 0.12))  # 0.12 s at 16k: the first over 0.95 x 0.115

    monkeypatch.setattr(budget, "probe_model", fake_probe)
    prep, record = budget.choose_for_run(cfg, res, model, prep)
    assert seen == [budget.REFERENCE, 2 * budget.REFERENCE]  # real packs of the provisional budget and twice it
    assert cfg.batch.tokens == 16384 and cfg.batch.grad_accum == 1
    assert prep.collator.budget == 16384 and len(prep.for_trainer) < before
    batch = prep.collator([prep.for_trainer[0]])
    assert batch["input_ids"].shape[-1] == 16384
    assert record["tokens"] == 16384 and "grad_accum 2 -> 1" in record["line"]


def test_the_hosts_time_is_its_fastest_launch_as_a_full_queue_makes_a_larger_one_wait():
    """H200, call 2: 184 ms to launch at 8k, 334 ms at 16k (the host blocked on the GPU's queue)."""
    probe = _probe((8192, 0.184, 0.209), (16384, 0.334, 0.389))
    assert probe.host_s() == pytest.approx(0.184 * LOOP_MARGIN)
    assert choose(probe, 1, 320, capacity_gb=None).tokens == 32768  # 16k: 93%; 32k: 96%


def test_the_summary_and_the_sweep_table_show_the_chosen_budget_not_auto(tmp_path):
    """A report as a GPU run leaves it (resolved.budget from the probe): the printed summary's batch line and
    the sweep table's batch_tokens are the chosen budget, and the budget line is its own row."""
    from src.report import document, summary

    rep = run(compose(*QUICK, "padding=packed", "batch.tokens=auto", "batch.grad_accum=2"), tmp_path)
    rep["resolved"]["budget"] = {"tokens": 16384, "grad_accum": 1, "line": "batch.tokens=auto chose 16,384 tokens"}
    text = document.format_summary(document.Report.from_dict(rep))
    assert "16384 tokens (padding-free) x grad_accum 1 = 16384 tokens per step" in text
    assert "budget       batch.tokens=auto chose 16,384 tokens" in text
    row = summary.table([{**rep, "job": "auto"}]).iloc[0]
    assert (row["batch_tokens"], row["grad_accum"]) == (16384, 1)
