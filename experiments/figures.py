"""What every experiment's table builder shares: a measured figure (Fig), its rate with its interval, a ratio
between two figures of one device call, and the markdown of a table. The builders live beside their experiments
(experiments/<name>/tables.py); experiments/tables.py finds them and checks or writes the READMEs' copies.

A figure is one labelled report (`report.json` as scripts/collect.py appends it) or one plain-Trainer anchor line
in a results file, at a path relative to experiments/. Its 95% interval is the one the report stores, or, for
reports older than the interval code, the same batch-means interval computed from its stored step times. A ratio
is taken only between two figures of one device call (one machine, one sitting): a figure's call is its row's own
(scripts/collect.py writes CALL_ID into each row), else LEGACY_CALLS' (older rows), else its file's name without
`_anchors`. A ratio that must cross calls is refused unless its builder asks for it, and then its cell says so; a
ratio taken by hand (means of runs, measured over predicted) goes through quotient() or over() under the same rule.
"""
from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import calltrace  # noqa: E402
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
    calls = [call_of(path, i, row) for i, row in enumerate(rows)]
    if calltrace.TRACING:  # the scan test's run: each number remembers the call of its row
        rows = [calltrace.tag(row, call) for row, call in zip(rows, calls)]
    _CALL.update((id(row), call) for row, call in zip(rows, calls))
    return tuple(rows)


_CALL: dict[int, str] = {}  # id(row) -> its call, for the rows _records keeps (cached, so their ids stay theirs)


def call_of(path: str, index: int, row: dict) -> str:
    """A row's device call: its own (scripts/collect.py writes CALL_ID into each row since issue 52), else the one
    LEGACY_CALLS gives its file (rows written before then), else its file's name without `_anchors`."""
    if row.get("call"):
        return row["call"]
    legacy = LEGACY_CALLS.get(path)
    if legacy is None:
        legacy = next((v for k, v in LEGACY_CALLS.items() if k.endswith("/") and path.startswith(k)), None)
    if callable(legacy):
        return legacy(index, row)
    if isinstance(legacy, dict):
        return legacy[row.get("label", row.get("name"))]
    return legacy or Path(path).stem.removesuffix("_anchors")


# Rows written before they carried their call (issue 52), where the file's name doesn't say it: a call for the
# whole file (a path, or a folder ending in /), one per label, or one computed from the row (its position, its label).
_LADDER_B = ("rung_4_bf16", "rung_5_no_checkpointing", "rung_6_bs16", "rung_7_compile", "rung_8_padding_free")
LEGACY_CALLS = {
    "speed/results/h100_levers_sweep/": "h100_levers_call3",  # the sweep's reports and its anchor: one call
    "speed/results/h100_levers_call7/reports_a.jsonl": "h100_levers_call7a",
    "speed/results/h100_levers_call7/anchors.jsonl": "h100_levers_call7a",
    "speed/results/h100_levers_call7/reports_b.jsonl": "h100_levers_call7b",  # fp8_fused, a second call, same machine
    "twelve_x_slowdown/results/ladder/reports.jsonl": lambda i, row: "twelve_x_call_" + ("B" if row["label"] in _LADDER_B else "A"),
    "twelve_x_slowdown/results/ladder/anchor_call_A.jsonl": "twelve_x_call_A",
    "twelve_x_slowdown/results/ladder/anchor_call_B.jsonl": "twelve_x_call_B",
    "twelve_x_slowdown/results/ladder_c/": "twelve_x_call_C",
    # rounds 1-2 and the third round's `none` in call 1 (results/interleaved), the rest of round 3 in call 2 (round3)
    "loop_overheads/results/pooled/reports.jsonl":
        lambda i, row: "loop_overheads_call" + ("2" if row["label"].endswith(",repeat=3") else "1"),
    # the first two jobs in one call, the last two in the next (same machine), in the order they ran
    "batch_vs_accum_saturation/results/near_cap/reports.jsonl": lambda i, row: f"saturation_near_cap_call{1 + i // 2}",
    # G1 P1 in call 2, G2 P2 in call 3, in the order they ran
    "speedup/results/h100_graphs_calls2_3.jsonl": lambda i, row: f"h100_graphs_call{2 + i // 2}",
    # experiments/planner: a prediction's call is its decisions file's; where plan=all was cut in one call and
    # resumed in the next, its reports are the two calls' (a pooled id: any ratio to them is labelled)
    "planner/results/h100_plan_predict_decisions.jsonl": "h100_planner_call",  # with h100_planner_call.log
    "planner/results/h100_call2/": "h100_planner_call2",
    "planner/results/h100_grid18/all_1/": "h100_grid18_all_call1",  # plan=all in two calls on one machine,
    "planner/results/h100_grid18/all_2/": "h100_grid18_all_call2",
    "planner/results/h100_grid18/predict/": "h100_grid18_predict_call",  # plan=predict on a later machine
    "planner/results/h100_grid18_v2/": "h100_planner_call6",
    "planner/results/h200_grid18/": "h200_planner_call7",  # both plans in one session on one machine
    "planner/results/h200_g4/decisions_largest.jsonl": "h200_g4_call1",
    "planner/results/h200_g4/reports_largest_predict.jsonl": "h200_g4_call1",
    "planner/results/h200_g4/reports_largest_all.jsonl": "h200_g4_calls1-2",
    "planner/results/h200_g4/decisions_fastest.jsonl": "h200_g4_call3",
    "planner/results/h200_g4/reports_fastest_predict.jsonl": "h200_g4_call3",
    "planner/results/h200_g4/reports_fastest_all.jsonl": "h200_g4_call3",
    "planner/results/h200_g4/decisions_fastest_leader.jsonl": "h200_g4_call4",
    "planner/results/h200_g4/reports_fastest_leader_predict.jsonl": "h200_g4_call4",
    "planner/results/h200_g4/reports_fastest_leader_all.jsonl": "h200_g4_call4",
    "planner/results/h200_fastest5/decisions_fastest5.jsonl": "h200_fastest5_call1",
    "planner/results/h200_fastest5/reports_fastest5_predict.jsonl": "h200_fastest5_call1",
    "planner/results/h200_fastest5/reports_fastest5_all.jsonl": "h200_fastest5_calls1-2",
    **{f"planner/results/h200_fastest5/{f}_fastest5_fixed{g}.jsonl": "h200_fastest5_call3"
       for f, g in (("decisions", ""), ("reports", "_predict"), ("reports", "_all"))},
    "planner/results/h200_preset/decisions_preset.jsonl": "h200_preset_call1",
    "planner/results/h200_preset/reports_preset_predict.jsonl": "h200_preset_call1",
    "planner/results/h200_preset/reports_preset_all.jsonl": "h200_preset_calls1-2",
}


def row_call(row: dict) -> str:
    """The call of a row that _records returned."""
    return _CALL[id(row)]


@dataclass(frozen=True)
class Fig:
    """One measured figure: `label` is a report's label or an anchor's name in the results file `path`."""

    path: str
    label: str

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
        """The device call the figure came from, read from its row (call_of)."""
        return row_call(self.record)

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
    check(a.call_id, b.call_id, across_calls, f"{a.label} ({a.call_id}) / {b.label} ({b.call_id})")
    with calltrace.allowed():
        c = stats.compare(a.interval, b.interval, a.rate, b.rate)
    text = f"{c.ratio:.2f}"
    if c.high != float("inf"):
        text += f" ({c.low:.2f}-{c.high:.2f}){': a tie' if c.tie else ''}"
    return text + (ACROSS if a.call_id != b.call_id else "")


ACROSS = " (across calls)"  # what a ratio between two calls' figures says of itself


def check(a_calls: str | set, b_calls: str | set, across_calls: bool = False, what: str = "") -> bool:
    """Refuse a ratio whose two sides come from different device calls (a side may pool several: then it crosses
    too) unless the builder asks (across_calls), and then its cell says ACROSS; True where it crosses. Every ratio a
    builder takes passes here, ratio() included, and calltrace's scan notes each one."""
    a_calls, b_calls = ({x} if isinstance(x, str) else set(x) for x in (a_calls, b_calls))
    crosses = a_calls != b_calls or len(a_calls) > 1
    if crosses and not across_calls:
        what = what or f"{' + '.join(sorted(a_calls))} / {' + '.join(sorted(b_calls))}"
        raise CrossCall(f"{what} crosses calls")
    calltrace.note(a_calls | b_calls, crosses)
    return crosses


def over(a: float, b: float, a_calls: str | set, b_calls: str | set, spec: str = ".2f", bold: bool = False,
         across_calls: bool = False) -> str:
    """a / b by hand as a table cell: the value, bold where asked, then ACROSS where its sides' calls differ."""
    crosses = check(a_calls, b_calls, across_calls)
    calltrace.declared(a, a_calls), calltrace.declared(b, b_calls)
    text = f"{float(a) / float(b):{spec}}"
    return (f"**{text}**" if bold else text) + (ACROSS if crosses else "")


def quotient(a: float, b: float, a_calls: str | set, b_calls: str | set, across_calls: bool = False) -> float:
    """a / b for a ratio a builder takes by hand (means of runs, measured over predicted): refused across calls
    unless labelled, as ratio()."""
    check(a_calls, b_calls, across_calls)
    calltrace.declared(a, a_calls), calltrace.declared(b, b_calls)
    return float(a) / float(b)


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

