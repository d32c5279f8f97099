"""When to stop timing: once the mean step time is known to a relative error (measure.stop_when_stable)."""
from __future__ import annotations

from ..base import stats


class StopRule:
    """The mean step time is known well enough once its 95% batch-means interval (src/base/stats.py: steps are
    autocorrelated, so stdev/sqrt(n) would stop far too early) is within `rel_error` of it either side, over
    at least `min_steps` timed steps."""

    GROWTH = 0.02  # the interval is read again once the timed steps grew by 2%, not after every step

    def __init__(self, rel_error: float, min_steps: int):
        self.rel_error, self.min_steps = rel_error, min_steps
        self._next = 0  # the step count at which to read the interval next

    def met(self, times: list[float]) -> bool:
        # Reading the interval costs the host O(n) (0.6 ms at 5,000 steps), between two steps of the run it times:
        # after every step that would grow with the run; every 2% more steps it stays a few microseconds a step,
        # and the window ends at most 2% of its steps after the mean settled.
        n = len(times)
        if n < max(self.min_steps, self._next):
            return False
        self._next = n + max(1, int(n * self.GROWTH))
        ci = stats.batch_means(times)
        return ci is not None and ci.half_width < self.rel_error
