"""W&B offline by default: the run's config, metrics and summary land on disk under stable names; a sweep
gets one run per job in one group plus a summary run; a broken W&B never stops training."""

import pytest

pytest.importorskip("wandb")  # a GPU machine without it still runs the rest of the suite

from src.run import run
from tests.conftest import QUICK, cli, compose, read_report
from tests.wandb_log import READER_MISSING, offline_runs, read_run

# wandb's own reader of offline runs (`wandb leet inspect`); without it the tests that read a run back skip
needs_reader = pytest.mark.skipif(READER_MISSING is not None, reason=str(READER_MISSING))


@needs_reader
def test_a_run_logs_offline_with_config_metrics_and_the_report(tmp_path):
    rep = run(compose(*QUICK, "logger=wandb"), tmp_path, overrides=["logger=wandb"])
    assert rep["status"] == "ok"
    [run_dir] = offline_runs(tmp_path)
    wb = read_run(run_dir)
    assert wb["name"] == "logger=wandb"
    assert set(wb["tags"]) == {"model:tiny-qwen3", "task:classification", "peft:lora"}
    assert wb["config"]["batch"] == {"size": 8, "grad_accum": 1, "tokens": None}
    assert wb["config"]["padding"]["strategy"] == "dynamic"  # a Choice (str Enum) as its plain value
    rows = [r for r in wb["history"] if "loss" in r]
    assert len(rows) == 4 and {"lr", "grad_norm", "step", "mem/peak_rss_gb"} <= set(rows[-1])
    assert any("perf/step_time_s" in r for r in rows)
    summary = wb["summary"]
    assert float(summary["perf/real_tokens_per_s"]) == pytest.approx(rep["throughput"]["real_tokens_per_s"])
    assert summary["status"] == "ok"
    assert summary["verdict/bottleneck"] == rep["verdict"]["bottleneck"]
    assert summary["diag/model.initial_loss"] == "pass"


@pytest.mark.slow
@needs_reader
def test_a_sweep_groups_its_jobs_and_adds_a_summary_run(tmp_path):
    proc = cli("-m", "batch=2,4", *QUICK, "logger=wandb", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = sorted(p.parent for p in tmp_path.glob("*/report.json"))
    assert len(jobs) == 2
    for job in jobs:
        [run_dir] = offline_runs(job)
        wb = read_run(run_dir)
        assert wb["group"] == tmp_path.name and wb["name"].startswith("batch=")
        assert "perf/real_tokens_per_s" in wb["summary"]
    [summary_dir] = offline_runs(tmp_path)
    wb = read_run(summary_dir)
    assert wb["group"] == tmp_path.name and wb["job_type"] == "sweep-summary"
    logged = {k: v for row in wb["history"] for k, v in row.items()}
    for plot in ("throughput_by_config", "throughput_vs_batch", "memory_vs_batch", "step_breakdown", "loss_curves"):
        assert logged[f"plots/{plot}._type"] == "image-file"  # the reader joins a logged object's fields with '.'
    assert not any(k.startswith("plots/throughput_heatmap") for k in logged)  # one axis swept: no grid to draw
    summary = wb["summary"]
    assert summary["ranked"]["_type"] == "table-file" and summary["ranked"]["nrows"] == 2
    assert "fastest" in summary["recommendation"]


def test_wandb_failing_to_start_does_not_stop_training(tmp_path, monkeypatch, caplog):
    import wandb

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(wandb, "init", broken)
    rep = run(compose(*QUICK, "logger=wandb"), tmp_path)
    assert rep["status"] == "ok" and (tmp_path / "report.json").exists()
    assert "wandb logging is off for this run: OSError: No space left on device" in caplog.text
    assert not offline_runs(tmp_path)


def test_logger_none_logs_nothing(tmp_path):
    rep = run(compose(*QUICK, "logger=none"), tmp_path)
    assert rep["status"] == "ok" and not (tmp_path / "wandb").exists()
