"""The `repeating` sweeper (trainsweep's default): Hydra's basic sweeper, plus `sweep.repeats=N` to run every
job N times, interleaved.

A close call (bs 16 vs bs 8 within a few percent) can't be settled by one run of each: GPU hosts drift by a
few percent over minutes, and a within-run interval doesn't see that. Repeats run in rounds, A B C A B C,
not A A B B C C, so a drift hits every job alike; the summary then ranks each job on the mean of its
repeats with an interval from their spread (src/summary.py). Repeat 0 is the plain job (its directory
unchanged, so a finished sweep gains repeats without recomputing); repeat r > 0 adds the override `repeat=r`.

    python -m src.run -m sweep=padding sweep.repeats=3
"""
from dataclasses import dataclass
from typing import List, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.types import Override


@dataclass
class RepeatingSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.trainsweep.repeating.RepeatingSweeper"
    repeats: int = 1  # each job this many times, in interleaved rounds


ConfigStore.instance().store(group="hydra/sweeper", name="repeating", node=RepeatingSweeperConf, provider="trainsweep")


def rounds(jobs: List[List[str]], repeats: int) -> List[List[str]]:
    """Every job once per round, round after round; repeat r > 0 marked by the override repeat=r."""
    return [job + ([f"repeat={r}"] if r else []) for r in range(repeats) for job in jobs]


class RepeatingSweeper(BasicSweeper):
    def __init__(self, max_batch_size: Optional[int], params: Optional[dict] = None, repeats: int = 1):
        super().__init__(max_batch_size=max_batch_size, params=params)
        if repeats < 1:
            raise ValueError(f"sweep.repeats={repeats}: must be a positive integer")
        self.repeats = repeats

    def split_arguments(self, overrides: List[Override], max_batch_size: Optional[int]) -> List[List[List[str]]]:
        jobs = [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]
        jobs = rounds(jobs, self.repeats)
        size = max_batch_size or len(jobs)
        return [jobs[i:i + size] for i in range(0, len(jobs), size)]
