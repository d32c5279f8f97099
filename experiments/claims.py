"""Registered claims: figures in prose that no generated table holds, each recomputed from its result files.
tests/test_prose.py checks that each claim's text appears in a page and that its expression gives that text."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.figures import Fig, pct, ratio  # noqa: E402,F401  (the claims' expressions use them)

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Claim:
    text: str  # exactly as the prose has it
    value: Callable[[], str]  # recomputes `text` from the result files


CLAIMS: list[Claim] = []


def spans_in(text: str) -> list[tuple[int, int]]:
    """The offsets of every occurrence of every claim's text in a page's text."""
    out = []
    for claim in CLAIMS:
        start = text.find(claim.text)
        while start >= 0:
            out.append((start, start + len(claim.text)))
            start = text.find(claim.text, start + 1)
    return out
