"""A sweep's plots on constructed tables: what each figure draws (read off the Figure objects before they
are saved), that titles name the model and the card, and that odd tables (one row, all failed, NaN columns,
a CPU sweep) still give plots."""
import math

import numpy as np
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from src.report import plots, summary
from src.measure import PHASES

H100 = "NVIDIA H100 80GB HBM3"


def _report(size, accum, rate, status="ok", ci=0.05, host=None, device=H100, model="t5-small", tokens=None,
            memory=None, curve=None):
    """A job's report.json as the summary reads it: `ci` the interval's half-width as a share (None: no interval)."""
    throughput = {}
    if rate:
        throughput = {"real_tokens_per_s": rate, **({"real_tokens_per_s_low": rate * (1 - ci),
                                                      "real_tokens_per_s_high": rate * (1 + ci)} if ci else {})}
    return {"job": f"bs{size}_ga{accum}", "status": status,
            "overrides": [f"batch.size={size}", f"batch.grad_accum={accum}"],
            "config": {"batch": {"size": size, "grad_accum": accum, "tokens": tokens}, "model": {"name": model}},
            "throughput": throughput, "env": {"device_name": device},
            "verdict": {"saturated": False, "bottleneck": "compute"},
            "step_time_s": {"mean": 0.1 * size * accum, **({"ci_batches": 10} if ci else {})} if rate else {},
            "memory_gb": memory or {"peak_reserved": size, "capacity": 80.0},
            "breakdown_s": ({"data": 0.01 * size, "compute": 0.06 * size * accum, "optimizer": 0.02, "other": 0.01,
                             "host": host} if rate else {}),
            "loss": {"curve": curve or [[1, 10.0], [2, 8.0], [3, 7.0]], "expected_initial": 10.4} if rate else {}}


def _sweep(**kw):
    """Effective batch 16 over three splits, effective batch 32 over two (bs 16 x ga 2 the clear winner), and an
    out-of-memory batch 32."""
    jobs = [(4, 4, 900), (8, 2, 1200), (16, 1, 1500), (8, 4, 1100), (16, 2, 2000), (32, 1, None)]
    return [_report(s, a, r, status="ok" if r else "oom", **kw) for s, a, r in jobs]


def test_every_plot_is_written_with_the_model_and_the_card_in_its_title(tmp_path):
    reports = _sweep()
    df = summary.table(reports)
    paths = plots.plots(df, tmp_path, model="t5-small") + [plots.loss_curves(reports, df, tmp_path)]
    names = {p.name for p in paths}
    assert names == {"throughput_by_config.png", "throughput_vs_batch.png", "throughput_heatmap.png",
                     "memory_vs_batch.png", "step_breakdown.png", "loss_curves.png"}
    assert all(p.stat().st_size > 5000 for p in paths)
    figures = [*plots.figures(df, model="t5-small").values(), plots.loss_figure(reports, df)]
    for fig in figures:
        title = fig.axes[0].get_title()
        assert "t5-small" in title and H100 in title, title


def test_the_model_comes_from_the_tables_model_column_when_not_given():
    df = summary.table(_sweep()).assign(model="bart-base")
    assert all("bart-base on " + H100 in f.axes[0].get_title() for f in plots.figures(df).values())
    assert "unknown model" in plots.figures(df.drop(columns="model"))["throughput_vs_batch"].axes[0].get_title()


def test_throughput_has_one_line_per_effective_batch_with_error_bars_best_and_failed_marked():
    reports = _sweep()
    reports[1] = _report(8, 2, 1200, ci=None)  # no interval: its point gets no bar
    df = summary.table(reports)
    ax = plots.figures(df)["throughput_vs_batch"].axes[0]
    lines = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in lines] == ["effective batch 16", "effective batch 32"]
    eff16, eff32 = lines
    assert list(eff16.lines[0].get_xdata()) == [4, 8, 16] and list(eff32.lines[0].get_xdata()) == [8, 16]
    assert list(eff16.lines[0].get_ydata()) == [900, 1200, 1500]
    bars = eff16.lines[2][0].get_segments()  # one vertical bar per point: (x, low), (x, high)
    assert len(bars) == 3 and len(bars[1]) == 0  # bs 8's interval is NaN: no bar
    assert np.allclose(bars[0], [[4, 855], [4, 945]]) and np.allclose(bars[2], [[16, 1425], [16, 1575]])
    best = next(c for c in ax.collections if c.get_label().startswith("best"))
    assert best.get_offsets().tolist() == [[16, 2000]] and best.get_label() == "best (rank 1)"
    failed = next(c for c in ax.collections if c.get_label().startswith("did not finish"))
    assert failed.get_label() == "did not finish (oom)" and failed.get_offsets()[:, 0].tolist() == [32]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "micro-batch size"


def test_jobs_tied_for_rank_1_are_all_marked_best():
    df = summary.table(_sweep())
    df.loc[df["batch"].eq(16) & df["grad_accum"].eq(1), "rank"] = 1  # the ranking could not tell it from the best
    best = next(c for c in plots.figures(df)["throughput_vs_batch"].axes[0].collections
                if c.get_label().startswith("best"))
    assert best.get_label() == "best (rank 1, 2 tied)" and sorted(best.get_offsets().tolist()) == [[16, 1500], [16, 2000]]


def test_breakdown_shares_sum_to_one_per_job_sorted_by_batch_with_host_idle_and_step_time():
    df = summary.table(_sweep(host=0.02))
    shares = plots.step_shares(df)
    assert np.allclose(shares[list(PHASES)].sum(axis=1), 1.0)
    assert list(zip(df.loc[shares.index, "batch"], df.loc[shares.index, "grad_accum"])) == \
        [(4, 4), (8, 2), (8, 4), (16, 1), (16, 2)]
    ax = plots.figures(df)["step_breakdown"].axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    phases, host = bars[:len(PHASES)], bars[-1]
    assert [b.get_label() for b in phases] == list(PHASES)
    heights = np.array([[p.get_height() for p in b.patches] for b in phases]).sum(axis=0)
    assert np.allclose(heights, 1.0)
    assert host.get_label() == "GPU idle, waiting for the host" and host.patches[0].get_hatch() == "//"
    total = 0.01 * 4 + 0.06 * 16 + 0.03  # bs 4 x ga 4's phases
    assert host.patches[0].get_height() == pytest.approx(0.02 / total)
    assert [t.get_text() for t in ax.texts] == ["1.60 s", "1.60 s", "3.20 s", "1.60 s", "3.20 s"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bs 4 x ga 4", "bs 8 x ga 2", "bs 8 x ga 4",
                                                             "bs 16 x ga 1", "bs 16 x ga 2"]


def test_jobs_of_one_batch_shape_are_named_by_their_overrides():
    reports = [_report(8, 1, 1000), _report(8, 1, 1100)]
    for r, padding in zip(reports, ("dynamic", "grouped")):
        r["job"], r["overrides"] = padding, r["overrides"] + [f"padding={padding}"]
    drawn = plots.figures(summary.table(reports))
    ax = drawn["step_breakdown"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["padding=grouped", "padding=dynamic"]
    ax = drawn["throughput_vs_batch"].axes[0]  # the line takes the faster; the slower is an open, named point
    line, other = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert line.get_label() == "effective batch 8" and list(line.lines[0].get_ydata()) == [1100]
    assert list(other.lines[0].get_ydata()) == [1000] and [t.get_text() for t in ax.texts] == ["padding=dynamic"]


def test_heatmap_text_is_white_on_dark_cells_and_black_on_light_ones_and_the_colorbar_says_what_it_is():
    assert plots.text_colour((0.27, 0.0, 0.33, 1.0)) == "white"  # viridis' dark end
    assert plots.text_colour((0.99, 0.91, 0.14, 1.0)) == "black"  # its yellow end
    df = summary.table(_sweep())
    fig = plots.figures(df)["throughput_heatmap"]
    ax, colorbar = fig.axes
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["900"] == "white" and colours["2,000 *"] == "black"  # slowest: darkest cell; fastest: brightest
    assert colours["OOM"] not in ("white", "black")  # a failed cell is blank: its status in colour
    assert colorbar.get_ylabel() == "real tokens/s"


def test_loss_is_drawn_against_samples_seen_or_tokens_seen_for_a_token_budget():
    reports = [_report(4, 1, 900), _report(8, 2, 1000)]
    df = summary.table(reports)
    ax = plots.loss_figure(reports, df).axes[0]
    assert ax.get_xlabel().startswith("samples seen")
    assert {tuple(line.get_xdata()) for line in ax.get_lines()[:2]} == {(4, 8, 12), (16, 32, 48)}
    packed = [_report(4, 2, 900, tokens=2048)]
    ax = plots.loss_figure(packed, summary.table(packed)).axes[0]
    assert "tokens seen" in ax.get_xlabel() and list(ax.get_lines()[0].get_xdata()) == [4096, 8192, 12288]
    mixed = reports + packed  # tokens and samples can't share an axis
    assert plots.loss_figure(mixed, summary.table(mixed)).axes[0].get_xlabel() == "optimizer step"


def test_a_chosen_token_budget_is_drawn_as_the_budget_the_probe_chose():
    """sweep=levers' auto_budget job: batch.tokens=auto in its config. The loss plot multiplied the steps by the
    string "auto" and the sweep's summary failed on a GPU; on a CPU the probe picks rows, drawn as samples."""
    auto = _report(1, 1, 950, tokens="auto")
    auto["resolved"] = {"budget": {"tokens": 16384, "grad_accum": 1}}
    packed = [_report(1, 2, 900, tokens=8192), auto]
    ax = plots.loss_figure(packed, summary.table(packed)).axes[0]
    assert "tokens seen" in ax.get_xlabel()
    assert [list(line.get_xdata()) for line in ax.get_lines()[:2]] == [[16384, 32768, 49152], [16384, 32768, 49152]]
    on_cpu = _report(4, 1, 900, tokens="auto")  # no budget chosen: batch.size rows
    ax = plots.loss_figure([on_cpu], summary.table([on_cpu])).axes[0]
    assert ax.get_xlabel().startswith("samples seen") and list(ax.get_lines()[0].get_xdata()) == [4, 8, 12]


@pytest.mark.parametrize("case", ["one row", "all failed", "nan columns", "cpu sweep", "a stalled job"])
def test_plots_survive_odd_tables(case, tmp_path):
    if case == "a stalled job":  # finished, unranked (rank NA): the README's CPU sweep on a busy host made one
        reports = _sweep(device="cpu", memory={"peak_rss_gb": 1.5})
        reports[0]["flags"] = {"reasons": ["stalled: the process stood still for 3.0 s inside the timed window"]}
    elif case == "one row":
        reports = [_report(8, 1, 1000, ci=None)]
    elif case == "all failed":
        reports = [_report(s, 1, None, status=st) for s, st in ((8, "oom"), (16, "error"))]
    elif case == "nan columns":
        reports = _sweep(ci=None)
    else:
        reports = _sweep(device="cpu", memory={"peak_rss_gb": 1.5})
    df = summary.table(reports)
    if case == "nan columns":  # None where no job reached a field: object columns, as summary.table builds them
        df = df.assign(step_s=math.nan, capacity_gb=None, peak_reserved_gb=None, optimizer_s=None,
                       real_tok_s_low=None, real_tok_s_high=None).drop(columns="saturated")
        assert df["optimizer_s"].dtype == object
    paths = plots.plots(df, tmp_path) + [p for p in [plots.loss_curves(reports, df, tmp_path)] if p]
    assert paths and all(p.stat().st_size > 3000 for p in paths)
    names = {p.name for p in paths}
    assert {"throughput_by_config.png", "throughput_vs_batch.png", "memory_vs_batch.png"} <= names
    assert ("throughput_heatmap.png" in names) == (case in ("nan columns", "cpu sweep", "a stalled job"))  # a batch x grad_accum grid
    if case == "a stalled job":  # its bar is not gold, and says why it has no rank
        ticks = [t.get_text() for t in plots.bars_figure(df, "").axes[0].get_yticklabels()]
        assert sum("(stalled: unranked)" in t for t in ticks) == 1
    if case == "all failed":
        assert "step_breakdown.png" not in names and "loss_curves.png" not in names
        ax = plots.figures(df)["throughput_vs_batch"].axes[0]
        assert not [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    if case == "cpu sweep":
        ax = plots.figures(df)["memory_vs_batch"].axes[0]
        assert ax.get_legend_handles_labels()[1][0] == "rss, batch.grad_accum=1"
        assert "on cpu" in ax.get_title()


def test_memory_has_one_line_per_model_and_predictions_for_jobs_that_ran_out_of_memory():
    """A largest-batch search over two models: each model's jobs are one line (a line joining two models' peaks
    zigzagged and read as memory falling with batch size), and a job that ran out of memory still shows the
    prediction that said it would not fit."""
    reports = []
    for model, base in (("small", 8.0), ("large", 11.0)):
        for size, status in ((16, "ok"), (32, "ok"), (64, "oom")):
            r = _report(size, 1, 1000 if status == "ok" else None, status=status, model=model,
                        memory={"peak_reserved": base + size / 8, "peak_allocated": base - 1 + size / 8,
                                "capacity": 24.0} if status == "ok" else {"capacity": 24.0})
            r["overrides"] = [f"model={model}", f"batch.size={size}"]
            r["job"] = f"{model}_bs{size}"
            r["memory_predicted_gb"] = {"peak_allocated": base - 1.1 + size / 8 + (16 if status == "oom" else 0)}
            reports.append(r)
    ax = plots.figures(summary.table(reports))["memory_vs_batch"].axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert [l for l in labels if l.startswith("peak")] == [] and "reserved, model=small" in labels
    assert "reserved, model=large" in labels
    lines = {l.get_label(): l for l in ax.get_lines()}
    small = lines["reserved, model=small"]
    assert list(small.get_xdata()) == [16, 32] and list(small.get_ydata()) == [10.0, 12.0]  # rises: never joined
    predicted = [l for l in ax.get_lines() if l.get_linestyle() == ":" and len(l.get_xdata())]
    assert len(predicted) == 2 and all(list(l.get_xdata()) == [16, 32, 64] for l in predicted)
    assert max(max(l.get_ydata()) for l in predicted) > 24  # the OOM job's prediction, over the capacity


def _padding_sweep():
    """One batch shape, three paddings: two of them can't be told apart."""
    out = []
    for padding, rate in (("dynamic", 1000), ("grouped", 1380), ("packed", 1400)):
        r = _report(8, 1, rate)
        r["job"], r["overrides"] = f"padding={padding}", [f"padding={padding}"]
        out.append(r)
    return out


def test_a_sweep_of_one_key_is_a_bar_per_config_with_its_interval_and_no_heatmap():
    df = summary.table(_padding_sweep())
    figs = plots.figures(df)
    assert "throughput_heatmap" not in figs  # three configs in one batch x grad_accum cell: a cell would show one
    ax = figs["throughput_by_config"].axes[0]
    [bars] = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [round(b.get_width()) for b in bars] == [1000, 1380, 1400]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["padding=dynamic", "padding=grouped", "padding=packed"]
    gold = [b.get_facecolor() for b in bars]
    assert gold[1] == gold[2] != gold[0]  # the tie shares rank 1: both gold
    assert "2 jobs tied" in ax.get_title()


def test_the_heatmap_stars_every_cell_of_rank_1():
    reports = _sweep()
    reports[4]["throughput"]["real_tokens_per_s"] = 1510  # bs 16 x ga 2 now ties bs 16 x ga 1 (1,500)
    reports[4]["throughput"].update(real_tokens_per_s_low=1510 * 0.95, real_tokens_per_s_high=1510 * 1.05)
    ax = plots.figures(summary.table(reports))["throughput_heatmap"].axes[0]
    starred = sorted(t.get_text() for t in ax.texts if t.get_text().endswith(" *"))
    assert starred == ["1,500 *", "1,510 *"] and "2 tied" in ax.get_title()
