"""Registered claims: figures in prose (README.md, docs/, experiments/*/README.md) that no generated table holds,
each with its text exactly as the prose has it and an expression that recomputes that text from the result files.
tests/test_prose.py checks that each claim's text appears in a page and that its expression gives that text;
experiments/prose.py counts a figure inside a claim's text as backed.

The claims are grouped by the experiments their files come from (speed, planner, saturation, loops, seed, speedup, others); this module
holds what they share: the Claim, how prose writes a figure, and where claims sit in a page.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.figures import Fig, pct, ratio  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Claim:
    text: str  # exactly as the prose has it
    value: Callable[[], str]  # recomputes `text` from the result files


def spans_in(text: str) -> list[tuple[int, int]]:
    """The offsets of every occurrence of every claim's text in a page's text."""
    out = []
    for claim in CLAIMS:
        start = text.find(claim.text)
        while start >= 0:
            out.append((start, start + len(claim.text)))
            start = text.find(claim.text, start + 1)
    return out


# -- how a figure is written in prose ----------------------------------------------------------------------
def n(x: float) -> str:
    """A rate as prose writes it: 33,644."""
    return f"{x:,.0f}"


def k(x: float) -> str:
    """A rate in thousands: 23.3k."""
    return f"{x / 1000:.1f}k"


def ci(f: Fig) -> str:
    """A figure's rate with its 95% interval: 33,644 (32,608-34,374)."""
    i = f.interval
    return f"{n(f.rate)} ({n(i.low)}-{n(i.high)})"


def times(a: Fig, b: Fig, across_calls: bool = False) -> str:
    """ratio() as prose writes it: 1.08x (1.04-1.12), or 2.73x where a side has no interval."""
    text = ratio(a, b, across_calls).removesuffix(" (across calls)")
    head, _, tail = text.partition(" ")
    return f"{head}x" + (f" {tail}" if tail else "")


def mfu(f: Fig) -> str:
    return pct(f.get("flops.mfu"))


def busy(f: Fig) -> str:
    return f"{f.get('gpu_busy_fraction'):.0%}"


def share(x: float) -> str:
    return f"{x:.0%}"


def x_only(a: Fig, b: Fig) -> str:
    """ratio() as prose writes it without its interval: 2.34x."""
    return times(a, b).split()[0]


def _row(table: str, first: str) -> list[str]:
    """A generated table's row (experiments/tables.py: recomputed from the files), by its first cell."""
    from experiments import tables

    for line in tables.TABLES[table][1]().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == first:
            return cells
    raise KeyError(f"{table}: no row {first!r}")


def quote(path: str, text: str) -> str:
    """`text` where the committed file experiments/<path> says it word for word (a sweep's own summary.md, a
    report.md): a figure quoted from a file is checked against that file."""
    return text if text in (ROOT / "experiments" / path).read_text() else f"<not in {path}: {text}>"


def quoted(path: str, *texts: str) -> list[Claim]:
    return [Claim(t, lambda t=t: quote(path, t)) for t in texts]


from experiments.claims import batches, graphs53, loops, others, planner, saturation, seed, speed, speed53, speedup  # noqa: E402  (they use the helpers above)

CLAIMS: list[Claim] = [*speed.CLAIMS, *speed53.CLAIMS, *graphs53.CLAIMS, *planner.CLAIMS, *saturation.CLAIMS, *loops.CLAIMS, *seed.CLAIMS, *speedup.CLAIMS, *others.CLAIMS, *batches.CLAIMS]
