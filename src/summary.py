"""A sweep's answer: the jobs' reports ranked by real tokens/s (summary.csv, summary.md), a recommendation,
and plots (throughput heatmap over batch x grad_accum, peak memory vs batch, step-time breakdown per job).

Runs at the end of every sweep (a Hydra callback) and on demand: `python -m src.report SWEEP_DIR`.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
from hydra.experimental.callback import Callback

from src.report import PHASES, Report
from src.report_files import atomic_write  # a reader sees the old file or the new one, never a part

log = logging.getLogger(__name__)


def load_reports(sweep_dir: Path) -> list[dict]:
    reports = []
    for path in sorted(Path(sweep_dir).glob("*/report.json")):
        report = json.loads(path.read_text())
        report["job"] = path.parent.name
        reports.append(report)
    return reports


def _overrides(report: dict) -> dict:
    return dict(o.replace("'", "").partition("=")[::2] for o in report.get("overrides") or [])


def _varying(reports: list[dict]) -> list[str]:
    """The override keys whose values differ between jobs: what the sweep compares."""
    given = [_overrides(r) for r in reports]
    keys = dict.fromkeys(k for g in given for k in g)
    return [k for k in keys if len({g.get(k) for g in given}) > 1]


# summary column -> the report field it shows (report.Report.flat's names); every other measured number
# follows under its own `section.field` name, so a new report field reaches summary.csv by itself
COLUMNS = {"real_tok_s": "throughput.real_tokens_per_s", "samples_s": "throughput.samples_per_s",
           "pad_fraction": "throughput.pad_fraction", "step_s": "step_time_s.mean", "step_p90_s": "step_time_s.p90",
           "steps_timed": "step_time_s.n", "mfu": "flops.mfu",
           "peak_alloc_gb": "memory_gb.peak_allocated", "peak_reserved_gb": "memory_gb.peak_reserved",
           "capacity_gb": "memory_gb.capacity", "peak_rss_gb": "memory_gb.peak_rss_gb",
           "alloc_retries": "memory_gb.alloc_retries_in_window", **{f"{p}_s": f"breakdown_s.{p}" for p in PHASES}}


def table(reports: list[dict]) -> pd.DataFrame:
    """One row per job (report.json's contents plus its "job" directory), ranked: finished jobs by real
    tokens/s, then failed ones."""
    rows = []
    keys = _varying(reports)
    for d in reports:
        r = Report.from_dict(d)
        given = _overrides(d)
        label = ", ".join(f"{k}={given[k]}" for k in keys if k in given) or d["job"]
        size, accum = r.config.get("batch", {}).get("size"), r.config.get("batch", {}).get("grad_accum")
        world = (r.get("resolved") or {}).get("world_size") or 1  # a multi-process job's ranks each take a micro-batch
        flat = r.flat()
        verdict, timing = r.get("verdict"), r.get("timing_s") or {}
        row = {"job": label, "dir": d["job"], "status": r.status, "batch": size, "grad_accum": accum,
               "effective_batch": size * accum * world if size and accum else None, "world_size": world,
               **{col: flat.get(path) for col, path in COLUMNS.items()},
               "gpu_busy": r.get("gpu_busy_fraction"),
               "predicted_alloc_gb": (r.get("memory_predicted_gb") or {}).get("peak_allocated"),  # before step 1
               "saturated": verdict.saturated if verdict else None, "bottleneck": verdict.bottleneck if verdict else None,
               "build_s": timing.get("build"), "train_s": timing.get("train"),
               "device": (r.get("env") or {}).get("device_name"), "error": (r.error or "")[:200]}
        shown = set(COLUMNS.values())
        row.update({path: value for path, value in flat.items() if path not in shown})
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_ok"] = df["status"] == "ok"
    df = df.sort_values(["_ok", "real_tok_s"], ascending=[False, False], na_position="last").drop(columns="_ok")
    df.insert(0, "rank", range(1, len(df) + 1))
    return df.reset_index(drop=True)


def _label(row) -> str:
    return f"bs {row['batch']} x ga {row['grad_accum']}"


def recommend(df: pd.DataFrame) -> list[str]:
    ok = df[df["status"] == "ok"].dropna(subset=["real_tok_s"])
    if ok.empty:
        return ["no job finished: nothing to recommend"]
    lines = []
    fit = ok[ok["saturated"] != True]  # noqa: E712 (None: unknown, e.g. on the CPU)
    best = (fit if not fit.empty else ok).iloc[0]
    lines.append(f"fastest {'non-saturated ' if not fit.empty else ''}config: {best['job']} "
                 f"({_label(best)}), {best['real_tok_s']:,.0f} real tokens/s")
    if fit.empty:
        lines.append("every finished job saturated memory: try a smaller micro-batch or gradient checkpointing")
    elif ok.iloc[0]["job"] != best["job"]:
        top = ok.iloc[0]
        lines.append(f"{top['job']} ran {top['real_tok_s'] / best['real_tok_s']:.2f}x faster but saturated memory "
                     "(allocator retries or >92% reserved): one longer batch away from OOM")
    for eff, group in ok.groupby("effective_batch"):
        if len(group) < 2:
            continue
        first, others = group.iloc[0], group.iloc[1:]
        # jobs of one batch shape that differ elsewhere (padding, a ladder rung) are named by their overrides
        name = _label if not group.duplicated(["batch", "grad_accum"]).any() else (lambda r: r["job"])
        beats = ", ".join(f"{name(o)} by {first['real_tok_s'] / o['real_tok_s']:.2f}x" for _, o in others.iterrows())
        lines.append(f"for effective batch {eff}: {name(first)} beats {beats}")
    failed = df[df["status"] != "ok"]
    if not failed.empty:
        lines.append("did not finish: " + ", ".join(f"{r['job']} ({r['status']})" for _, r in failed.iterrows()))
    return lines


def _markdown(df: pd.DataFrame, lines: list[str], sweep_dir: Path) -> str:
    cols = ["rank", "job", "status", "batch", "grad_accum", "effective_batch", "real_tok_s", "samples_s",
            "step_s", "mfu", "peak_alloc_gb", "peak_reserved_gb", "saturated", "bottleneck"]
    fmt = {"real_tok_s": "{:,.0f}", "samples_s": "{:,.1f}", "step_s": "{:.4f}", "mfu": "{:.1%}",
           "peak_alloc_gb": "{:.1f}", "peak_reserved_gb": "{:.1f}"}
    shown = df[[c for c in cols if c in df]].copy()
    for col, f in fmt.items():
        if col in shown:
            shown[col] = shown[col].map(lambda x, f=f: "-" if pd.isna(x) else f.format(x))
    header = "| " + " | ".join(shown.columns) + " |\n|" + "---|" * len(shown.columns) + "\n"
    body = "".join("| " + " | ".join("-" if v is None or pd.isna(v) else str(v) for v in row) + " |\n"
                   for row in shown.itertuples(index=False))
    device = df["device"].dropna().iloc[0] if df["device"].notna().any() else "unknown device"
    return (f"# Sweep summary\n\n`{sweep_dir}`, {len(df)} jobs on {device}\n\n"
            + "".join(f"- {line}\n" for line in lines) + "\n" + header + body)


def plots(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    if df.empty:
        return paths
    sizes = sorted(df["batch"].dropna().unique())
    accums = sorted(df["grad_accum"].dropna().unique())
    # 1. throughput heatmap: batch x grad_accum (the best job per cell when other keys vary too)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(sizes), 1.2 + 0.8 * len(accums)))
    grid = df.groupby(["grad_accum", "batch"])["real_tok_s"].max().unstack().reindex(index=accums, columns=sizes)
    image = ax.imshow(grid.values.astype(float), cmap="viridis", aspect="auto")
    for i, ga in enumerate(accums):
        for j, bs in enumerate(sizes):
            cell = df[(df["batch"] == bs) & (df["grad_accum"] == ga)]
            value = grid.values[i, j]
            text = f"{value:,.0f}" if pd.notna(value) else (cell["status"].iloc[0].upper() if not cell.empty else "")
            ax.text(j, i, text, ha="center", va="center", color="white" if pd.notna(value) else "red", fontsize=8)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_yticks(range(len(accums)), [str(a) for a in accums])
    ax.set_xlabel("micro-batch size")
    ax.set_ylabel("grad_accum")
    ax.set_title("real tokens/s")
    fig.colorbar(image, ax=ax)
    paths.append(_save(fig, out_dir / "throughput_heatmap.png"))
    # 2. peak memory vs batch, the card's capacity, saturated and failed points marked
    mem_col = "peak_reserved_gb" if df["peak_reserved_gb"].notna().any() else "peak_rss_gb"
    fig, ax = plt.subplots(figsize=(6, 4))
    for ga in accums:
        sub = df[(df["grad_accum"] == ga) & df[mem_col].notna()].sort_values("batch")
        ax.plot(sub["batch"], sub[mem_col], marker="o", label=f"{mem_col.split('_')[1]}, grad_accum {ga}")
        sat = sub[sub["saturated"] == True]  # noqa: E712
        ax.scatter(sat["batch"], sat[mem_col], marker="x", s=90, color="red", zorder=3)
    predicted = df.dropna(subset=["predicted_alloc_gb", "peak_alloc_gb"]).sort_values("batch")
    if not predicted.empty:  # the memory model's prediction (allocated, before step 1) against what was allocated
        ax.plot(predicted["batch"], predicted["peak_alloc_gb"], marker=".", color="black", linewidth=0.8,
                label="allocated, measured")
        ax.plot(predicted["batch"], predicted["predicted_alloc_gb"], linestyle=":", marker="+", color="gray",
                label="allocated, predicted")
    capacity = df["capacity_gb"].dropna()
    if not capacity.empty:
        ax.axhline(capacity.iloc[0], color="gray", linestyle="--", label=f"capacity {capacity.iloc[0]:.0f} GB")
        for _, row in df[df["status"] == "oom"].iterrows():
            ax.scatter([row["batch"]], [capacity.iloc[0]], marker="v", s=90, color="black", zorder=3)
    if len(sizes) > 1:  # matplotlib can't log-scale a single point
        ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("micro-batch size")
    ax.set_ylabel("peak memory (GB)")
    ax.set_title("peak memory (x: saturated, v: out of memory)")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out_dir / "memory_vs_batch.png"))
    # 3. where each job's step time goes
    ok = df[df["status"] == "ok"].dropna(subset=["step_s"])
    if not ok.empty:
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(ok)), 4))
        bottom = pd.Series(0.0, index=ok.index)
        for phase in PHASES:
            values = ok[f"{phase}_s"].fillna(0.0)
            ax.bar(range(len(ok)), values, bottom=bottom, label=phase)
            bottom += values
        ax.set_xticks(range(len(ok)), [_label(r) for _, r in ok.iterrows()], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("seconds per optimizer step")
        ax.set_title("step time breakdown (device timeline)")
        ax.legend(fontsize=8)
        paths.append(_save(fig, out_dir / "step_breakdown.png"))
    return paths


def loss_curves(reports: list[dict], df: pd.DataFrame, out_dir: Path) -> Path | None:
    """Training loss against step, one line per job, with the uniform-guess loss the runs should start at."""
    import matplotlib.pyplot as plt

    curves = [(label, r["loss"]["curve"], r["loss"].get("expected_initial"))
              for label, r in zip(df.set_index("dir").loc[[r["job"] for r in reports], "job"], reports)
              if (r.get("loss") or {}).get("curve")]
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, curve, _ in curves:
        steps, losses = zip(*curve)
        ax.plot(steps, losses, marker=".", label=label)
    expected = curves[0][2]
    if expected:
        ax.axhline(expected, color="gray", linestyle="--", label=f"uniform guess {expected:.2f}")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss")
    ax.set_title("loss curves")
    ax.legend(fontsize=7)
    return _save(fig, out_dir / "loss_curves.png")


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def write(sweep_dir: Path, cfg=None) -> str:
    """summary.csv, summary.md and plots in the sweep directory (and a W&B summary run when the sweep's
    config logs to W&B); returns the markdown."""
    sweep_dir = Path(sweep_dir)
    reports = load_reports(sweep_dir)
    df = table(reports)
    if df.empty:
        return f"no job reports under {sweep_dir}"
    lines = recommend(df)
    atomic_write(sweep_dir / "summary.csv", df.to_csv(index=False))
    md = _markdown(df, lines, sweep_dir)
    atomic_write(sweep_dir / "summary.md", md)
    images = plots(df, sweep_dir) + [p for p in [loss_curves(reports, df, sweep_dir)] if p]
    if cfg is not None and cfg.logger.name == "wandb":
        from src.loggers import log_sweep

        log_sweep(cfg, sweep_dir, df, lines, images)
    return md


class SweepSummary(Callback):
    """Hydra callback: the summary once every job of a sweep has run."""

    def on_multirun_end(self, config, **kwargs) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            print("\n" + write(sweep_dir, config))
        except Exception:  # a summary bug must not hide the jobs' own reports, which are on disk
            log.exception("sweep summary failed; rerun it with: python -m src.report %s", sweep_dir)
