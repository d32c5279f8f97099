"""A planned sweep's summary (sweep.plan=predict): cells only predicted (prediction.json, no report.json) are
rows of their own, marked, never ranked or recommended; cells that ran show their prediction and its error;
the throughput plot draws the predicted-only cells hollow. Constructed sweep directories, no processes."""
import json

import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from src.report import plots, summary
from tests.test_plots import _report

CAPACITY = 24.0


def _prediction(size, accum, rate, decision, memory=10.0, why_not=None):
    """A cell's prediction.json as the planning launcher writes it: `rate` predicted real tokens/s, +-2%."""
    return {"overrides": [f"batch.size={size}", f"batch.grad_accum={accum}"],
            "config": {"batch": {"size": size, "grad_accum": accum, "tokens": None}, "model": {"name": "t5-small"}},
            "prediction": {"family": "padding=packed precision=bf16", "memory_gb": memory, "capacity_gb": CAPACITY,
                           "real_tokens_per_s": rate, "low": rate and rate * 0.98, "high": rate and rate * 1.02,
                           "step_s": 0.5, "why_not": why_not},
            "decision": decision}


def _write(sweep, job, report=None, prediction=None):
    (sweep / job).mkdir()
    if report is not None:
        (sweep / job / "report.json").write_text(json.dumps({k: v for k, v in report.items() if k != "job"}))
    if prediction is not None:
        (sweep / job / "prediction.json").write_text(json.dumps(prediction))


@pytest.fixture
def planned(tmp_path):
    """Six cells: three ran (bs 8 x ga 2 the fastest, measured 4% above its prediction), two not run (bs 2 x ga 8
    predicted slower; bs 1 x ga 16 with no predicted rate, and why), one predicted out of memory (bs 32)."""
    for size, accum, rate, pred in [(4, 4, 1200, 1250), (8, 2, 1560, 1500), (16, 1, 1400, 1450)]:
        _write(tmp_path, f"bs{size}_ga{accum}", _report(size, accum, rate, ci=0.02),
               _prediction(size, accum, pred, "ran: measured within its prediction"))
    _write(tmp_path, "bs2_ga8", prediction=_prediction(2, 8, 900, "not run: predicted slower than the winner"))
    _write(tmp_path, "bs1_ga16", prediction=_prediction(1, 16, None, "not run: no prediction", why_not="no GPU"))
    _write(tmp_path, "bs32_ga1", prediction=_prediction(32, 1, 1900, "predicted out of memory: 27.2 GB > 24.0 GB",
                                                        memory=27.2))
    return tmp_path


def test_predicted_only_cells_are_marked_rows_never_ranked_nor_recommended(planned):
    md = summary.write(planned)
    df = pd.read_csv(planned / "summary.csv")
    by_dir = df.set_index("dir")
    assert list(df["dir"][:3]) == ["bs8_ga2", "bs16_ga1", "bs4_ga4"]  # measured first, by measured tok/s
    assert list(df["status"][3:]) == ["predicted", "predicted", "predicted_oom"]
    assert df["rank"][:3].notna().all() and df["rank"][3:].isna().all()  # predicted cells: no rank
    assert by_dir.loc["bs2_ga8", "predicted_tok_s"] == 900 and pd.isna(by_dir.loc["bs2_ga8", "real_tok_s"])
    assert by_dir.loc["bs32_ga1", "decision"].startswith("predicted out of memory")
    assert by_dir.loc["bs8_ga2", "prediction_error"] == pytest.approx(1560 / 1500 - 1)
    assert pd.isna(by_dir.loc["bs2_ga8", "prediction_error"])

    lines = [line[2:] for line in md.splitlines() if line.startswith("- ")]
    assert "planned: 3 of 6 cells ran; 1 predicted out of memory; 2 predicted slower (not run)" in lines
    fastest = next(line for line in lines if line.startswith(("fastest", "measured fastest")))
    assert "batch.size=8, batch.grad_accum=2" in fastest
    told = " ".join(line for line in lines if not line.startswith("planned:"))
    assert "batch.size=32" not in told and "batch.size=2," not in told and "batch.size=1," not in told
    assert not any(line.startswith("did not finish") for line in lines)
    assert not any("have no report" in line for line in lines)

    rows = {r.split(" | ")[1]: r for r in md.splitlines() if r.startswith("| ") and "batch.size=" in r}
    assert " | predicted only | " in rows["batch.size=2, batch.grad_accum=8"]
    assert "900 (882-918)" in rows["batch.size=2, batch.grad_accum=8"]
    assert " | no GPU | " in rows["batch.size=1, batch.grad_accum=16"]
    assert " | predicted OOM | " in rows["batch.size=32, batch.grad_accum=1"]
    assert "predicted out of memory: 27.2 GB > 24.0 GB" in rows["batch.size=32, batch.grad_accum=1"]
    assert rows["batch.size=8, batch.grad_accum=2"].startswith("| 1 | ") and " | +4% | " in rows["batch.size=8, batch.grad_accum=2"]
    assert rows["batch.size=2, batch.grad_accum=8"].startswith("| - | ")


def test_the_largest_fit_of_each_family_is_named_by_its_job_when_there_are_several(tmp_path):
    for padding, rate in (("dynamic", 1500), ("max_length", 1400)):
        pred = _prediction(32, 2, rate, "ran: measured within its prediction", memory=7.7)
        pred["overrides"].append(f"padding={padding}")
        pred["prediction"]["family"] = f"padding={padding}"
        pred["largest_fit"] = True
        report = {**_report(32, 2, rate, ci=0.02), "overrides": pred["overrides"]}
        _write(tmp_path, f"bs32_{padding}", report, pred)
    line = next(x for x in summary.write(tmp_path).splitlines() if x.startswith("- planned:"))
    assert "padding=dynamic: bs 32 x ga 2 (ran ok, predicted 7.7 GB)" in line
    assert "padding=max_length: bs 32 x ga 2 (ran ok, predicted 7.7 GB)" in line


def test_cells_below_the_largest_fit_are_counted_as_smaller_not_slower(tmp_path):
    """sweep.question=largest times no speed: the cells it leaves out are smaller than the largest predicted to
    fit, and the plan line says so instead of calling them slower (an H200 summary of SOLAR-10.7B did)."""
    _write(tmp_path, "bs64", _report(64, 2, 4700, ci=0.02), {**_prediction(64, 2, None, "ran", memory=16.9),
                                                             "largest_fit": True})
    for size, memory in ((16, 8.4), (32, 11.3)):
        _write(tmp_path, f"bs{size}", prediction=_prediction(
            size, 128 // size, None, f"not run: predicted to fit ({memory} GB), below the largest that does", memory))
    _write(tmp_path, "bs128", prediction=_prediction(128, 1, None, "predicted out of memory: 28.1 GB > 24.0 GB", 28.1))
    line = next(x for x in summary.write(tmp_path).splitlines() if x.startswith("- planned:"))
    assert line.startswith("- planned: 1 of 4 cells ran; 1 predicted out of memory; 0 predicted slower (not run); "
                           "2 smaller than the largest predicted to fit (not run); the largest micro-batch")


def test_a_cell_planned_to_run_without_a_report_is_warned_of_not_shown_as_predicted(planned):
    _write(planned, "bs64_ga1", prediction=_prediction(64, 1, 1000, "ran"))
    md = summary.write(planned)
    assert "1 job(s) have no report, so are not ranked: bs64_ga1" in md
    assert "bs64_ga1" not in set(pd.read_csv(planned / "summary.csv")["dir"])


def test_the_throughput_plot_draws_predicted_only_cells_hollow_and_not_the_predicted_oom(planned):
    df = summary.table(summary.load_reports(planned))
    figs = plots.figures(df)
    ax = figs["throughput_vs_batch"].axes[0]
    hollow = next(c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == "predicted, not run")
    marker = hollow.lines[0]
    assert marker.get_markerfacecolor() == "none"
    assert list(marker.get_xdata()) == [2] and list(marker.get_ydata()) == [900]  # bs 1: no predicted rate
    measured = [c for c in ax.containers if isinstance(c, ErrorbarContainer) and c is not hollow]
    assert all(900 not in list(c.lines[0].get_ydata()) for c in measured)
    assert "predicted, not run" in [t.get_text() for t in ax.get_legend().get_texts()]
    failed = next(c for c in ax.collections if c.get_label().startswith("did not finish"))
    assert failed.get_offsets()[:, 0].tolist() == [32]  # the predicted OOM: on the axis, like a failed job
    assert all(1900 not in list(line.get_ydata()) for line in ax.lines)
    best = next(c for c in ax.collections if c.get_label().startswith("best"))
    assert best.get_offsets().tolist() == [[8, 1560]]

    bars = figs["throughput_by_config"].axes[0]
    hollow_bars = next(c for c in bars.containers if isinstance(c, BarContainer) and c.get_label() == "predicted, not run")
    assert [p.get_width() for p in hollow_bars.patches] == [900] and not hollow_bars.patches[0].get_fill()


def test_the_memory_plot_draws_the_cells_not_run_hollow_at_their_predicted_memory(planned):
    df = summary.table(summary.load_reports(planned))
    ax = plots.figures(df)["memory_vs_batch"].axes[0]
    hollow = [c for c in ax.collections if len(c.get_offsets()) and not c.get_facecolors().any()]
    points = sorted(tuple(xy) for c in hollow for xy in c.get_offsets().tolist())
    # bs 1 (no predicted rate, a predicted memory), bs 2 predicted slower, bs 32 predicted out of memory
    assert points == [(1, 10.0), (2, 10.0), (32, 27.2)]
    assert "predicted, not run" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_sweep_without_predictions_gets_no_prediction_columns_or_plan_line(tmp_path):
    for size, accum, rate in [(4, 4, 1200), (8, 2, 1560)]:
        _write(tmp_path, f"bs{size}_ga{accum}", _report(size, accum, rate))
    md = summary.write(tmp_path)
    df = pd.read_csv(tmp_path / "summary.csv")
    assert not {"predicted_tok_s", "prediction_error", "decision"} & set(df) and "planned:" not in md
    assert list(df["rank"]) == [1, 2] and df["rank"].dtype.kind == "i"
