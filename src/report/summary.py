"""A sweep's answer: the jobs' reports ranked by real tokens/s (summary.csv, summary.md; the table is
sweep_table.py's), a recommendation, and the plots (src/report/plots.py).

Runs at the end of every sweep (a Hydra callback) and on demand: `python -m src.report SWEEP_DIR`.
A planned sweep (sweep.plan=predict) also has cells that were only predicted (prediction.json, no report.json):
rows of their own status, shown beside the measured ones and never ranked or compared with them. Past 350
lines for one concern: the table and the answer read from it.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pandas as pd
from hydra.experimental.callback import Callback

from ..base import stats
from ..base.files import atomic_write  # a reader sees the old file or the new one, never a part
from . import caveats
from .plots import loss_curves, plots
# the table is sweep_table's; its readers stay reachable here, where the summary's callers have always found them
from .sweep_table import PREDICTED, SMALLER, comparison, interval, load_reports, stalled, table

log = logging.getLogger(__name__)


def _label(row) -> str:
    if pd.notna(row.get("batch_tokens")):  # its `batch` (rows per micro-batch) doesn't apply to a packed run
        return f"{int(row['batch_tokens']):,}-token packs x ga {row['grad_accum']}"
    return f"bs {row['batch']} x ga {row['grad_accum']}"


def _span(row) -> str | None:
    """'25,647-26,096', the row's 95% interval of real tokens/s, or None."""
    return f"{row['real_tok_s_low']:,.0f}-{row['real_tok_s_high']:,.0f}" if interval(row) else None


def _rate(row) -> str:
    """'25,869 (25,647-26,096)' real tokens/s, or '... (no interval)'."""
    return f"{row['real_tok_s']:,.0f} ({_span(row) or 'no interval'})"


def recommend(df: pd.DataFrame, baseline: str | None = None) -> list[str]:
    """The answer in a few lines; every comparison carries its interval or says tie. With a `baseline` (one
    override naming the sweep's reference job, e.g. debug=none) each job is also stated against that job."""
    ok = df[(df["status"] == "ok") & ~stalled(df)].dropna(subset=["real_tok_s"])  # a stalled job: flagged below
    if ok.empty:
        failed = df[~df["status"].isin(PREDICTED)]["status"].value_counts()
        return ["no job finished: nothing to recommend" + (f" ({', '.join(f'{n} {s}' for s, n in failed.items())}; "
                                                           "each job's reason below)" if len(failed) else "")]
    lines = []
    fit = ok[ok["saturated"] != True]  # noqa: E712 (None: unknown, e.g. on the CPU)
    pool = fit if not fit.empty else ok
    best = pool.iloc[0]
    level = [r for _, r in pool.iloc[1:].iterrows() if comparison(best, r).tie]
    if len(pool) > 1 and len(level) == len(pool) - 1:  # no answer yet: say so first, and what would give one
        lines.append(f"cannot tell these {len(pool)} jobs apart yet: {_what_would_decide(df)}")
        lines.append(f"measured fastest, within noise of the rest: {best['job']} ({_label(best)}), {_rate(best)} "
                     "real tokens/s")
    else:
        lines.append(f"fastest {'non-saturated ' if not fit.empty else ''}config: {best['job']} "
                     f"({_label(best)}), {_rate(best)} real tokens/s")
    tied = [r for r in level if interval(best) and interval(r)]
    untold = [r for r in level if not (interval(best) and interval(r))]
    if tied:
        lines.append(f"tied with it (within noise or under the {stats.MIN_EFFECT:.0%} runs drift apart): "
                     + ", ".join(f"{r['job']} ({_rate(r)})" for r in tied))
    if untold:
        lines.append("not told apart from it (no interval: too few timed steps): "
                     + ", ".join(f"{r['job']} ({_rate(r)})" for r in untold))
    if fit.empty:
        lines.append("every finished job saturated memory: try a smaller micro-batch or gradient checkpointing")
    elif ok.iloc[0]["job"] != best["job"]:
        top = ok.iloc[0]
        lines.append(f"{top['job']}: {comparison(top, best).text('it', 'the fastest fitting one')}, but saturated "
                     "memory (allocator retries or >92% reserved): one longer batch away from OOM")
    for eff, group in ok.groupby("effective_batch"):
        if len(group) < 2:
            continue
        first = group.iloc[0]
        # jobs that differ elsewhere (padding, a ladder rung, the model) are named by their overrides
        name = _label if not group.duplicated(["batch", "grad_accum"]).any() and _one_family(group) else (lambda r: r["job"])
        versus = "; ".join(comparison(first, o).text(name(first), name(o)) for _, o in group.iloc[1:].iterrows())
        lines.append(f"for effective batch {eff:g}: {versus}")  # 8, not 8.0 (a token budget's NaN floats the column)
    if baseline:
        lines.append(_against(ok, baseline))
    flagged = df[(df["status"] == "ok") & (df["flags"].fillna("") != "")] if "flags" in df else df.iloc[:0]
    for _, r in flagged.iterrows():
        lines.append(f"flagged {r['job']}: {r['flags']}")
    failed = df[(df["status"] != "ok") & ~df["status"].isin(PREDICTED)]
    if not failed.empty:
        lines.append("did not finish: " + ", ".join(f"{r['job']} ({r['status']})" for _, r in failed.iterrows()))
    return lines


def _one_family(group: pd.DataFrame) -> bool:
    """Whether the jobs' names differ only in their batch settings (a job is named by its overrides)."""
    rest = {", ".join(p for p in str(job).split(", ") if not p.startswith("batch")) for job in group["job"]}
    return len(rest) <= 1


def _what_would_decide(df: pd.DataFrame) -> str:
    """The commands that would separate jobs the sweep can't tell apart, from why it can't."""
    flags = " ".join(df["flags"].fillna("")) if "flags" in df else ""
    ways = []
    no_interval = "real_tok_s_low" not in df or df[df["status"] == "ok"]["real_tok_s_low"].isna().any()
    if no_interval or "wide interval" in flags:
        ways.append("more timed steps (a larger trainer.max_steps, or measure.stop_when_stable=true to run each job "
                    "until its mean is known)")
    ways.append("sweep.repeats=3 (each job in 3 processes: the spread between runs, which one run can't show)")
    if "busy host" in flags or "other processes on the GPU" in flags:
        ways.append("a quieter machine (something else was using the CPUs or the GPU)")
    return "; or ".join(ways)


JOBS_FILE = "jobs.json"  # every job directory a sweep meant to run, written by its launcher before the first starts


def warnings(sweep_dir: Path, reports: list[dict]) -> list[str]:
    """What the table can't show: jobs of this sweep without a report (another process held their directory,
    or they are still running or were killed; a planned cell that was to run, too), jobs that never started
    (the launcher's jobs.json names them), and jobs that read different data (a file changed between them)."""
    lines = []
    if Path(sweep_dir).is_dir():
        reported = {r["job"] for r in reports}
        silent = sorted(d.name for d in Path(sweep_dir).iterdir() if d.is_dir() and d.name not in reported
                        and ((d / ".hydra").is_dir() or (d / "prediction.json").is_file()))
        if silent:
            lines.append(f"{len(silent)} job(s) have no report, so are not ranked: {', '.join(silent)} (another process "
                         "held the directory, or the job is still running or was killed; rerun the sweep to finish them)")
        try:
            meant = json.loads((Path(sweep_dir) / JOBS_FILE).read_text()).get("jobs") or []
        except (OSError, ValueError, AttributeError):  # none (an older sweep, a JSONL of reports) or unreadable
            meant = []
        never = [name for name in dict.fromkeys(meant) if not (Path(sweep_dir) / name).is_dir()]
        if never:
            lines.append(f"{len(never)} job(s) never started, so are not ranked: {', '.join(never)} (the sweep stopped "
                         "before them; rerun the sweep to run them)")
    data = {}
    for r in reports:
        if r.get("status") == "ok" and r.get("data_fingerprint"):
            data.setdefault(r["data_fingerprint"], []).append(r["job"])
    if len(data) > 1:
        lines.append("not comparable: the jobs read different data (the files changed between them): "
                     + "; ".join(f"{', '.join(jobs)}" for jobs in data.values()))
    return lines


def _against(ok: pd.DataFrame, baseline: str) -> str:
    """'against debug=none: ...', every other finished job compared with the one the baseline override names."""
    wanted = {part.strip() for part in baseline.split(",")}
    base = [r for _, r in ok.iterrows() if wanted <= {part.strip() for part in str(r["job"]).split(",")}]
    if not base:
        return f"against {baseline}: no finished job has that override"
    if len(base) > 1:
        return (f"against {baseline}: it names {len(base)} jobs ({'; '.join(str(r['job']) for r in base)}): give one, "
                f"with every override that tells it apart, e.g. baseline='{base[0]['job']}'")
    others = [r for _, r in ok.iterrows() if r["job"] != base[0]["job"]]
    return f"against {baseline}: " + "; ".join(comparison(r, base[0]).text(r["job"], baseline) for r in others)


def planned(df: pd.DataFrame) -> str | None:
    """'planned: N of M cells ran; K predicted out of memory; J predicted slower (not run)', for a planned sweep."""
    if "decision" not in df:
        return None
    oom, not_run = (int((df["status"] == s).sum()) for s in ("predicted_oom", "predicted"))
    # sweep.question=largest times no speed: its cells below the largest fit were not run for being smaller
    smaller = int(((df["status"] == "predicted") & df["decision"].fillna("").str.startswith(SMALLER)).sum())
    line = (f"planned: {len(df) - oom - not_run} of {len(df)} cells ran; {oom} predicted out of memory; "
            f"{not_run - smaller} predicted slower (not run)"
            + (f"; {smaller} smaller than the largest predicted to fit (not run)" if smaller else ""))
    largest = df[df["largest_fit"].fillna(False).astype(bool)] if "largest_fit" in df else df.iloc[:0]
    # one per family: where there are several, each is named by its job (the settings that set it apart)
    fits = [f"{row['job'] + ': ' if len(largest) > 1 else ''}{_label(row)} ({'ran ok' if row['status'] == 'ok' else row['status']}, "
            f"predicted {row['predicted_memory_gb']:.1f} GB)" for _, row in largest.iterrows()]
    return line + (f"; the largest micro-batch predicted to fit: {', '.join(fits)}" if fits else "")


def _predicted(row) -> str:
    """'8,100 (7,900-8,300)' predicted real tokens/s, or why there is no prediction."""
    if pd.isna(row["predicted_tok_s"]):
        return row["predicted_why_not"] if isinstance(row.get("predicted_why_not"), str) else "-"
    span = "" if pd.isna(row["predicted_tok_s_low"]) else \
        f" ({row['predicted_tok_s_low']:,.0f}-{row['predicted_tok_s_high']:,.0f})"
    return f"{row['predicted_tok_s']:,.0f}{span}"


def _markdown(df: pd.DataFrame, lines: list[str], sweep_dir: Path) -> str:
    cols = ["rank", "job", "status", "batch", "batch_tokens", "grad_accum", "effective_batch", "real_tok_s", "real_tok_s_95",
            "predicted_tok_s_95", "prediction_error", "samples_s", "step_s", "mfu", "peak_alloc_gb", "peak_reserved_gb",
            "saturated", "bottleneck", "flags", "not_measured", "decision"]
    fmt = {"effective_batch": "{:g}", "real_tok_s": "{:,.0f}", "samples_s": "{:,.1f}", "step_s": "{:.4f}", "mfu": "{:.1%}",
           "peak_alloc_gb": "{:.1f}", "peak_reserved_gb": "{:.1f}", "prediction_error": "{:+.0%}"}
    df = df.assign(real_tok_s_95=[_span(r) or "-" for _, r in df.iterrows()])
    if "predicted_tok_s" in df:  # a planned sweep: what was predicted, and which cells only were
        df = df.assign(predicted_tok_s_95=[_predicted(r) for _, r in df.iterrows()],
                       status=df["status"].replace({"predicted": "predicted only", "predicted_oom": "predicted OOM"}))
    if "flags" in df:
        df["flags"] = df["flags"].fillna("").replace("", "-")
    optional = ("batch_tokens", "not_measured")  # shown where some job has one
    shown = df[[c for c in cols if c in df and (c not in optional or df[c].replace("", None).notna().any())]].copy()
    for col, f in fmt.items():
        if col in shown:
            shown[col] = shown[col].map(lambda x, f=f: "-" if pd.isna(x) else f.format(x))
    header = "| " + " | ".join(shown.columns) + " |\n|" + "---|" * len(shown.columns) + "\n"
    body = "".join("| " + " | ".join("-" if v is None or pd.isna(v) else str(v) for v in row) + " |\n"
                   for row in shown.itertuples(index=False))
    device = df["device"].dropna().iloc[0] if df["device"].notna().any() else "unknown device"
    legend = ("Real tokens/s with its 95% interval (batch means of the timed steps; with `sweep.repeats`, the "
              f"spread of the repeats). Jobs that can't be told apart (intervals overlapping, or under the "
              f"{stats.MIN_EFFECT:.0%} runs drift apart) share a rank; flags say why a figure may not settle a close "
              "call.\n\n")
    lead = ""
    if lines and lines[0].startswith(caveats.CANNOT_RANK):  # above everything it puts in doubt: read first
        lead, lines = f"**{lines[0]}**\n\n", lines[1:]
    return (f"# Sweep summary\n\n{lead}`{sweep_dir}`, {len(df)} jobs on {device}\n\n"
            + "".join(f"- {line}\n" for line in lines) + "\n" + legend + header + body)


def write(sweep_dir: Path, cfg=None, baseline: str | None = None) -> str:
    """summary.csv, summary.md and plots in the sweep directory, or beside a JSONL file of its reports (and
    a W&B summary run when the sweep's config logs to W&B); returns the markdown. The baseline job is the
    jobs' `baseline` key unless given."""
    reports = load_reports(sweep_dir)
    sweep_dir = Path(sweep_dir).parent if Path(sweep_dir).is_file() else Path(sweep_dir)
    df = table(reports)
    if df.empty:
        return f"no job reports under {sweep_dir}"
    given = [d["config"]["baseline"] for d in reports if (d.get("config") or {}).get("baseline")]
    baseline = baseline or (given[0] if given else None)
    # first whether the ranking can be trusted at all, then what the table can't show, the plan, the answer
    lines = ([x for x in [caveats.trust(df)] if x] + warnings(sweep_dir, reports)
             + [x for x in [caveats.plan_line(sweep_dir), planned(df)] if x] + recommend(df, baseline)
             + caveats.failures(df))
    atomic_write(sweep_dir / "summary.csv", df.to_csv(index=False))
    from .scaling import write as scaling  # a sweep over GPU counts: speed-up and per-GPU efficiency vs 1 GPU

    scale_md, scale_images = scaling(sweep_dir, df, reports)
    md = _markdown(df, lines, sweep_dir) + (f"\n{scale_md}" if scale_md else "")
    atomic_write(sweep_dir / "summary.md", md)
    runs = table(reports, combine=False) if (df["repeat"] != "0").any() else df  # every run's own curve
    images = plots(df, sweep_dir) + [p for p in [loss_curves(reports, runs, sweep_dir)] if p] + scale_images
    if cfg is not None and cfg.logger.name == "wandb":
        from .loggers import log_sweep

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
        reports = [r for r in load_reports(sweep_dir) if r.get("status") not in PREDICTED] if sweep_dir.is_dir() else []
        if not any(r.get("status") == "ok" for r in reports):
            print(f"no job of {sweep_dir} finished: the sweep exits 1 (summary.md says why each one did not)",
                  file=sys.stderr, flush=True)
            raise NothingFinished(1)


class NothingFinished(SystemExit):
    """A sweep where no job finished exits 1 (its summary says each job's reason): a script or CI that runs the
    sweep sees it failed. A SystemExit, which Hydra's callback runner passes on (it warns about an Exception and
    goes on); src/run.py's cli knows it from Hydra's own exit 1 for a bad command line by `sweep_over`."""
    sweep_over = True
