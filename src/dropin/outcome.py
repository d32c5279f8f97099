"""A report that stays true when train() raises after it was written. attach's report is written at train end, in
its own on_train_end: a callback added after it, or the Trainer's own work after the callbacks, can still raise
out of train(). The report then said `ok` beside a traceback. train() on the attached Trainer passes through a
wrapper that, when it raises after the report, rewrites the report as `error` naming the exception, and raises
the same exception on, untouched. (Under the launcher, hook.py, trainsweep's callback is added at train() and so
comes last: a script's callback that raises in on_train_end stops train() before the report is written.)
"""
from __future__ import annotations

import functools
import sys

from ..report import files as report_files
from .guard import why

RAISED = "train() raised after trainsweep's report"


def mark_raised(callback, exc: BaseException) -> None:
    """Rewrite the report that train end wrote as `ok`: train() raised after it. Nothing where no report was
    written (train() raised before its end) or it already says what went wrong."""
    rep = callback.report
    if rep is None or not callback.ended or rep.get("status") != "ok" or callback.out_dir is None:
        return
    rep.status, rep.error = "error", f"{RAISED}: {why(exc)}"
    if callback.trainer is None or callback.trainer.is_world_process_zero():
        report_files.write(callback.out_dir, rep)
        print(f"trainsweep: {RAISED} ({why(exc)}): {callback.out_dir / 'report.json'} now says so", file=sys.stderr,
              flush=True)


def watch(trainer, callback) -> None:
    """trainer.train, on this Trainer alone, wrapped: an exception out of it marks the report (mark_raised, through
    the callback's guard) and goes on to the caller as it was raised."""
    original = trainer.train

    @functools.wraps(original)
    def train(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except BaseException as exc:
            callback.guard.run("watching train()", mark_raised, callback, exc)
            raise

    trainer.train = train
