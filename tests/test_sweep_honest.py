"""A sweep's summary honest on any host (issue 51, item 3): a ranking the host may have made leads with the line
that says so and what would give one; each job that did not finish says why; a sweep where none finished exits 1;
the plan used, or fallen back from, is named; what a check could not measure shows in the table."""
import json

import pytest
from omegaconf import OmegaConf

from src.plan import sweep as planned_sweep
from src.report import caveats, summary
from tests.conftest import QUICK, cli
from tests.test_plots import _report

CPU = "cpu (2 cores, x86_64)"


def _grid(flags=(), device=CPU, repeats=1, rates=None):
    """The newcomer's 6-cell `batch=2,4,8 batch.grad_accum=1,2` sweep, with each job's flags; repeats > 1: each
    cell that many times (repeat=r, r > 0, as the launcher names them), its rate moving 2% a repeat."""
    rates = rates or {(2, 1): 900, (2, 2): 9000, (4, 1): 1500, (4, 2): 1400, (8, 1): 2100, (8, 2): 2000}
    out = []
    for (bs, ga), rate in rates.items():
        for r in range(repeats):
            rep = _report(bs, ga, rate * (1 + 0.02 * r), device=device, model="tiny-qwen3")
            rep["flags"] = {"reasons": list(flags)}
            if r:
                rep["overrides"] = rep["overrides"] + [f"repeat={r}"]
                rep["job"] += f"_r{r}"
            out.append(rep)
    return out


def _write(tmp_path, reports):
    for rep in reports:
        (tmp_path / rep["job"]).mkdir()
        (tmp_path / rep["job"] / "report.json").write_text(json.dumps({k: v for k, v in rep.items() if k != "job"}))
    return summary.write(tmp_path)


def test_a_sweep_on_a_busy_host_leads_with_cannot_rank_and_the_fix(tmp_path):
    """Every job flagged busy host (as the issue's 2-core CPU sweep was), and one 10x the same micro-batch at ga 1:
    the summary's first line, before the ranking, says the ranking can't be trusted and how to get one."""
    md = _write(tmp_path, _grid(flags=["busy host: load 3.4 per CPU"]))
    first = md.splitlines()[2]  # under the title
    assert first.startswith("**cannot rank these jobs: 6 of 6 finished jobs ran on a busy host, load up to 3.4 per CPU")
    assert "To rank them, rerun with sweep.repeats=3" in first and "on a quiet host" in first
    assert md.index(first) < md.index("fastest")  # before the answer it puts in doubt


def test_intervals_from_one_process_each_on_a_cpu_cannot_rank_either(tmp_path):
    line = caveats.trust(summary.table(_grid()))
    assert line.startswith("cannot rank these jobs: each job's interval comes from its one process, and on a CPU")
    assert line.endswith("rerun with " + caveats.FIX_REPEATS)  # a quiet host already: repeats alone


def test_a_quiet_gpu_sweep_and_a_repeated_cpu_sweep_rank_without_the_line():
    assert caveats.trust(summary.table(_grid(device="NVIDIA H100 80GB HBM3"))) is None
    repeated = summary.table(_grid(repeats=3))
    assert set(repeated["repeat"]) == {"3 of 3"} and caveats.trust(repeated) is None
    busy = caveats.trust(summary.table(_grid(flags=["busy host: load 2.0 per CPU"], repeats=3)))
    assert busy.endswith("To rank them, rerun on " + caveats.FIX_QUIET)  # repeats done: the host is what's left
    host_bound = _grid(device="NVIDIA H100 80GB HBM3", flags=["host-bound (GPU busy 42%): ..."])
    assert "on a host-bound step" in caveats.trust(summary.table(host_bound))
    assert caveats.trust(summary.table(_grid()[:1])) is None  # one job: nothing is ranked


def test_config_errors_say_why_one_line_a_job_and_a_sweep_where_none_finished_exits_1(tmp_path):
    reports = [dict(_report(bs, 1, None, status="config_error"), job=f"batch={bs}",
                    error=f"gpu.memory_cap_gb=24.0: must be > 0 GB, on a CUDA GPU\n(details {bs})") for bs in (2, 4)]
    md = _write(tmp_path, reports)
    assert "- no job finished: nothing to recommend (2 config_error; each job's reason below)" in md
    # named by what sets the job apart, its first line only
    assert "- config_error in batch.size=2: gpu.memory_cap_gb=24.0: must be > 0 GB, on a CUDA GPU\n" in md
    assert "- config_error in batch.size=4: " in md
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}, "logger": {"name": "none"}})
    with pytest.raises(SystemExit) as out:
        summary.SweepSummary().on_multirun_end(config)
    assert out.value.code == 1 and out.value.sweep_over  # src/run.py passes it on as 1, not as a config error's 2


def test_the_plan_used_or_fallen_back_from_is_named(tmp_path):
    assert caveats.plan_line(tmp_path) is None  # no plan.json: an older sweep
    planned_sweep.record(tmp_path, "all")
    assert caveats.plan_line(tmp_path) is None  # every cell, as asked: nothing to say
    planned_sweep.record(tmp_path, "predict")
    assert caveats.plan_line(tmp_path).startswith("plan: sweep.plan=predict: predicted first")
    planned_sweep.record(tmp_path, "predict", "no GPU here, so no cell can be predicted")
    assert json.loads((tmp_path / caveats.PLAN_FILE).read_text()) == {
        "asked": "predict", "used": "all", "why": "no GPU here, so no cell can be predicted"}
    md = _write(tmp_path, _grid(device="NVIDIA H100 80GB HBM3"))
    assert "- plan: every cell ran, not sweep.plan=predict's waves: no GPU here, so no cell can be predicted\n" in md


def test_not_measured_shows_in_the_sweeps_table(tmp_path):
    reports = _grid(device="NVIDIA H100 80GB HBM3")
    reports[0]["not_measured"] = {"memory_gb.device_used": "could not check: NVML: NVMLError: not supported"}
    md = _write(tmp_path, reports)
    header = next(line for line in md.splitlines() if line.startswith("| rank"))
    assert "| not_measured |" in header
    assert "memory_gb.device_used: could not check: NVML: NVMLError: not supported" in md
    quiet = summary._markdown(summary.table(_grid(device="NVIDIA H100 80GB HBM3")), [], tmp_path)
    assert "| not_measured |" not in quiet  # no job missed a figure: no empty column


def test_a_cpu_sweep_of_config_errors_names_each_reason_its_fallen_back_plan_and_exits_1(tmp_path):
    """The issue's `-m sweep=fit model=qwen3 gpu.memory_cap_gb=24` on a CPU, in two cells: every job a config
    error, and a planned sweep that can't predict without a GPU."""
    proc = cli("-m", "batch=2,4", "gpu.memory_cap_gb=24", "sweep.plan=predict", *QUICK, f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    md = (tmp_path / "summary.md").read_text()
    assert "- plan: every cell ran, not sweep.plan=predict's waves: no GPU here, so no cell can be predicted" in md
    assert md.count("- config_error in batch=") == 2 and "gpu.memory_cap_gb=24.0: must be > 0 GB" in md
    assert ": config_error: gpu.memory_cap_gb=24.0" in proc.stderr + proc.stdout  # the launcher's line for the job
    assert "the sweep exits 1" in proc.stderr


def test_the_planners_printed_line_says_what_it_could_not_measure():
    raw = {"cell": "b8", "family": "", "memory_gb": 3.0, "real_tokens_per_s": 1000.0, "low": 900.0, "high": 1100.0,
           "not_measured": {"micro_batch_s.kernels (2-layer copy)": "not measured: no GPU"}}
    assert planned_sweep.line(raw, "") == ("3.0 GB, 1,000 (900-1,100) real tok/s; "
                                           "micro_batch_s.kernels (2-layer copy) not measured: no GPU")


def _cells(*overrides_per_job):
    from omegaconf import OmegaConf as OC

    from src.plan.sweep import family
    from tests.conftest import compose

    return {f"job{i}": {"overrides": list(o), "family": family(o),
                        "config": OC.to_container(compose(*o), resolve=True)} for i, o in enumerate(overrides_per_job)}


def test_a_cpu_sweep_of_large_effective_batches_is_estimated_before_it_starts_and_a_small_one_is_not():
    """sweep=fit's 64 rows a step in every cell: estimated (the issue's ~1 h sweep said nothing first); the
    QUICK two-cell sweeps the tests run are not worth the probe. The estimate's arithmetic on given timings."""
    from src.plan import estimate

    fit = _cells(*[("sweep=fit", f"batch={bs}") for bs in (1, 8, 64)])
    assert [estimate.rows_per_job(c["config"]) for c in fit.values()] == [64 * 60] * 3
    assert estimate.worth_it([c["config"] for c in fit.values()])
    assert not estimate.worth_it([c["config"] for c in _cells(("batch=2", *QUICK), ("batch=4", *QUICK)).values()])
    timed = {"batch=N sweep=fit": {"fixed_s": 20.0, "a": 0.3, "b": 0.01, "optimizer_s": 0.05}}
    timed = {c["family"]: timed["batch=N sweep=fit"] for c in fit.values()}
    said = estimate.lines(fit, timed)
    # bs 1 x ga 64: 60 steps of 64 micro-batches at 0.31 s, an AdamW step each, the preflight's and the fixed cost
    one = 20.0 + 0.31 + 60 * (64 * 0.31 + 0.05)
    assert estimate.job_seconds(fit["job0"]["config"], timed[fit["job0"]["family"]]) == pytest.approx(one)
    assert said[0].startswith("sweep estimate (no GPU: each family timed on this CPU): 3 jobs, up to ")
    assert f"the longest, batch=1 (bs 1 x ga 64 x 60 steps): ~{one / 60:.0f} min" in said[0]  # sweep=fit: shared
    assert said[2:] == ["\tbatch=1: ~20 min", "\tbatch=8: ~3 min", "\tbatch=64: ~80 s"]  # under 90 s: seconds
    assert said[1].startswith("every job runs as asked; to spend less: fewer steps (trainer.max_steps=N)")
    none = estimate.lines(fit, {c["family"]: {"why_not": "OSError: no data"} for c in fit.values()})
    assert none == ["sweep estimate: none (OSError: no data); the sweep runs as asked"]


def test_the_launcher_estimates_a_cpu_sweep_in_a_process_of_its_own_and_leaves_finished_jobs_out(tmp_path, monkeypatch,
                                                                                                 caplog):
    """estimate_first as the launcher calls it: each family's model built and timed in `python -m
    src.plan.estimate`, the lines logged; a job already finished is not estimated, and a GPU sweep never is."""
    import types

    from src.plan import estimate
    from tests.conftest import compose

    def load_sweep_config(config, overrides):  # Hydra's: the job's config, its hydra.sweep.* included
        cfg = compose(*overrides)
        OmegaConf.set_struct(cfg, False)
        cfg.hydra = {"sweep": {"dir": str(tmp_path), "subdir": "_".join(overrides)}}
        return cfg

    launcher = types.SimpleNamespace(params={}, repeats=1, config=OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}}),
                                     hydra_context=types.SimpleNamespace(config_loader=types.SimpleNamespace(
                                         load_sweep_config=load_sweep_config)))
    jobs = [["batch=1", *QUICK], ["batch=4", *QUICK], ["batch=8", *QUICK]]
    with caplog.at_level("INFO"):
        assert planned_sweep.estimate_first(launcher, jobs) == []  # 4 steps of a few rows: not worth a build
    assert "sweep estimate" not in caplog.text  # not even "none": nothing to say
    finished = tmp_path / "_".join(jobs[2])
    finished.mkdir()
    (finished / "report.json").write_text(json.dumps({"status": "ok"}))
    monkeypatch.setattr(estimate, "ESTIMATE_ROWS", 10)  # the parent decides; the probe itself is the real one
    with caplog.at_level("INFO"):
        said = planned_sweep.estimate_first(launcher, jobs)
    assert said[0].startswith("sweep estimate (no GPU: each family timed on this CPU): 2 jobs, about ")
    assert [line.split(":")[0] for line in said[2:]] == ["\tbatch=1", "\tbatch=4"] and said[0] in caplog.text
    (fig,) = json.loads((tmp_path / ".plan" / "estimate.json").read_text()).values()
    assert set(fig["probes"]) == {"1", "4"} and fig["fixed_s"] > 0 and fig["optimizer_s"] > 0
    assert fig["a"] + fig["b"] * 4 == pytest.approx(fig["probes"]["4"])  # the line passes through the wider probe
    launcher.params["gpus_per_node"] = 1
    assert planned_sweep.estimate_first(launcher, jobs) == []  # a GPU: sweep.plan=predict's to predict


def test_a_two_job_sweep_whose_other_job_stalled_does_not_crown_the_one_left():
    """The README's first CPU sweep (batch=2,4 on a busy 2-core host): one job stalled, so it is unranked and the
    'fastest' line names the only job left. The summary says so first, with the host's load and the fix."""
    jobs = _grid(flags=["busy host: load 2.2 per CPU"], rates={(2, 1): 209, (4, 1): 1698})
    jobs[1]["flags"] = {"reasons": ["stalled: timed step 1 took 3.62 s, 45x the median 0.0813 s", *jobs[1]["flags"]["reasons"]]}
    line = caveats.trust(summary.table(jobs))
    assert line.startswith("cannot rank these jobs: 1 of 2 finished jobs stalled")
    assert "2 of 2 finished jobs ran on a busy host, load up to 2.2 per CPU" in line
    assert "rerun=true" in line and caveats.FIX_QUIET in line
    quiet = _grid(device="NVIDIA H100 80GB HBM3", rates={(2, 1): 209, (4, 1): 1698})
    quiet[1]["flags"] = {"reasons": ["stalled: timed step 1 took 3.62 s, 45x the median 0.0813 s"]}
    assert caveats.trust(summary.table(quiet)).endswith("To rank them, rerun with rerun=true (a plain rerun skips the finished jobs)")
