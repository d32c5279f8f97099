"""The scan behind tests/test_crosscall.py: build every table with each number read from a result row tagged with
its row's device call, and note every division of two numbers whose calls differ. A builder that divides by hand
(a mean of one call's runs over a mean of another's) is caught without its cooperation; figures.ratio/quotient
take their ratios inside allowed(), after figures.check has refused or labelled them.

Off unless a test turns it on (TRACING): the tables are built from plain floats.
"""
from __future__ import annotations

import statistics
import traceback
from contextlib import contextmanager

TRACING = False
UNLABELLED: list[str] = []  # divisions across calls outside figures.check: where, and which calls
NOTES: list[tuple[frozenset, bool]] = []  # figures.check's: the calls of each ratio, and whether it crossed
_allowed = 0


def _calls(x) -> frozenset:
    return x.calls if isinstance(x, Tagged) else frozenset()


class Tagged(float):
    """A float that remembers the calls it was computed from; arithmetic keeps them (union)."""

    def __new__(cls, value: float, calls: frozenset):
        self = super().__new__(cls, value)
        self.calls = calls
        return self

    def _op(self, other, result):
        return Tagged(result, self.calls | _calls(other)) if result is not NotImplemented else result

    def __add__(self, o): return self._op(o, float.__add__(self, o))  # noqa: E704
    def __radd__(self, o): return self._op(o, float.__radd__(self, o))  # noqa: E704
    def __sub__(self, o): return self._op(o, float.__sub__(self, o))  # noqa: E704
    def __rsub__(self, o): return self._op(o, float.__rsub__(self, o))  # noqa: E704
    def __mul__(self, o): return self._op(o, float.__mul__(self, o))  # noqa: E704
    def __rmul__(self, o): return self._op(o, float.__rmul__(self, o))  # noqa: E704
    def __neg__(self): return Tagged(-float(self), self.calls)  # noqa: E704
    def __abs__(self): return Tagged(abs(float(self)), self.calls)  # noqa: E704

    def __truediv__(self, o):
        _divides(self.calls, _calls(o))
        return self._op(o, float.__truediv__(self, o))

    def __rtruediv__(self, o):
        _divides(_calls(o), self.calls)
        return self._op(o, float.__rtruediv__(self, o))


def _divides(a: frozenset, b: frozenset) -> None:
    if a and b and (a != b or len(a) > 1) and not _allowed:
        where = traceback.extract_stack()[-3]
        UNLABELLED.append(f"{where.name} ({where.filename.split('experiments/')[-1]}:{where.lineno}): "
                          f"{'+'.join(sorted(a))} / {'+'.join(sorted(b))}")


def tag(value, call: str):
    """A copy of a result row with each float tagged with `call` (ints, strings and bools as they are)."""
    if type(value) is float:
        return Tagged(value, frozenset({call}))
    if isinstance(value, dict):
        return {k: tag(v, call) for k, v in value.items()}
    if isinstance(value, list):
        return [tag(v, call) for v in value]
    return value


def _pooled(fn):
    """statistics' fmean/median, keeping the calls of what they pool (they return plain floats)."""
    def wrapped(xs, *args, **kwargs):
        xs = list(xs)
        calls = frozenset().union(*map(_calls, xs))
        value = fn([float(x) for x in xs], *args, **kwargs)
        return Tagged(value, calls) if calls else value
    return wrapped


fmean, median = _pooled(statistics.fmean), _pooled(statistics.median)


@contextmanager
def allowed():
    """Divisions inside are ratios figures.check has already passed (refused across calls, or labelled)."""
    global _allowed
    _allowed += 1
    try:
        yield
    finally:
        _allowed -= 1


def declared(value, calls: str | set) -> None:
    """figures.quotient/over are told each side's calls: a side computed from rows of other calls is noted (a
    builder that pools two calls and names one)."""
    calls = {calls} if isinstance(calls, str) else set(calls)
    if _calls(value) - calls:
        where = traceback.extract_stack()[-3]
        UNLABELLED.append(f"{where.name} ({where.filename.split('experiments/')[-1]}:{where.lineno}): "
                          f"{'+'.join(sorted(_calls(value)))} given as {'+'.join(sorted(calls))}")


def note(calls: set, crosses: bool) -> None:
    if TRACING:
        NOTES.append((frozenset(calls), crosses))
