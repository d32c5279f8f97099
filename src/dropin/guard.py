"""Nothing of trainsweep's may raise into a user's training. Every part of it that runs inside their Trainer runs
through a Guard: an error turns that part off with one line naming it, the report lists it as not run, and the
Trainer goes on as it would have without trainsweep (nothing of ours changes what it computes, so that is bit
for bit).

KeyboardInterrupt and SystemExit pass through: they are the user's, not ours.
"""
from __future__ import annotations

import sys


def why(exc: BaseException) -> str:
    """An error in one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


class Guard:
    """The parts that turned themselves off, each with the error that did it."""

    def __init__(self, name: str = "trainsweep"):
        self.name = name
        self.off: dict[str, str] = {}

    def turn_off(self, part: str, exc: BaseException) -> None:
        if part in self.off:
            return
        self.off[part] = why(exc)
        print(f"{self.name}: {part} turned itself off ({self.off[part]}); your training goes on as without it",
              file=sys.stderr, flush=True)

    def run(self, part: str, fn, *args, default=None, **kwargs):
        """fn(*args, **kwargs), or `default` once `part` is off or if it raises (which turns it off)."""
        if part in self.off:
            return default
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            self.turn_off(part, exc)
            return default

    def is_on(self, part: str) -> bool:
        return part not in self.off
