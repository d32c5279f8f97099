"""What every experiment's table builder shares: a measured figure (Fig), its rate with its interval, a ratio
between two figures of one device call, and the markdown of a table. The builders live beside their experiments
(experiments/<name>/tables.py); experiments/tables.py finds them and checks or writes the READMEs' copies.

A figure is one labelled report (`report.json` as scripts/collect.py appends it) or one plain-Trainer anchor line
in a results file, at a path relative to experiments/. Its 95% interval is the one the report stores, or, for
reports older than the interval code, the same batch-means interval computed from its stored step times. A ratio
is taken only between two figures of one device call (one machine, one sitting): a figure's call is its row's own
(scripts/collect.py writes CALL_ID into each row), else the one the table names, else its file's name without
`_anchors`. A ratio that must cross calls is refused unless its row asks for it, and then it says so.
"""
from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.base import stats  # noqa: E402

HERE = Path(__file__).resolve().parent  # experiments/: every figure's path is relative to it


class CrossCall(ValueError):
    """A ratio between figures of two device calls, which the project never states as a same-call result."""


@cache
def _records(path: str) -> tuple[dict, ...]:
    rows = []
    for line in (HERE / path).read_text().splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # the anchor script's Trainer prints dicts in Python's repr
                pass
    return tuple(rows)


@dataclass(frozen=True)
class Fig:
    """One measured figure: `label` is a report's label or an anchor's name in the results file `path`."""

    path: str
    label: str
    call: str | None = None

    @property
    def record(self) -> dict:
        found = [r for r in _records(self.path) if r.get("label", r.get("name")) == self.label]
        if len(found) != 1:
            raise KeyError(f"{self.path}: {len(found)} records labelled {self.label!r}")
        return found[0]

    @classmethod
    def by_overrides(cls, path: str, *given: str, without: tuple[str, ...] = ()) -> "Fig":
        """The one report in `path` run with every override in `given` and none in `without`: for sweep reports
        whose label is a long hashed job name."""
        found = [r for r in _records(path) if set(given) <= set(r.get("overrides") or []) and not set(without) & set(r.get("overrides") or [])]
        if len(found) != 1:
            raise KeyError(f"{path}: {len(found)} reports with {given}, without {without}")
        return cls(path, found[0]["label"])

    @property
    def call_id(self) -> str:
        """The device call the figure came from: the one the table names, else the row's own (scripts/collect.py
        writes CALL_ID into each row since issue 52), else its file's (older rows carry none)."""
        return self.call or self.record.get("call") or Path(self.path).stem.removesuffix("_anchors")

    @property
    def rate(self) -> float:
        r = self.record
        return r["real_tok_per_s"] if "name" in r and "label" not in r else r["throughput"]["real_tokens_per_s"]

    @property
    def interval(self) -> stats.Interval | None:
        """The real tok/s interval: the stored one, else batch means over the stored step times (an anchor has none)."""
        r = self.record
        th, step = r.get("throughput") or {}, r.get("step_time_s") or {}
        if th.get("real_tokens_per_s_low"):
            return stats.Interval(self.rate, th["real_tokens_per_s_low"], th["real_tokens_per_s_high"],
                                  step.get("ci_batches") or 2)
        ci = stats.batch_means(step.get("values") or [])
        if ci is None:
            return None
        ci = stats.Interval(ci.mean, max(ci.low, min(step["values"])), ci.high, ci.batches)  # as analysis.with_interval
        return ci.inverse(self.rate * step["mean"])

    def get(self, dotted: str):
        value = self.record
        for key in dotted.split("."):
            value = (value or {}).get(key)
        return value


def ratio(a: Fig, b: Fig, across_calls: bool = False) -> str:
    """a / b, with its 95% interval where both sides have one, and 'a tie' where that interval says so."""
    if a.call_id != b.call_id and not across_calls:
        raise CrossCall(f"{a.label} ({a.call_id}) / {b.label} ({b.call_id}) crosses calls")
    c = stats.compare(a.interval, b.interval, a.rate, b.rate)
    text = f"{c.ratio:.2f}"
    if c.high != float("inf"):
        text += f" ({c.low:.2f}-{c.high:.2f}){': a tie' if c.tie else ''}"
    return text + (" (across calls)" if a.call_id != b.call_id else "")


def rate(f: Fig, bold: bool = False) -> str:
    ci = f.interval
    text = f"**{f.rate:,.0f}**" if bold else f"{f.rate:,.0f}"
    return text + (f" ({ci.low:,.0f}-{ci.high:,.0f})" if ci else "")


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1%}"


def gb(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


@cache
def ranks(summary_csv: str) -> dict[str, str]:
    """A sweep's ranks by job, from its summary.csv (src/report/summary.py: jobs it can't tell apart share one)."""
    with open(HERE / summary_csv) as f:
        return {row["job"]: row["rank"] for row in csv.DictReader(f)}





def ms(x: float | None) -> str:
    return "" if x is None else f"{x * 1000:.1f}"

