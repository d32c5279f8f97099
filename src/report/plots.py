"""A sweep's plots, from its summary table (src/report/summary.py), each comparing like with like: a bar per
config with its interval, throughput against micro-batch with one line per effective batch, the step as shares
of its time, loss against samples seen; the throughput heatmap for a batch x grad_accum sweep; peak memory
against batch. Every title names the model and the card.

`figures` builds them (tests inspect the Figure objects); `plots` and `loss_curves` write the PNGs. The table
readers and axis helpers they share are plot_axes.py's."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ..measure import PHASES
from .plot_axes import (_batch_axis, _column, _figure, _guessed, _job_labels, _legend, _mark_failed, _n, _names,
                        _ok, _percent, _save, _seconds, _series, _values, _where, text_colour)
from .document import batch_as_run
from .sweep_table import stalled

KEYS = ("rank", "batch", "grad_accum", "effective_batch", "world_size", "real_tok_s")
HOST = "breakdown_s.host"  # GPU idle the data wait doesn't explain: Report.flat's name for it in the table


def plots(df: pd.DataFrame, out_dir: Path, model: str | None = None) -> list[Path]:
    """throughput_vs_batch, throughput_heatmap, memory_vs_batch and step_breakdown PNGs in out_dir."""
    return [_save(fig, Path(out_dir) / f"{name}.png") for name, fig in figures(df, model).items()]


def figures(df: pd.DataFrame, model: str | None = None) -> dict:
    """name -> Figure; a plot with nothing to show is left out. `model` defaults to the table's model column."""
    if df.empty:
        return {}
    # a column whose every value is None (no job reached it) comes as objects: numbers for arithmetic
    df = df.assign(**{c: pd.to_numeric(df[c], errors="coerce") for c in KEYS if c in df})
    where = _where(model or _names(_column(df, "model", text=True)), _names(_column(df, "device", text=True)))
    built = {"throughput_by_config": bars_figure(df, where), "throughput_vs_batch": throughput_figure(df, where),
             "throughput_heatmap": heatmap_figure(df, where), "memory_vs_batch": memory_figure(df, where),
             "step_breakdown": breakdown_figure(df, where)}
    return {name: fig for name, fig in built.items() if fig is not None}


def _rank_1(df: pd.DataFrame) -> pd.Series:
    """The rows of rank 1. A finished job can have no rank (a stalled one: src/report/sweep_table.py tiers), and
    `rank == 1` is then NA, which no `if` can read."""
    if "rank" not in df:
        return pd.Series(False, index=df.index)
    return (df["rank"] == 1).fillna(False).astype(bool)


def _grid_sweep(df: pd.DataFrame) -> bool:
    """A batch x grad_accum sweep and nothing else: each cell one config (a padding or precision sweep would put
    several configs in one cell, and a cell shows one)."""
    shape = df.dropna(subset=["batch", "grad_accum"])
    return (len(_values(shape["batch"])) > 1 and len(_values(shape["grad_accum"])) > 1
            and not shape.duplicated(["batch", "grad_accum"]).any())


def loss_curves(reports: list[dict], df: pd.DataFrame, out_dir: Path) -> Path | None:
    fig = loss_figure(reports, df)
    return _save(fig, Path(out_dir) / "loss_curves.png") if fig is not None else None


# -- the plots ----------------------------------------------------------------------------------------
def bars_figure(df: pd.DataFrame, where: str):
    """A bar per job, fastest on top, with its 95% interval; the jobs that share rank 1 (can't be told apart from
    the fastest) in gold, so a tie never looks like a winner; jobs that did not finish named at the bottom."""
    ok = df[_ok(df)].dropna(subset=["real_tok_s"]).sort_values("real_tok_s")
    guessed = _guessed(df).sort_values("predicted_tok_s")  # a planned sweep's cells that did not run: hollow
    failed = df[~_ok(df) & (df["status"] != "predicted")]
    if ok.empty and failed.empty and guessed.empty:
        return None
    rows = len(ok) + len(failed) + len(guessed)
    fig, ax = _figure(7.0, 1.2 + 0.32 * rows)
    if not guessed.empty:
        ax.barh(range(len(failed), len(failed) + len(guessed)), guessed["predicted_tok_s"], fill=False,
                edgecolor="gray", linestyle="--", label="predicted, not run")
    low, high = _column(ok, "real_tok_s_low"), _column(ok, "real_tok_s_high")
    y = ok["real_tok_s"]
    xerr = [(y - low).clip(lower=0).fillna(0), (high - y).clip(lower=0).fillna(0)]
    first, halted = _rank_1(ok), stalled(ok)  # a stalled job is unranked: grey, and named so, however long its bar
    colours = ["darkgoldenrod" if f else "lightgray" if h else "steelblue" for f, h in zip(first, halted)]
    ax.barh(range(len(failed) + len(guessed), rows), y, xerr=xerr, color=colours, capsize=3)
    labels = [f"{r['job']} ({str(r['status']).upper()})" for _, r in failed.iterrows()]
    labels += [f"{r['job']} (predicted)" for _, r in guessed.iterrows()]
    labels += [str(r["job"]) + (" (stalled: unranked)" if halted[i] else "")
               + ("" if pd.notna(low[i]) else " (no interval)") for i, r in ok.iterrows()]
    ax.set_yticks(range(rows), labels, fontsize=7)
    ax.set_xlabel("real tokens/s (95% interval)")
    tied = int(first.sum())
    ax.set_title("throughput by config: gold = rank 1" + (f", {tied} jobs tied" if tied > 1 else "")
                 + f"\n{where}", fontsize=9)
    _legend(ax)
    return fig


def throughput_figure(df: pd.DataFrame, where: str):
    """Real tokens/s against micro-batch, one line per effective batch: along a line the optimizer sees the
    same batch, so the line shows what splitting it into micro-batches costs or gains."""
    fig, ax = _figure(6.5, 4.2)
    low, high = _column(df, "real_tok_s_low", "throughput.real_tokens_per_s_low"), \
        _column(df, "real_tok_s_high", "throughput.real_tokens_per_s_high")

    def points(rows, **style):  # bars from the 95% interval; NaN (too few steps for one): no bar
        y = rows["real_tok_s"]
        yerr = [(y - low[rows.index]).clip(lower=0), (high[rows.index] - y).clip(lower=0)]
        return ax.errorbar(rows["batch"], y, yerr=yerr, capsize=3, **style)

    ok = df[_ok(df)].dropna(subset=["batch", "real_tok_s"])
    for eff, group in ok.groupby("effective_batch"):
        # several jobs of one shape (a padding or ladder sweep): the line joins the fastest at each micro-batch,
        # the others are open points named by their overrides
        line = group.sort_values("real_tok_s", ascending=False).drop_duplicates("batch").sort_values("batch")
        colour = points(line, marker="o", label=f"effective batch {_n(eff)}")[0].get_color()
        rest = group.drop(line.index)
        if not rest.empty:
            points(rest, fmt="o", mfc="none", color=colour)
            for _, r in rest.iterrows():
                ax.annotate(r["job"], (r["batch"], r["real_tok_s"]), xytext=(4, -8), textcoords="offset points",
                            fontsize=6)
    best = ok[_rank_1(ok)]
    if not best.empty:  # ties share rank 1: each is marked; an open star keeps its line's point visible
        ax.scatter(best["batch"], best["real_tok_s"], marker="*", s=380, facecolor="none", edgecolor="darkgoldenrod",
                   linewidths=1.5, zorder=4,
                   label="best (rank 1" + (f", {len(best)} tied)" if len(best) > 1 else ")"))
    guessed = _guessed(df).dropna(subset=["batch"])
    if not guessed.empty:  # hollow, at the predicted rate with its interval; never joined to a measured line
        y, low_p, high_p = (_column(guessed, f"predicted_tok_s{s}") for s in ("", "_low", "_high"))
        ax.errorbar(guessed["batch"], y, yerr=[(y - low_p).clip(lower=0), (high_p - y).clip(lower=0)], fmt="o",
                    mfc="none", color="gray", capsize=2, label="predicted, not run")
    _mark_failed(ax, df)
    if ok.empty:
        ax.text(0.5, 0.5, "no job finished", transform=ax.transAxes, ha="center", color="gray")
        ax.set_yticks([])
    ax.set_ylim(bottom=0)
    _batch_axis(ax, df["batch"])
    ax.set_ylabel("real tokens/s (95% interval)")
    ax.set_title(f"throughput by micro-batch, one line per effective batch\n{where}", fontsize=9)
    _legend(ax, outside=True)
    return fig


def heatmap_figure(df: pd.DataFrame, where: str):
    """Real tokens/s over micro-batch x grad_accum, for a sweep of those two keys alone; the cells of rank 1 (the
    fastest and every job it can't be told apart from) starred: colour alone would crown one of a tie."""
    sizes, accums = _values(df["batch"]), _values(df["grad_accum"])
    if not sizes or not accums or not _grid_sweep(df):
        return None
    fig, ax = _figure(2.2 + 1.1 * len(sizes), 1.4 + 0.8 * len(accums))
    grid = (df[_ok(df)].groupby(["grad_accum", "batch"])["real_tok_s"].max().unstack()
            .reindex(index=accums, columns=sizes).to_numpy(dtype=float))
    first = {(r["grad_accum"], r["batch"]) for _, r in df[_ok(df) & _rank_1(df)].iterrows()}
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    finite = np.isfinite(grid)
    if finite.any():
        image.set_clim(np.nanmin(grid), np.nanmax(grid))
        fig.colorbar(image, ax=ax, label="real tokens/s")
    for i, ga in enumerate(accums):
        for j, bs in enumerate(sizes):
            if finite[i, j]:
                ax.text(j, i, f"{grid[i, j]:,.0f}" + (" *" if (ga, bs) in first else ""), ha="center", va="center",
                        fontsize=8, color=text_colour(image.cmap(image.norm(grid[i, j]))))
            else:  # no finished job here: its status on the blank (white) cell
                cell = df[(df["batch"] == bs) & (df["grad_accum"] == ga)]
                ax.text(j, i, cell["status"].iloc[0].upper() if not cell.empty else "", ha="center", va="center",
                        fontsize=8, color="darkred")
    ax.set_xticks(range(len(sizes)), [_n(s) for s in sizes])
    ax.set_yticks(range(len(accums)), [_n(a) for a in accums])
    ax.set_xlabel("micro-batch size")
    ax.set_ylabel("grad_accum")
    ax.set_title("real tokens/s (* rank 1" + (f": {len(first)} tied)" if len(first) > 1 else ")") + f"\n{where}",
                 fontsize=9)
    return fig


def memory_figure(df: pd.DataFrame, where: str):
    """Peak memory against micro-batch, one line per series (the jobs that differ only in micro-batch: two models
    or row lengths are never joined), the card's capacity and the memory model's prediction beside what was
    allocated, for jobs that ran out of memory too; a CPU sweep shows the process's peak RSS."""
    col = "peak_reserved_gb" if _column(df, "peak_reserved_gb").notna().any() else "peak_rss_gb"
    mem, saturated = _column(df, col), _column(df, "saturated", text=True)
    measured, predicted = _column(df, "peak_alloc_gb"), _column(df, "predicted_alloc_gb")
    # a planned sweep's cells that did not run: the planner's prediction, hollow (sweep.question=largest's answer)
    not_run = df["status"].isin(("predicted", "predicted_oom")) & _column(df, "predicted_memory_gb").notna()
    predicted = predicted.where(~not_run, _column(df, "predicted_memory_gb"))
    fig, ax = _figure(8.5, 4.2)
    shown = df[(mem.notna() | predicted.notna()) & df["batch"].notna()]
    for i, (name, sub) in enumerate(_series(shown)):
        sub, colour = sub.sort_values("batch"), f"C{i % 10}"
        held = sub[mem[sub.index].notna()]
        label = textwrap.fill(f"{col.split('_')[1]}, {name}", 44)  # a model's overrides can run long
        ax.plot(held["batch"], mem[held.index], marker="o", color=colour, label=label)
        sat = held[saturated[held.index] == True]  # noqa: E712 (None: unknown)
        ax.scatter(sat["batch"], mem[sat.index], marker="x", s=90, color="red", zorder=3)
        ran = sub[measured[sub.index].notna()]
        ax.plot(ran["batch"], measured[ran.index], marker=".", color=colour, linewidth=0.8)
        guessed = sub[predicted[sub.index].notna()]
        ax.plot(guessed["batch"], predicted[guessed.index], linestyle=":", marker="+", color=colour)
        hollow = sub[not_run[sub.index]]
        ax.scatter(hollow["batch"], predicted[hollow.index], marker="o", s=40, facecolors="none", edgecolors=colour,
                   zorder=3)
    if measured.notna().any():  # style keys: the series' colours say which jobs, these say which number
        ax.plot([], [], marker=".", color="black", linewidth=0.8, label="allocated, measured")
    if predicted.notna().any():
        ax.plot([], [], linestyle=":", marker="+", color="black", label="allocated, predicted before step 1")
    if not_run.any():
        ax.scatter([], [], marker="o", s=40, facecolors="none", edgecolors="black", label="predicted, not run")
    capacity = _column(df, "capacity_gb").dropna()
    if not capacity.empty:
        ax.axhline(capacity.iloc[0], color="gray", linestyle="--", label=f"capacity {capacity.iloc[0]:.0f} GB")
        oom = df[(df["status"] == "oom") & df["batch"].notna()]
        ax.scatter(oom["batch"], [capacity.iloc[0]] * len(oom), marker="v", s=90, color="black", zorder=3)
    _batch_axis(ax, df["batch"])
    ax.set_ylabel("peak memory (GB)")
    ax.set_title(f"peak memory (x: saturated, v: out of memory)\n{where}", fontsize=9)
    _legend(ax, outside=True)
    return fig


def step_shares(df: pd.DataFrame) -> pd.DataFrame:
    """The finished jobs' step phases as shares of the step (each row sums to 1) and the host-idle share,
    sorted by micro-batch then grad_accum; jobs with no breakdown are left out."""
    ok = df[_ok(df)]
    ok = ok.sort_values(["batch", "grad_accum"], kind="stable")
    phases = pd.DataFrame({p: _column(ok, f"{p}_s") for p in PHASES}).fillna(0.0)
    total = phases.sum(axis=1)
    # the phases tile the device's timeline, so their sum is the step: shares of it add up to 100%
    shares = phases.div(total, axis=0)
    shares["host"] = _column(ok, HOST) / total
    return shares[total > 0]


def breakdown_figure(df: pd.DataFrame, where: str):
    shares = step_shares(df)
    if shares.empty:
        return None
    rows = df.loc[shares.index]
    x = np.arange(len(shares))
    fig, ax = _figure(max(6, 0.7 * len(shares) + 2), 4.2)
    bottom = np.zeros(len(shares))
    for phase in PHASES:
        ax.bar(x, shares[phase], bottom=bottom, label=phase)
        bottom += shares[phase].to_numpy()
    host = shares["host"]
    if host.notna().any():
        # host idle is GPU time inside the phases above data (the device waited on launches), not a phase of its
        # own: hatched over the stack, from the top of the data share
        ax.bar(x, host.fillna(0.0), bottom=shares["data"], fill=False, hatch="//", edgecolor="black", linewidth=0,
               label="GPU idle, waiting for the host")
    for i, step in enumerate(_column(rows, "step_s")):
        if pd.notna(step):
            ax.text(i, 1.01, _seconds(step), ha="center", va="bottom", fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.yaxis.set_major_formatter(_percent())
    ax.set_xticks(x, _job_labels(rows), rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("by micro-batch, then grad_accum; mean step time above each bar")
    ax.set_ylabel("share of the optimizer step")
    ax.set_title(f"where the step goes (device timeline)\n{where}", fontsize=9)
    _legend(ax, outside=True)
    return fig


def loss_figure(reports: list[dict], df: pd.DataFrame):
    """Training loss against samples seen (step x effective batch), so jobs of different batch sizes line up
    where they have seen the same data; a padding-free sweep whose batch is a token budget uses tokens seen."""
    runs = [r for r in reports if (r.get("loss") or {}).get("curve")]
    if not runs:
        return None
    labels = dict(zip(df["dir"], df["job"])) if {"dir", "job"} <= set(df) else {}
    budgets = {bool(_batch(r).get("tokens")) for r in runs}
    # tokens and samples don't share an axis: a sweep mixing both is drawn against the optimizer step
    seen = "step" if len(budgets) > 1 else ("tokens" if budgets == {True} else "samples")
    fig, ax = _figure(6.5, 4)
    for r in runs:
        steps, losses = np.array(r["loss"]["curve"], dtype=float).T
        ax.plot(steps * _per_step(r, seen), losses, marker=".", label=labels.get(r["job"], r["job"]))
    expected = runs[0]["loss"].get("expected_initial")
    if expected:
        ax.axhline(expected, color="gray", linestyle="--", label=f"uniform guess {expected:.2f}")
    ax.set_yscale("log")
    ax.set_xlabel({"step": "optimizer step", "samples": "samples seen (step x effective batch)",
                   "tokens": "tokens seen (padding-free: batch.tokens per micro-batch)"}[seen])
    ax.set_ylabel("training loss")
    models = _names(pd.Series([((r.get("config") or {}).get("model") or {}).get("name") for r in reports]))
    devices = _names(pd.Series([(r.get("env") or {}).get("device_name") for r in reports]))
    ax.set_title(f"loss curves\n{_where(models, devices)}", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def _per_step(report: dict, seen: str) -> float:
    """Samples or tokens one optimizer step takes in (every rank's micro-batches), or 1 to count steps."""
    if seen == "step":
        return 1
    b, world = _batch(report), (report.get("resolved") or {}).get("world_size") or 1
    return (b["tokens"] if seen == "tokens" else b["size"]) * b["grad_accum"] * world


def _batch(report: dict) -> dict:
    """The batch as the job trained it: batch.tokens=auto is the budget its probe chose (none on a CPU: rows)."""
    return batch_as_run(report["config"], report.get("resolved") or {})
