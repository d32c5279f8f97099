"""A sweep's table: one row per job from its report.json (and, in a planned sweep, its prediction.json), the
repeats of a job combined into one row, ranked by real tokens/s with ties called ties. summary.py writes it out
and reads the answer from it; the plots draw it (plots.py).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ..base import stats
from ..measure import PHASES
from .caveats import not_measured
from .document import Report, batch_as_run


def load_reports(sweep: Path) -> list[dict]:
    """The job reports of a sweep directory (*/report.json), or of a JSONL file of labelled reports (what a
    GPU call brings back: scripts/collect.py). Reports written before the intervals and flags existed get
    them from their own timed steps."""
    sweep = Path(sweep)
    if sweep.is_file():
        lines = [json.loads(line) for line in sweep.read_text().splitlines() if line.strip()]
        found = [(r.pop("label", None) or f"job{i}", r) for i, r in enumerate(lines)]
    else:
        found = [(p.parent.name, _read_job(p)) for p in sorted(sweep.glob("*/report.json"))]
    reports = []
    for job, report in found:
        report["job"] = job
        reports.append(with_intervals(report))
    return reports + (with_predictions(sweep, reports) if sweep.is_dir() else [])


def _read_job(path: Path) -> dict:
    """A job's report.json, or a report of status `unreadable` saying what is wrong with the file: one corrupt
    report is that job's row, never the end of the whole summary."""
    try:
        report = json.loads(path.read_text())
        if isinstance(report, dict) and report.get("status"):
            return report
        why = "holds no report (no status)"
    except (OSError, ValueError) as exc:
        why = f"can't be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'empty'})"
    return {"status": "unreadable", "error": f"{path} {why}; rerun the sweep to run that job again", "overrides": [],
            "config": {}}


PREDICTED = ("predicted", "predicted_oom")  # a planned sweep's cells that did not run: no measurement
SMALLER = "not run: predicted to fit"  # the planner's decision for a cell below the largest fit (plan.decisions)


def with_predictions(sweep: Path, reports: list[dict]) -> list[dict]:
    """A planned sweep's predictions (*/prediction.json): added to the reports of the cells that ran, and the
    cells that did not run as reports of status predicted or predicted_oom. A cell planned to run that has no
    report is left to `warnings`."""
    ran, planned = {r["job"]: r for r in reports}, []
    for path in sorted(sweep.glob("*/prediction.json")):
        job, given = path.parent.name, json.loads(path.read_text())
        decision = given.get("decision") or ""
        if job in ran:
            ran[job].update(prediction=given.get("prediction") or {}, decision=decision, largest_fit=given.get("largest_fit"))
        elif not decision.startswith("ran"):
            status = "predicted_oom" if decision.startswith("predicted out of memory") else "predicted"
            planned.append({"job": job, "status": status, "overrides": given.get("overrides") or [],
                            "config": given.get("config") or {}, "prediction": given.get("prediction") or {},
                            "decision": decision, "largest_fit": given.get("largest_fit")})
    return planned


def with_intervals(report: dict) -> dict:
    """A finished report without intervals or flags (older than them): both computed from its step times."""
    if report.get("status") != "ok" or "flags" in report or not (report.get("step_time_s") or {}).get("values"):
        return report
    from . import analysis
    from .sections import Compile, Shapes, StepTime, Throughput

    step, th = StepTime.from_dict(report["step_time_s"]), Throughput.from_dict(report["throughput"])
    analysis.with_interval(step, th)
    stop_rule = ((report.get("config") or {}).get("measure") or {}).get("stop_when_stable", False)
    flags = analysis.flags(step, Shapes.from_dict(report.get("shapes") or {}), Compile.from_dict(report.get("compile") or {}),
                           {}, stop_rule, bool(report.get("stopped_when_stable")))
    return {**report, "step_time_s": step.to_dict(), "throughput": th.to_dict(), "flags": flags.to_dict()}


def _overrides(report: dict) -> dict:
    return dict(o.replace("'", "").partition("=")[::2] for o in report.get("overrides") or [])


def _varying(reports: list[dict]) -> list[str]:
    """The override keys whose values differ between jobs: what the sweep compares."""
    given = [_overrides(r) for r in reports]
    keys = dict.fromkeys(k for g in given for k in g)
    return [k for k in keys if len({g.get(k) for g in given}) > 1]


# summary column -> the report field it shows (report.Report.flat's names); every other measured number
# follows under its own `section.field` name, so a new report field reaches summary.csv by itself
COLUMNS = {"real_tok_s": "throughput.real_tokens_per_s", "real_tok_s_low": "throughput.real_tokens_per_s_low",
           "real_tok_s_high": "throughput.real_tokens_per_s_high", "ci_batches": "step_time_s.ci_batches",
           "samples_s": "throughput.samples_per_s",
           "pad_fraction": "throughput.pad_fraction", "step_s": "step_time_s.mean", "step_p90_s": "step_time_s.p90",
           "steps_timed": "step_time_s.n", "mfu": "flops.mfu",
           "peak_alloc_gb": "memory_gb.peak_allocated", "peak_reserved_gb": "memory_gb.peak_reserved",
           "capacity_gb": "memory_gb.capacity", "peak_rss_gb": "memory_gb.peak_rss_gb",
           "alloc_retries": "memory_gb.alloc_retries_in_window", **{f"{p}_s": f"breakdown_s.{p}" for p in PHASES}}


def table(reports: list[dict], combine: bool = True) -> pd.DataFrame:
    """One row per job (report.json's contents plus its "job" directory), ranked: finished jobs by real
    tokens/s, then failed ones. A job run several times (sweep.repeats) is one row unless `combine` is off."""
    rows = []
    keys = _varying(reports)
    for d in reports:
        r = Report.from_dict(d)
        given = _overrides(d)
        label = ", ".join(f"{k}={given[k]}" for k in keys if k in given) or d["job"]
        batch = batch_as_run(r.config, r.get("resolved") or {})  # batch.tokens=auto: what it chose
        size, accum, tokens = batch.get("size"), batch.get("grad_accum"), batch.get("tokens")
        world = (r.get("resolved") or {}).get("world_size") or 1  # a multi-process job's ranks each take a micro-batch
        flat = r.flat()
        verdict, timing = r.get("verdict"), r.get("timing_s") or {}
        row = {"job": label, "dir": d["job"], "status": r.status, "batch": size, "batch_tokens": tokens, "grad_accum": accum,
               # rows a step; a token budget's packs hold as many rows as fit, so its batch.size says nothing
               "effective_batch": size * accum * world if size and accum and not tokens else None, "world_size": world,
               **{col: flat.get(path) for col, path in COLUMNS.items()},
               "gpu_busy": r.get("gpu_busy_fraction"),
               "predicted_alloc_gb": (r.get("memory_predicted_gb") or {}).get("peak_allocated"),  # before step 1
               "saturated": verdict.saturated if verdict else None, "bottleneck": verdict.bottleneck if verdict else None,
               "build_s": timing.get("build"), "train_s": timing.get("train"),
               "flags": "; ".join(r.flags.reasons) if r.get("flags") else "",
               "model": r.config.get("model", {}).get("name"), "repeat": given.get("repeat", "0"),
               "device": (r.get("env") or {}).get("device_name"), "error": (r.error or "")[:200],
               "not_measured": not_measured(d)}  # what a check could not give: said in summary.md, never only absent
        shown = set(COLUMNS.values())
        row.update({path: value for path, value in flat.items() if path not in shown})
        if any("prediction" in r for r in reports):  # a planned sweep: what each cell was predicted to do
            p = d.get("prediction") or {}
            row.update(predicted_tok_s=p.get("real_tokens_per_s"), predicted_tok_s_low=p.get("low"),
                       predicted_tok_s_high=p.get("high"), predicted_memory_gb=p.get("memory_gb"),
                       predicted_why_not=p.get("why_not"), decision=d.get("decision"), largest_fit=bool(d.get("largest_fit")))
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    if combine and (df["repeat"] != "0").any():
        df = combine_repeats(df)
    if "predicted_tok_s" in df:  # measured/predicted - 1, for the cells that ran
        measured, predicted = (pd.to_numeric(df[c], errors="coerce") for c in ("real_tok_s", "predicted_tok_s"))
        df["prediction_error"] = (measured / predicted - 1).where(df["status"] == "ok")
    # finished jobs by real tokens/s, then failed ones, then those only predicted (fastest first), then predicted OOM
    clean = (df["status"] == "ok") & ~stalled(df)  # a stalled job's figure is no measurement: after them, unranked
    df["_kind"] = [0 if c else 2 + PREDICTED.index(s) if s in PREDICTED else 1 for s, c in zip(df["status"], clean)]
    by = ["_kind", "real_tok_s"] + (["predicted_tok_s"] if "predicted_tok_s" in df else [])
    df = df.sort_values(by, ascending=[True] + [False] * (len(by) - 1), na_position="last").drop(columns="_kind")
    df = df.reset_index(drop=True)
    ranks = tiers(df)
    df.insert(0, "rank", pd.array(ranks, dtype="Int64") if None in ranks else ranks)  # predicted: no rank
    return df


def combine_repeats(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job of a sweep run with `sweep.repeats`: the mean over its repeats, and an interval from
    their spread (each repeat a separate process at a different time: the drift between runs is in it)."""
    rows = []
    for label, group in df.groupby(df["job"].str.replace(r"(^|, )repeat=\d+", "", regex=True).str.strip(", "),
                                   sort=False):
        ok = group[group["status"] == "ok"]
        row = (ok if not ok.empty else group).iloc[0].to_dict()
        numeric = ok.select_dtypes("number").mean() if not ok.empty else {}
        row.update({k: v for k, v in dict(numeric).items() if k not in ("batch", "grad_accum", "effective_batch")})
        ci = stats.of_repeats(list(ok["real_tok_s"].dropna())) if len(ok) > 1 else None
        row.update(job=label or row["job"], repeat=f"{len(ok)} of {len(group)}",
                   real_tok_s_low=ci.low if ci else None, real_tok_s_high=ci.high if ci else None,
                   ci_batches=ci.batches if ci else None,
                   status="ok" if not ok.empty else group["status"].iloc[0],
                   flags=_repeat_flags(group["flags"], has_interval=ci is not None))
        rows.append(row)
    return pd.DataFrame(rows)


def _repeat_flags(flags: pd.Series, has_interval: bool) -> str:
    """One flag of each kind over a job's repeats, the first repeat's wording with how many repeats raised it
    (each repeat words its own numbers: 'GPU busy 42%', 'GPU busy 54%'). A repeat's own interval flags say
    nothing once the repeats' spread gives the interval."""
    kinds: dict[str, list[str]] = {}
    for f in (f for fl in flags if fl for f in fl.split("; ")):
        if not (has_interval and f.startswith(("no interval", "wide interval"))):
            kinds.setdefault(re.split(r"[(:]", f)[0].strip(), []).append(f)
    n = len(flags)
    return "; ".join(found[0] + (f" ({len(found)} of {n} repeats)" if n > 1 else "") for found in kinds.values())


def interval(row) -> stats.Interval | None:
    """A table row's throughput interval (None where the job had too few steps for one)."""
    if pd.isna(row.get("real_tok_s_low")) or pd.isna(row.get("ci_batches")):
        return None
    return stats.Interval(row["real_tok_s"], row["real_tok_s_low"], row["real_tok_s_high"], int(row["ci_batches"]))


def comparison(a, b) -> stats.Comparison:
    return stats.compare(interval(a), interval(b), a["real_tok_s"], b["real_tok_s"])


def stalled(df: pd.DataFrame) -> pd.Series:
    """Rows flagged stalled (src/report/analysis.py: the process stood still inside the timed window)."""
    return df["flags"].fillna("").astype(str).str.contains(r"(?:^|; )stalled", regex=True) if "flags" in df \
        else pd.Series(False, index=df.index)


def tiers(df: pd.DataFrame) -> list[int | None]:
    """Ranks that call a tie a tie: a finished job shares the rank of the fastest job of its tier while the two
    can't be told apart (src/base/stats.py); failed jobs rank after, one each; predicted-only cells, diverged
    and stalled jobs get none."""
    ranks, leader = [], None
    halted = stalled(df)
    for i, row in df.iterrows():
        if halted[i]:  # finished, but its figure is of a process that stood still
            ranks.append(None)
            continue
        if row["status"] != "ok" or pd.isna(row["real_tok_s"]):  # a diverged job's speed is of a run that learned nothing
            ranks.append(None if row["status"] in PREDICTED + ("diverged",) else i + 1)
            continue
        if leader is None or not comparison(df.loc[leader], row).tie:
            leader = i
        ranks.append(leader + 1)
    return ranks
