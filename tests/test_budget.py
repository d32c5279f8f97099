"""batch.tokens=auto (src/train/budget.py): the budget's choice from a probe on a fake clock and a fake memory
model, the probe's timing on a fake clock, and the run's wiring (repacked data, grad_accum, the report's line).
The probe itself on a GPU is in tests/test_gpu.py."""
import pytest

from src.data import prepare
from src.machine import env
from src.model import build as models
from src.run import run
from src.train import budget
from src.train.budget import LOOP_MARGIN, Probe, choose, probe_step
from tests.conftest import QUICK, compose

GB = 2**30


def _probe(host_s, gpu_s, tokens=8192, base_gb=10.0, peak_gb=20.0, trainable_gb=0.0):
    return Probe(tokens=tokens, host_s=host_s, gpu_s=gpu_s, base_bytes=int(base_gb * GB), peak_bytes=int(peak_gb * GB),
                 trainable_bytes=int(trainable_gb * GB))


def test_a_host_bound_probe_doubles_the_budget_to_the_first_gpu_bound_one():
    """The H200's FP8 step at 8k: launches take longer than the kernels. 16k is the first budget whose kernels
    outlast the host's time (with the loop's margin); the step's rows double, as grad_accum can't go below 1."""
    probe = _probe(host_s=0.190, gpu_s=0.174)
    assert probe.busy_at(8192) == pytest.approx(0.174 / (0.190 * LOOP_MARGIN))
    choice = choose(probe, grad_accum=1, longest=320, capacity_gb=140)
    assert choice.tokens == 16384 and choice.grad_accum == 1 and choice.rows_per_step_vs_reference == 2
    assert choice.predicted_busy == 1.0 and "smallest budget predicted GPU-bound" in choice.reason
    line = budget.describe(choice, 1)
    assert "chose 16,384 tokens" in line and "2x the rows per optimizer step" in line


def test_a_larger_budget_takes_a_smaller_grad_accum_keeping_the_rows_per_step():
    choice = choose(_probe(host_s=0.190, gpu_s=0.174), grad_accum=4, longest=320, capacity_gb=None)
    assert (choice.tokens, choice.grad_accum, choice.rows_per_step_vs_reference) == (16384, 2, 1.0)
    assert "grad_accum 4 -> 2 (the same rows per optimizer step" in budget.describe(choice, 4)


def test_a_gpu_bound_probe_takes_the_smallest_budget_that_stays_gpu_bound():
    """Kernels 5x the host's launches at 8k: 2k still keeps the GPU busy, with 4x the micro-batches a step."""
    choice = choose(_probe(host_s=0.1, gpu_s=0.5), grad_accum=1, longest=320, capacity_gb=None)
    assert (choice.tokens, choice.grad_accum) == (2048, 4)
    # 0.125 s of kernels at 2k against 0.115 s of host: busy, but just; at 1k (not a candidate) it would not be
    assert choice.predicted_busy == 1.0


def test_the_boundary_of_busy_is_the_threshold_not_below_it():
    host = 0.1
    at_threshold = budget.BUSY * host * LOOP_MARGIN  # kernels at 16k exactly BUSY of the loop's host time
    below = choose(_probe(host_s=host, gpu_s=at_threshold / 2 * 0.999), 1, 320, None)
    exact = choose(_probe(host_s=host, gpu_s=at_threshold / 2 * 1.001), 1, 320, None)
    assert below.tokens == 32768 and exact.tokens == 16384


def test_memory_keeps_the_budget_where_a_larger_one_would_not_fit():
    """A fake memory model: 10 GB before, 20 GB at the probe's 8k peak, 1 GB of adapters. 16k would need
    10 + 2 + 20 = 32 GB (x1.18 the allocator's margin: 37.8) over a 30 GB cap: host-bound, but the largest that fits."""
    probe = _probe(host_s=0.190, gpu_s=0.174, base_gb=10, peak_gb=20, trainable_gb=1)
    assert probe.memory_gb_at(16384) == pytest.approx(32.0)
    choice = choose(probe, grad_accum=1, longest=320, capacity_gb=30)
    assert choice.tokens == 8192 and "host-bound at every budget that fits" in choice.reason
    assert choice.predicted_memory_gb == pytest.approx(22.0)
    tiny = choose(probe, grad_accum=1, longest=320, capacity_gb=5)
    assert tiny.tokens == 2048 and "no candidate fits" in tiny.reason


def test_a_pack_holds_the_longest_sequence_whatever_the_probe_says():
    choice = choose(_probe(host_s=0.01, gpu_s=1.0), grad_accum=1, longest=5000, capacity_gb=None)
    assert choice.tokens == 8192  # 2k and 4k can't hold a 5,000-token row
    assert choose(_probe(host_s=0.01, gpu_s=1.0), 1, longest=100_000, capacity_gb=None).tokens == 100_000


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
    monkeypatch.setattr(budget, "probe_model", lambda m, batch, amp: seen.append(batch["input_ids"].numel())
                        or _probe(host_s=0.1, gpu_s=0.06))  # kernels 0.12 s at 16k: the first over 0.95 x 0.115
    prep, record = budget.choose_for_run(cfg, res, model, prep)
    assert seen == [budget.REFERENCE]  # the probe ran on a real pack of the provisional budget
    assert cfg.batch.tokens == 16384 and cfg.batch.grad_accum == 1
    assert prep.collator.budget == 16384 and len(prep.for_trainer) < before
    batch = prep.collator([prep.for_trainer[0]])
    assert batch["input_ids"].shape[-1] == 16384
    assert record["tokens"] == 16384 and "grad_accum 2 -> 1" in record["line"]
