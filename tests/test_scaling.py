"""A sweep over GPU counts ends in a scaling table and plot (src/report/scaling.py): speed-up and per-GPU efficiency
against the 1-GPU job of the same sweep, with intervals from the jobs' own, on constructed reports (no GPU here)."""
import json
import math

import pandas as pd
import pytest

from src.base import stats
from src.report import scaling, summary

H200 = "NVIDIA H200"


def _report(job, gpus, rate, nodes=1, ci=0.02, call=None, extra=(), status="ok"):
    """A constructed job report: `rate` real tokens/s (summed over ranks) with a 95% interval of +-ci from 16
    batch means, on `gpus` ranks over `nodes` hosts."""
    th = {"real_tokens_per_s": rate, "real_tokens_per_s_low": rate * (1 - ci) if ci else None,
          "real_tokens_per_s_high": rate * (1 + ci) if ci else None} if rate else {}
    rep = {"job": job, "status": status, "overrides": ["distributed=ddp", f"distributed.nproc_per_job={gpus // nodes}",
                                                     f"distributed.nodes={nodes}", *extra],
           "config": {"batch": {"size": 8, "grad_accum": 1}, "model": {"name": "qwen3"}},
           "resolved": {"world_size": gpus, "distributed": "ddp" if gpus > 1 else "none"},
           "throughput": th, "env": {"device_name": H200, "world_size": gpus, "nodes": nodes},
           "step_time_s": {"mean": 1.0, "ci_batches": 16 if ci else None}}
    if call:
        rep["call"] = call
    return rep


def _scale(reports):
    return scaling.table(summary.table(reports), reports)


def test_a_sweep_over_gpu_counts_gives_each_job_its_efficiency_and_interval():
    reports = [_report("j1", 1, 1000), _report("j2", 2, 1900), _report("j4", 4, 3600), _report("j4x2", 4, 3400, nodes=2)]
    scale = _scale(reports).set_index("dir")
    assert list(scale.loc[["j1", "j2", "j4", "j4x2"], "gpus"]) == [1, 2, 4, 4]
    assert scale.loc["j4x2", ["nodes", "per_node"]].tolist() == [2, 2]
    two = scale.loc["j2"]
    assert two["speedup"] == pytest.approx(1.9) and two["efficiency"] == pytest.approx(0.95)
    # the interval is the ratio's of the two jobs' own intervals, divided by the GPU count
    i2, i1 = stats.Interval(1900, 1900 * 0.98, 1900 * 1.02, 16), stats.Interval(1000, 980, 1020, 16)
    ratio = stats.compare(i2, i1, 1900, 1000)
    assert (two["efficiency_low"], two["efficiency_high"]) == pytest.approx((ratio.low / 2, ratio.high / 2))
    assert two["efficiency_low"] < 0.95 < two["efficiency_high"]
    assert scale.loc["j4", "efficiency"] == pytest.approx(0.9) and scale.loc["j1", "efficiency"] == 1.0
    md = scaling.markdown(_scale(reports))
    assert "| 1 x 2 | 2 | 1,900 (1,862-1,938) | 1.90x (" in md and "| 95% (9" in md
    assert "| 2 x 2 | 4 |" in md and "the 1-GPU reference" in md


def test_a_ratio_is_only_taken_within_one_sweep():
    # JSONL rows of two device calls: the 2-GPU job of call b has no 1-GPU job of its own call to be measured against
    reports = [_report("one_a", 1, 1000, call="a"), _report("two_a", 2, 1900, call="a"), _report("two_b", 2, 2100, call="b")]
    scale = _scale(reports).set_index("dir")
    assert scale.loc["two_a", "efficiency"] == pytest.approx(0.95)
    assert math.isnan(scale.loc["two_b", "efficiency"]) and scale.loc["two_b", "reference"] is None
    assert "no 1-GPU job in this sweep" in scaling.markdown(_scale(reports))


def test_each_multi_gpu_job_is_measured_against_the_1_gpu_job_of_its_own_config():
    reports = [_report(f"b{b}_g{g}", g, rate, extra=[f"batch={b}"])
               for b, g, rate in ((8, 1, 1000), (8, 2, 1800), (16, 1, 1500), (16, 2, 2970))]
    scale = _scale(reports).set_index("dir")
    assert scale.loc["b8_g2", "reference_dir"] == "b8_g1" and scale.loc["b16_g2", "reference_dir"] == "b16_g1"
    assert scale.loc["b8_g2", "efficiency"] == pytest.approx(0.9) and scale.loc["b16_g2", "efficiency"] == pytest.approx(0.99)


def test_no_interval_on_either_side_gives_the_ratio_without_one_and_failed_jobs_are_left_out():
    reports = [_report("j1", 1, 1000, ci=None), _report("j2", 2, 1900), _report("j4", 4, None, status="oom")]
    scale = _scale(reports)
    assert list(scale["dir"]) == ["j1", "j2"]
    row = scale.set_index("dir").loc["j2"]
    assert row["efficiency"] == pytest.approx(0.95) and math.isnan(row["efficiency_low"])
    assert "95% (no interval: too few timed steps)" in scaling.markdown(scale)


def test_one_gpu_count_has_nothing_to_scale(tmp_path):
    reports = [_report("a", 2, 1900, extra=["batch=8"]), _report("b", 2, 2000, extra=["batch=16"])]
    assert _scale(reports).empty
    assert scaling.write(tmp_path, summary.table(reports), reports) == ("", [])
    assert not (tmp_path / "scaling.md").exists()


def test_a_gpu_count_sweep_summary_ends_in_the_scaling_table_and_plot(tmp_path):
    for r in (_report("0", 1, 1000), _report("1", 2, 1900), _report("2", 4, 3600)):
        (tmp_path / r["job"]).mkdir()
        (tmp_path / r["job"] / "report.json").write_text(json.dumps(r))
    md = summary.write(tmp_path)
    assert "## Scaling over GPUs" in md and "| 1 x 4 | 4 | 3,600" in md
    assert (tmp_path / "scaling.md").read_text() in md and (tmp_path / "scaling.png").stat().st_size > 0
    saved = pd.read_csv(tmp_path / "scaling.csv")
    assert saved["efficiency"].tolist() == pytest.approx([1.0, 0.95, 0.9])
    fig = scaling.figure(_scale([_report("a", 1, 1000), _report("b", 2, 1900)]), "qwen3 on " + H200)
    [line] = [c for c in fig.axes[0].containers]  # one family of jobs, its points with error bars
    assert list(line.lines[0].get_ydata()) == pytest.approx([1.0, 0.95])


@pytest.mark.slow  # two jobs, the second of two processes (gloo), on a 2-core machine: ~35 s
def test_a_real_sweep_over_process_counts_runs_each_job_on_its_own_count_and_ends_in_the_table(tmp_path):
    # The launcher's params are resolved once per sweep: before each job took its own count, every job of
    # `distributed.nproc_per_job=1,2` ran as one process. CPU timings say nothing of GPU scaling: only the shape here.
    from tests.conftest import QUICK, cli, read_report

    proc = cli("-m", "distributed=ddp", "distributed.nproc_per_job=1,2", *QUICK, f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    worlds = sorted(read_report(p.parent)["env"]["world_size"] for p in tmp_path.glob("*/report.json"))
    assert worlds == [1, 2]
    md = (tmp_path / "scaling.md").read_text()
    assert "| 1 x 2 | 2 |" in md and "the 1-GPU reference" in md and (tmp_path / "scaling.png").exists()
