"""A sweep over GPU counts (`distributed=ddp distributed.nproc_per_job=1,2,4`, `distributed.nodes=1,2`, or the
torchrun runs of one device call collected into a JSONL): each job's speed-up over the 1-GPU job and its per-GPU
efficiency (speed-up / GPUs), with 95% intervals. summary.py writes it as scaling.csv, scaling.md (also at the
end of summary.md) and scaling.png when the sweep's finished jobs ran on more than one GPU count.

A ratio is only taken between jobs of one sweep (a sweep directory, or one `call` of a JSONL): the machine, its
clocks and its neighbours drift between calls by more than the effects measured here. The 1-GPU job of a
multi-GPU job is the one whose overrides are the same but for the GPU counts (and the strategy, which one
process doesn't use). The interval is that of the ratio of the two jobs' throughputs, each the inverse of the
job's own step-time interval (stats.compare), divided by the GPU count.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..base import stats
from ..base.files import atomic_write

COUNTS = ("distributed.nproc_per_job", "distributed.nodes", "repeat")  # what a GPU-count sweep varies
STRATEGY = ("distributed", "distributed.strategy")  # one process trains plainly whatever these say


def _family(report: dict, with_strategy: bool) -> tuple:
    drop = COUNTS + (() if with_strategy else STRATEGY)
    given = (o.replace("'", "").partition("=") for o in report.get("overrides") or [])
    return tuple(sorted((k.lstrip("+~"), v) for k, _, v in given if k.lstrip("+~") not in drop))


def _interval(row) -> stats.Interval | None:
    if any(pd.isna(row.get(k)) for k in ("real_tok_s_low", "real_tok_s_high", "ci_batches")):
        return None
    return stats.Interval(row["real_tok_s"], row["real_tok_s_low"], row["real_tok_s_high"], int(row["ci_batches"]))


def table(df: pd.DataFrame, reports: list[dict]) -> pd.DataFrame:
    """One row per finished job of a sweep whose jobs ran on more than one GPU count (else empty): GPUs as nodes
    x processes, real tokens/s, and against its sweep's 1-GPU job the speed-up and per-GPU efficiency with their
    intervals (NaN where there is no such job, or no interval on either side)."""
    by_dir = {r.get("job"): r for r in reports}
    ok = df[(df["status"] == "ok") & df["real_tok_s"].notna()] if not df.empty else df
    if ok.empty or ok["world_size"].nunique() < 2:
        return pd.DataFrame()
    rows = []
    for _, row in ok.iterrows():
        rep = by_dir.get(row["dir"]) or {}
        gpus = int(row["world_size"] or 1)
        nodes = int((rep.get("env") or {}).get("nodes") or 1)
        # a device call's runs by their labels (one_gpu, two_gpu_ddp), a sweep's jobs by what they vary
        rows.append({"job": row["dir"] if rep.get("call") else row["job"], "dir": row["dir"], "sweep": rep.get("call"), "nodes": nodes,
                     "per_node": gpus // nodes, "gpus": gpus, "real_tok_s": row["real_tok_s"],
                     "real_tok_s_low": row.get("real_tok_s_low"), "real_tok_s_high": row.get("real_tok_s_high"),
                     "ci_batches": row.get("ci_batches"), "strategy": (rep.get("resolved") or {}).get("distributed"),
                     "_family": _family(rep, True), "_reference": _family(rep, False)})
    out = pd.DataFrame(rows)
    out["reference"], out["reference_dir"] = None, None
    for col in ("speedup", "speedup_low", "speedup_high", "efficiency", "efficiency_low", "efficiency_high"):
        out[col] = float("nan")
    for i, row in out.iterrows():
        ones = out[(out["gpus"] == 1) & (out["sweep"].fillna("") == (row["sweep"] or ""))
                   & out["_reference"].apply(lambda f: f == row["_reference"])]
        if ones.empty:
            continue
        one = ones.iloc[0]
        out.loc[i, ["reference", "reference_dir"]] = [one["job"], one["dir"]]
        if row["dir"] == one["dir"]:  # itself: 1 by definition, no interval (two draws of one job would make one)
            out.loc[i, ["speedup", "efficiency"]] = [1.0, 1.0]
            continue
        ratio = stats.compare(_interval(row), _interval(one), row["real_tok_s"], one["real_tok_s"])
        ends = (ratio.low, ratio.high) if 0 < ratio.low and ratio.high < float("inf") else (float("nan"),) * 2
        out.loc[i, ["speedup", "speedup_low", "speedup_high"]] = [ratio.ratio, *ends]
        out.loc[i, ["efficiency", "efficiency_low", "efficiency_high"]] = [x / row["gpus"] for x in (ratio.ratio, *ends)]
    return out.sort_values(["sweep", "_reference", "gpus"], key=lambda c: c.astype(str)
                           if c.name != "gpus" else c).reset_index(drop=True)


def _ratio(row, col: str, fmt: str, unit: str = "") -> str:
    """'1.85x (1.79-1.90)', '92% (90%-95%)', or why there is no figure."""
    if row["dir"] == row["reference_dir"]:
        return "the 1-GPU reference"
    if pd.isna(row[col]):
        return "no 1-GPU job in this sweep"
    inner = (f" ({row[col + '_low']:{fmt}}-{row[col + '_high']:{fmt}})" if pd.notna(row[col + "_low"])
             else " (no interval: too few timed steps)")
    return f"{row[col]:{fmt}}{unit}{inner}"


def markdown(scale: pd.DataFrame) -> str:
    """The scaling section: one line per finished job, with its 1-GPU reference's line beside it."""
    if scale.empty:
        return ""
    lines = ["## Scaling over GPUs\n",
             "Against the 1-GPU job of the same sweep (same overrides but the GPU counts); the 95% intervals come "
             "from the two jobs' own step-time intervals. Per-GPU efficiency = speed-up / GPUs (100%: linear).\n",
             "| job | nodes x GPUs each | GPUs | real tok/s (95%) | speed-up vs 1 GPU (95%) | per-GPU efficiency (95%) |",
             "|---|---|---|---|---|---|"]
    for _, r in scale.iterrows():
        rate = f"{r['real_tok_s']:,.0f}" + (f" ({r['real_tok_s_low']:,.0f}-{r['real_tok_s_high']:,.0f})"
                                             if pd.notna(r["real_tok_s_low"]) else "")
        lines.append(f"| {r['job']} | {r['nodes']} x {r['per_node']} | {r['gpus']} | {rate} | "
                     f"{_ratio(r, 'speedup', '.2f', 'x')} | {_ratio(r, 'efficiency', '.0%')} |")
    return "\n".join(lines) + "\n"


def figure(scale: pd.DataFrame, where: str = ""):
    """Per-GPU efficiency against GPUs, one line per family of jobs (same overrides but the GPU counts) and node
    count, each point with its interval; linear scaling is the dashed line at 100%."""
    from matplotlib.figure import Figure  # a bare Figure: no pyplot state, Agg whatever the backend
    from matplotlib.ticker import PercentFormatter

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    shown = scale[scale["efficiency"].notna()]
    # one line per family on one host; the jobs spanning hosts apart, as their own points (their GPUs talk over
    # the network, not NVLink: a line from the 1-host points would read as one curve)
    for (_, _, nodes), group in shown.groupby(["sweep", "_family", "nodes"], dropna=False, sort=False):
        group = group.sort_values("gpus")
        low, high = group["efficiency_low"], group["efficiency_high"]
        err = [(group["efficiency"] - low).fillna(0).clip(lower=0), (high - group["efficiency"]).fillna(0).clip(lower=0)]
        name = (", ".join(f"{k}={v}" for k, v in group.iloc[0]["_family"]) or "jobs") + (f", {nodes} nodes" if nodes > 1 else "")
        ax.errorbar(group["gpus"], group["efficiency"], yerr=err, marker="o", capsize=4, label=name)
    ax.axhline(1.0, linestyle="--", color="grey", linewidth=1, label="linear")
    ax.set_xticks(sorted(shown["gpus"].unique()) if not shown.empty else [1])
    ax.set_xlabel("GPUs (nodes x per node)")
    ax.set_ylabel("per-GPU efficiency vs 1 GPU (95%)")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_title("Scaling over GPUs" + (f": {where}" if where else ""), fontsize=10)
    ax.legend(fontsize=7)
    return fig


def write(out_dir: Path, df: pd.DataFrame, reports: list[dict]) -> tuple[str, list[Path]]:
    """scaling.csv, scaling.md and scaling.png in out_dir when the jobs ran on several GPU counts; returns the
    markdown section ("" when there is nothing to scale) and the images written."""
    scale = table(df, reports)
    if scale.empty:
        return "", []
    first = df[df["dir"] == scale["dir"].iloc[0]].iloc[0]
    where = f"{first.get('model') or 'unknown model'} on {first.get('device') or 'unknown device'}"
    out_dir = Path(out_dir)
    md = markdown(scale)
    atomic_write(out_dir / "scaling.csv", scale.drop(columns=["_family", "_reference"]).to_csv(index=False))
    atomic_write(out_dir / "scaling.md", md)
    if scale["efficiency"].isna().all():
        return md, []
    fig = figure(scale, where)
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=110)
    return md, [out_dir / "scaling.png"]
