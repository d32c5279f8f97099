"""sweep.plan=predict: which cells of a sweep to run, decided from predictions made before anything runs.

The one concern is the decision; sweep.py runs the waves. The first wave runs the predicted leaders,
the fastest cell of each family (to calibrate that family) and every cell whose interval overlaps the
leader's, and the largest micro-batch of each family predicted to fit (to confirm it fits). After each wave
every prediction is scaled by its family's measured/predicted ratio, and any cell that could still beat the
measured winner runs next, as does the next largest micro-batch where the largest ran out of memory; none
left means the winner and the largest fit are confirmed. Where the winner saturated memory, the summary's
answer is the fastest cell that did not, so the cells predicted to use less memory than every saturated one
are weighed against that cell too (the fastest of them runs where none has yet). A sweep that asks one
question (sweep.question) runs only that question's cells: `largest` the largest fit of each family (and the
next down where it ran out of memory), `fastest` all but the largest-fit confirmation, and of the leaders only
the first (the fewest runs that confirm the winner; the top 3 otherwise). Stdlib only, so importing it costs
nothing; the line kept for each cell that did or did not run is decisions.py's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import Iterable


def _check_rate(cell: str, tok_s: float | None, low: float | None, high: float | None) -> None:
    if tok_s is not None and not tok_s > 0:  # `not >` also catches NaN
        raise ValueError(f"cell {cell!r}: tok/s must be positive, got {tok_s}")
    if (low is None) != (high is None) or (low is not None and tok_s is None):
        raise ValueError(f"cell {cell!r}: an interval needs tok/s and both bounds, got {tok_s} ({low}-{high})")
    if low is not None and not 0 <= low <= high:
        raise ValueError(f"cell {cell!r}: interval low {low} > high {high}, or below 0")
    if low is not None and not low <= tok_s <= high:
        raise ValueError(f"cell {cell!r}: tok/s {tok_s} lies outside its own interval ({low}-{high})")


@dataclass(frozen=True)
class Prediction:
    cell: str                    # the job's key (its directory name)
    family: str                  # the cell's settings other than micro-batch, grad accumulation, token budget
    memory_gb: float | None      # None: no prediction
    tok_s: float | None          # predicted real tokens/s; None: no prediction
    low: float | None = None     # its 95% interval
    high: float | None = None
    why_not: str | None = None   # why there is no prediction (e.g. "no GPU")
    size: int | None = None      # the micro-batch (rows, or a pack's tokens): the largest that fits is confirmed
    over_card: str | None = None  # why it can't fit at any cap (its small copy alone ran out of memory)

    def __post_init__(self):
        if self.memory_gb is not None and not self.memory_gb >= 0:
            raise ValueError(f"cell {self.cell!r}: predicted memory must be >= 0 GB, got {self.memory_gb}")
        _check_rate(self.cell, self.tok_s, self.low, self.high)


@dataclass(frozen=True)
class Measured:
    cell: str
    status: str                  # "ok" | "oom" | "error" | ...
    tok_s: float | None = None
    low: float | None = None
    high: float | None = None
    saturated: bool = False      # memory saturated (reserved near the cap, allocator retries): one batch from OOM

    def __post_init__(self):
        _check_rate(self.cell, self.tok_s, self.low, self.high)


def _by_cell(items: Iterable) -> dict:
    out = {}
    for item in items:
        if item.cell in out:  # two answers for one job: whichever we kept would be a guess
            raise ValueError(f"cell {item.cell!r} appears twice")
        out[item.cell] = item
    return out


def _bounds(x: Prediction | Measured, factor: float = 1.0) -> tuple[float, float, float]:
    low, high = (x.tok_s, x.tok_s) if x.low is None else (x.low, x.high)
    return x.tok_s * factor, low * factor, high * factor


def _fits(p: Prediction, capacity_gb: float | None) -> bool:
    return not p.over_card and (capacity_gb is None or p.memory_gb is None or p.memory_gb <= capacity_gb)


def _in_order(preds: Iterable[Prediction], factors: dict[str, float] | None = None) -> list[Prediction]:
    """Fastest (calibrated) first; cells without a prediction last, in the order given: they can't be ranked."""
    preds = list(preds)
    ranked = sorted((p for p in preds if p.tok_s is not None),
                    key=lambda p: -p.tok_s * (factors or {}).get(p.family, 1.0))
    return ranked + [p for p in preds if p.tok_s is None]


def _winner(measured: dict[str, Measured], unsaturated: bool = False) -> Measured | None:
    ok = [m for m in measured.values()
          if m.status == "ok" and m.tok_s is not None and not (unsaturated and m.saturated)]
    return max(ok, key=lambda m: m.tok_s, default=None)


def _under_saturation(preds: dict[str, Prediction], measured: dict[str, Measured]) -> list[Prediction]:
    """The cells predicted to use less memory than every cell that saturated memory when it ran: the ones that
    may not saturate it. The summary's answer is the fastest of those where the fastest of all saturated."""
    line = min((preds[m.cell].memory_gb for m in measured.values()
                if m.saturated and m.cell in preds and preds[m.cell].memory_gb is not None), default=None)
    return [] if line is None else [p for p in preds.values() if p.memory_gb is not None and p.memory_gb < line]


def _reaches(p: Prediction, factor: float, target: Measured) -> bool:
    """Whether p's calibrated interval reaches up to the target's measured one: p could still be as fast."""
    return _bounds(p, factor)[2] >= _bounds(target)[1]


def largest_fits(preds: Iterable[Prediction], measured: Iterable[Measured], capacity_gb: float | None) -> dict[str, str]:
    """Per family, the cell with the largest micro-batch predicted to fit that has not run out of memory: the
    answer to 'what is the largest micro-batch this card takes', once it has run."""
    measured = _by_cell(measured)
    out: dict[str, Prediction] = {}
    for p in _by_cell(preds).values():
        if p.size is None or p.memory_gb is None or not _fits(p, capacity_gb):
            continue
        if p.cell in measured and measured[p.cell].status == "oom":  # predicted to fit, didn't: the next one down
            continue
        if p.family not in out or p.size > out[p.family].size:
            out[p.family] = p
    return {family: p.cell for family, p in out.items()}


def leaders(top: int | None, question: str) -> int:
    """How many predicted leaders the first wave runs: `top` where given, else 3, or 1 for `fastest` asked alone,
    which is confirmed by the fewest runs: the leader, each family's fastest and whatever overlaps the leader;
    after them the calibrated order runs anything that could still win (next_wave)."""
    return top if top is not None else 1 if question == "fastest" else 3


def first_wave(preds: Iterable[Prediction], capacity_gb: float | None, top: int | None = None,
               question: str = "both") -> list[str]:
    """The cells to run first. `largest`: each family's largest micro-batch predicted to fit, and any cell without
    a memory prediction; `fastest`: the leaders, each family's fastest and whatever overlaps the leader; `both`."""
    top = leaders(top, question)
    preds = [p for p in _by_cell(preds).values() if _fits(p, capacity_gb)]
    largest = set(largest_fits(preds, [], capacity_gb).values()) if question != "fastest" else set()
    if question == "largest":
        return [p.cell for p in preds if p.cell in largest or p.memory_gb is None]
    ordered = _in_order(preds)
    ranked = [p for p in ordered if p.tok_s is not None]
    chosen = {p.cell for p in ranked[:top]} | {p.cell for p in ordered if p.tok_s is None} | largest
    for family in {p.family for p in ranked}:  # ranked is fastest first, so the first of a family is its fastest
        chosen.add(next(p.cell for p in ranked if p.family == family))
    if ranked:  # a cell whose interval overlaps the leader's might be the real leader
        leader_low = _bounds(ranked[0])[1]
        chosen |= {p.cell for p in ranked if _bounds(p)[2] >= leader_low}
    return [p.cell for p in ordered if p.cell in chosen]


def prediction_error(pred: Prediction, meas: Measured) -> float | None:
    if pred.cell != meas.cell:
        raise ValueError(f"a prediction for {pred.cell!r} compared with a measurement of {meas.cell!r}")
    if meas.status != "ok" or meas.tok_s is None or pred.tok_s is None:
        return None
    return meas.tok_s / pred.tok_s - 1


def calibration(preds: Iterable[Prediction], measured: Iterable[Measured]) -> dict[str, float]:
    preds, measured = _by_cell(preds), _by_cell(measured)
    logs: dict[str, list[float]] = {}  # ratios are multiplicative, so they average as logs
    for p in preds.values():
        error = prediction_error(p, measured[p.cell]) if p.cell in measured else None
        if error is not None:
            logs.setdefault(p.family, []).append(math.log1p(error))
    if not logs:
        return {}
    overall = math.exp(fmean(x for family in logs.values() for x in family))
    return {p.family: math.exp(fmean(logs[p.family])) if p.family in logs else overall for p in preds.values()}


def next_wave(preds: Iterable[Prediction], measured: Iterable[Measured], capacity_gb: float | None,
              top: int | None = None, question: str = "both") -> list[str]:
    top = leaders(top, question)
    preds, measured = _by_cell(preds), _by_cell(measured)
    waiting = [p for p in preds.values() if p.cell not in measured and _fits(p, capacity_gb)]
    unconfirmed = set() if question == "fastest" else \
        set(largest_fits(preds.values(), measured.values(), capacity_gb).values()) - set(measured)
    if question == "largest":  # the next largest down where the largest ran out of memory, and nothing else
        return sorted(unconfirmed)
    winner = _winner(measured)
    if winner is None:  # nothing to compare with yet (all oom or failed): keep going down the predicted order
        return list(dict.fromkeys([p.cell for p in _in_order(waiting)][:top] + sorted(unconfirmed)))
    factors = calibration(preds.values(), measured.values())

    def reaches(p: Prediction, target: Measured) -> bool:
        return _reaches(p, factors.get(p.family, 1.0), target)

    could_win = [p for p in waiting if p.tok_s is None or reaches(p, winner)]
    if winner.saturated:  # the summary then names the fastest that did not saturate memory: confirm it too
        under = {p.cell for p in _under_saturation(preds, measured)}
        candidates = [p for p in _in_order(waiting, factors) if p.cell in under and p.tok_s is not None]
        fit = _winner(measured, unsaturated=True)
        could_win += candidates[:1] if fit is None else [p for p in candidates if reaches(p, fit)]
    could_win = list({p.cell: p for p in could_win}.values())
    return [p.cell for p in _in_order(could_win, factors)] + sorted(unconfirmed - {p.cell for p in could_win})
