"""The planner's word on every cell of a planned sweep, kept in its prediction.json and shown in the summary's
decision column: ran (and how its measurement compared with its prediction), predicted out of memory, or not run
and why (its calibrated prediction against the measured winner's). Stdlib only, as waves.py.
"""
from __future__ import annotations

from typing import Iterable

from .waves import (Measured, Prediction, _bounds, _by_cell, _fits, _reaches, _under_saturation, _winner,
                    calibration, prediction_error)


def _rate(x: Prediction | Measured, factor: float = 1.0) -> str:
    tok, low, high = _bounds(x, factor)
    return f"{tok:,.0f}" if x.low is None else f"{tok:,.0f} ({low:,.0f}-{high:,.0f})"


def not_run(preds: Iterable[Prediction], capacity_gb: float | None) -> dict[str, str]:
    return {p.cell: f"predicted out of memory: {p.over_card}" if p.over_card else
            f"predicted out of memory: {p.memory_gb:.1f} GB > {capacity_gb:.1f} GB"
            for p in _by_cell(preds).values() if not _fits(p, capacity_gb)}


def _ran(p: Prediction | None, m: Measured) -> str:
    if m.status != "ok":
        predicted = f" (predicted {p.memory_gb:.1f} GB)" if m.status == "oom" and p and p.memory_gb else ""
        return f"ran: {m.status}{predicted}"
    error = prediction_error(p, m) if p else None
    return "ran" if error is None else f"ran: measured {1 + error:.2f}x its prediction"


def decisions(preds: Iterable[Prediction], measured: Iterable[Measured], capacity_gb: float | None,
              question: str = "both") -> dict[str, str]:
    preds, measured = _by_cell(preds), _by_cell(measured)
    winner, factors = _winner(measured), calibration(preds.values(), measured.values())
    fit = _winner(measured, unsaturated=True) if winner is not None and winner.saturated else None
    under = {p.cell for p in _under_saturation(preds, measured)} if fit is not None else set()
    out = {}
    for cell in {**preds, **measured}:
        p, m = preds.get(cell), measured.get(cell)
        if m is not None:
            out[cell] = _ran(p, m)
        elif not _fits(p, capacity_gb):
            out[cell] = not_run([p], capacity_gb)[cell]
        elif question == "largest":
            out[cell] = f"not run: predicted to fit ({p.memory_gb:.1f} GB), below the largest that does"
        elif p.tok_s is None:
            out[cell] = f"not run: no prediction ({p.why_not or 'no reason given'})"
        elif winner is None:
            out[cell] = f"not run: predicted {_rate(p)} real tok/s; nothing ran ok to compare it with"
        else:
            factor = factors.get(p.family, 1.0)
            verdict = "could still reach" if _reaches(p, factor, winner) else "<"
            out[cell] = (f"not run: predicted {_rate(p)} real tok/s, calibrated {_rate(p, factor)} "
                         f"{verdict} the winner's {_rate(winner)}")
            if cell in under:  # the winner saturated memory: this cell was weighed against the fastest that didn't
                out[cell] += (f", {'could still reach' if _reaches(p, factor, fit) else '<'} the fastest "
                              f"unsaturated one's {_rate(fit)}")
    return out
