"""What a sweep's summary must say before its ranking: whether the ranking can be trusted at all, which plan
chose the jobs that ran, and why each job that did not finish failed.

A ranking rests on each job's interval. Without sweep.repeats that interval is the spread of one process's own
steps, which can't show how far the same job moves from one process to the next; where the host sets the pace
(a CPU, or a host-bound GPU) it moves more than the intervals say (1.12-1.20x between processes of one call on an
H200, src/report/analysis.py's HOST_DRIFT), and on a busy host any job can be slowed at any time: a 6-cell CPU
sweep with every job flagged "busy host" crowned a cell 10x faster than the same micro-batch at grad_accum 1
(issue 51). Such a summary leads with CANNOT_RANK and what would give a ranking.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

PLAN_FILE = "plan.json"  # the sweep's plan as the launcher ran it (src/plan/sweep.py's record)
CANNOT_RANK = "cannot rank these jobs"
FIX_REPEATS = "sweep.repeats=3 (each job in 3 processes, in interleaved rounds: its interval is then their spread)"
FIX_QUIET = "a quiet host (nothing else running while the sweep times its jobs)"


def _repeated(repeat: pd.Series) -> pd.Series:
    """Rows whose interval is the spread of at least two processes (combine_repeats' "2 of 3")."""
    return repeat.astype(str).str.match(r"^(?:[2-9]|\d{2,}) of ")


def trust(df: pd.DataFrame) -> str | None:
    """CANNOT_RANK, why and the fix, or None where the ranking stands on what it can: two or more finished jobs
    and a busy host or another process on the GPU (their flags), or intervals from one process each where the
    host sets the pace."""
    if df.empty or "status" not in df:
        return None
    ok = df[(df["status"] == "ok") & df["real_tok_s"].notna()] if "real_tok_s" in df else df.iloc[:0]
    flags = ok["flags"].fillna("").astype(str) if "flags" in ok else pd.Series("", index=ok.index)
    ranked = ~flags.str.contains(r"(?:^|; )stalled")  # a stalled job is left unranked (sweep_table.stalled)
    finished, halted = len(ok), int((~ranked).sum())
    # the host's state is every finished job's, a stalled one's too: it ran on the same host
    every = flags
    ok, flags = ok[ranked], flags[ranked]
    if len(ok) < 2 and not (halted and finished >= 2):  # one job: nothing is compared
        return None
    host = every if len(ok) < 2 else flags  # the others stalled: the "fastest" below was compared with nothing
    busy, shared = host.str.contains("busy host"), host.str.contains("other processes on the GPU")
    one_process = ~_repeated(ok["repeat"]) if "repeat" in ok else pd.Series(True, index=ok.index)
    device = ok["device"].fillna("").astype(str) if "device" in ok else pd.Series("", index=ok.index)
    host_paced = device.str.startswith("cpu") | flags.str.contains("host-bound")
    why = []
    if len(ok) < 2:
        why.append(f"{halted} of {finished} finished jobs stalled (the process stood still inside its timed window) "
                   f"and {'is' if halted == 1 else 'are'} left unranked, so the fastest below was compared with nothing")
    if busy.any():
        loads = [float(x) for f in host[busy] for x in re.findall(r"busy host: load ([\d.]+)", f)]
        most = f", load up to {max(loads):.1f} per CPU" if loads else ""
        why.append(f"{int(busy.sum())} of {len(busy)} finished jobs ran on a busy host{most}")
    if shared.any():
        why.append(f"{int(shared.sum())} of {len(shared)} finished jobs shared the GPU with other processes")
    noisy = one_process & host_paced
    if noisy.sum() >= 2:
        where = "a CPU" if device[noisy].str.startswith("cpu").all() else "a host-bound step"
        why.append(f"{'each' if noisy.all() else int(noisy.sum())} job's interval comes from its one process, and on "
                   f"{where} the same job moves more between processes than within one")
    if not why:
        return None
    if len(ok) < 2:
        fixes = [f"rerun with rerun=true (a plain rerun skips the finished jobs){',' if busy.any() or shared.any() else ''}"]
    else:
        fixes = [f"rerun with {FIX_REPEATS}"] if (one_process & (noisy | busy | shared)).any() else ["rerun"]
    if busy.any() or shared.any():
        fixes.append(f"on {FIX_QUIET}")
    return (f"{CANNOT_RANK}: {'; '.join(why)}, so the order below may be the host's, not the configs'. To rank them, "
            + " ".join(fixes))


def plan_line(sweep_dir: Path) -> str | None:
    """The plan a sweep.plan=predict sweep used ('plan: ...'), and why where it fell back to every cell; None
    for sweep.plan=all (the default, where every cell runs as asked) and for a sweep without the launcher's
    plan.json (older, or a JSONL of reports)."""
    path = Path(sweep_dir) / PLAN_FILE
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    asked, used, why = plan.get("asked"), plan.get("used"), plan.get("why")
    if why:
        return f"plan: every cell ran, not sweep.plan={asked}'s waves: {why}"
    if used == "predict":
        return "plan: sweep.plan=predict: predicted first, then only the cells that could win or confirm a fit ran"
    return None


def failures(df: pd.DataFrame) -> list[str]:
    """One line for each job that did not finish and says why (a config error's reason, an OOM's first line),
    naming the job: 'config_error in model=qwen3, batch=8: ...'."""
    if df.empty or "error" not in df:
        return []
    failed = df[~df["status"].isin(["ok", "predicted", "predicted_oom"]) & df["error"].fillna("").astype(bool)]
    return [f"{r['status']} in {r['job']}: {str(r['error']).strip().splitlines()[0]}" for _, r in failed.iterrows()]


def not_measured(report: dict) -> str:
    """A report's not_measured ({key: reason}) as one cell of the table: 'key: reason; key: reason'."""
    return "; ".join(f"{key}: {why}" for key, why in (report.get("not_measured") or {}).items())

