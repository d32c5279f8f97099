"""A sweep's answer: the jobs' reports ranked by real tokens/s (summary.csv, summary.md), a recommendation,
and the plots (src/plots.py).

Runs at the end of every sweep (a Hydra callback) and on demand: `python -m src.report SWEEP_DIR`.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
from hydra.experimental.callback import Callback

from src.plots import loss_curves, plots
from src.report import PHASES, Report

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


def write(sweep_dir: Path, cfg=None) -> str:
    """summary.csv, summary.md and plots in the sweep directory (and a W&B summary run when the sweep's
    config logs to W&B); returns the markdown."""
    sweep_dir = Path(sweep_dir)
    reports = load_reports(sweep_dir)
    df = table(reports)
    if df.empty:
        return f"no job reports under {sweep_dir}"
    lines = recommend(df)
    df.to_csv(sweep_dir / "summary.csv", index=False)
    md = _markdown(df, lines, sweep_dir)
    (sweep_dir / "summary.md").write_text(md)
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
