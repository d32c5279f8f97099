"""The plots' shared parts (plots.py draws the figures): reading the summary table's columns, and the figures'
axes, labels, legends and marks for jobs that did not finish."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def text_colour(rgba) -> str:
    """Black or white, whichever reads better on this colour: WCAG relative luminance, black above 0.179
    (where the contrast against black and against white are equal)."""
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    return "black" if 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2] > 0.179 else "white"


def _figure(width: float, height: float):
    # a bare Figure, not pyplot: no global state, nothing to close, and PNGs render with Agg whatever the backend
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _column(df: pd.DataFrame, *names: str, text: bool = False) -> pd.Series:
    """The first of these columns the table has (names changed as the summary grew), else all NaN; as numbers
    unless `text` (None where no job reached a field makes an object column)."""
    for name in names:
        if name in df:
            return df[name] if text else pd.to_numeric(df[name], errors="coerce")
    return pd.Series(np.nan, index=df.index, dtype=float)


def _ok(df: pd.DataFrame) -> pd.Series:
    return df["status"] == "ok"


def _guessed(df: pd.DataFrame) -> pd.DataFrame:
    """A planned sweep's cells predicted but not run (not those predicted out of memory), with a predicted rate."""
    rate = _column(df, "predicted_tok_s")
    return df.assign(predicted_tok_s=rate)[(df["status"] == "predicted") & rate.notna()]


def _names(values: pd.Series) -> str | None:
    found = list(dict.fromkeys(values.dropna()))
    return ", ".join(map(str, found)) if found else None


def _where(model: str | None, device: str | None) -> str:
    return f"{model or 'unknown model'} on {device or 'unknown device'}"


def _values(col: pd.Series) -> list:
    return sorted(col.dropna().unique())


def _n(x) -> str:
    """8, not 8.0: a column with a missing value turns pandas' ints into floats."""
    return f"{x:g}" if isinstance(x, (int, float, np.number)) else str(x)


def _seconds(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def _percent():
    from matplotlib.ticker import PercentFormatter
    return PercentFormatter(1.0)


def _series(df: pd.DataFrame):
    """(name, rows) per group of jobs that differ only in micro-batch size: a job's overrides less batch.size,
    or "grad_accum N" where nothing else varies."""
    def name(row) -> str:
        rest = [p for p in str(row["job"]).split(", ") if "=" in p and p.split("=")[0] not in ("batch", "batch.size")]
        return ", ".join(rest) or f"grad_accum {_n(row['grad_accum'])}"
    names = df.apply(name, axis=1) if not df.empty else pd.Series(dtype=str)
    groups = [(n, df[names == n]) for n in dict.fromkeys(names)]
    return sorted(groups, key=lambda g: (g[1]["grad_accum"].min(), g[0]))  # grad_accum 1, 2, 4, not 1, 16, 2


def _label(row) -> str:
    world = row.get("world_size", 1)
    ranks = f" x {_n(world)} ranks" if world and world > 1 else ""
    return f"bs {_n(row['batch'])} x ga {_n(row['grad_accum'])}{ranks}"


def _job_labels(rows: pd.DataFrame) -> list[str]:
    """'bs N x ga M', or each job's overrides where jobs of one batch shape differ in other keys."""
    if rows.duplicated(["batch", "grad_accum"]).any():
        return list(rows["job"])
    return [_label(r) for _, r in rows.iterrows()]


def _batch_axis(ax, batch: pd.Series) -> None:
    sizes = _values(batch)
    if len(sizes) > 1:  # matplotlib can't log-scale a single point
        ax.set_xscale("log", base=2)
    if sizes:
        # limits from every size, failed ones too: points drawn on the axis (_mark_failed) don't move them
        ax.set_xlim(min(sizes) / 1.4, max(sizes) * 1.4)
        ax.set_xticks(sizes, [_n(s) for s in sizes])
        ax.minorticks_off()
    ax.set_xlabel("micro-batch size")


def _mark_failed(ax, df: pd.DataFrame) -> None:
    """Jobs that did not finish (or were predicted out of memory), on the x axis at their micro-batch, with their
    status; cells only predicted to be slower are drawn at their prediction instead."""
    failed = df[~_ok(df) & (df["status"] != "predicted") & df["batch"].notna()]
    if failed.empty:
        return
    on_axis = ax.get_xaxis_transform()  # x in data, y in axes: the bottom edge whatever the y range
    ax.scatter(failed["batch"], [0] * len(failed), transform=on_axis, marker="X", s=70, color="red", clip_on=False,
               zorder=5, label="did not finish (" + ", ".join(dict.fromkeys(failed["status"])) + ")")
    for bs, group in failed.groupby("batch"):
        ax.text(bs, 0.04, "\n".join(dict.fromkeys(group["status"])), transform=on_axis, ha="center", va="bottom",
                fontsize=7, color="red")


def _legend(ax, outside: bool = False) -> None:
    """A legend where there is something to name; outside the axes where it would hide data points."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, **({"loc": "upper left", "bbox_to_anchor": (1.01, 1)} if outside else {}))
