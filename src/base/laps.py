"""Where a run's build time goes: seconds between named marks, summed per name (timing_s.build_parts).

The build (data, model, probe, checks) is most of the time to the first step on a warm compile cache, so the
report splits it; a few perf_counter reads, nothing that waits for the GPU."""
from __future__ import annotations

import time

# perf_counter when the command line's module began (src/run.py sets it, first thing): the imports before a run's
# build are not the run's, but a user waits for them in every job (timing_s.imports)
PROCESS_START: float | None = None


def imports_before(build_start: float) -> dict:
    """{"imports": seconds from PROCESS_START to the build's start}, once: a later run in the same process imported
    nothing, and a run that did not start from the command line (a test's run()) has no such figure."""
    global PROCESS_START
    started, PROCESS_START = PROCESS_START, None
    return {} if started is None else {"imports": build_start - started}


class Laps:
    def __init__(self, start: float | None = None, clock=time.perf_counter):
        self._clock = clock
        self._last = clock() if start is None else start
        self.parts: dict[str, float] = {}

    def lap(self, name: str) -> None:
        """The time since the previous mark is `name`'s (added, when a name recurs)."""
        now = self._clock()
        self.parts[name] = self.parts.get(name, 0.0) + (now - self._last)
        self._last = now
