"""A run's report on disk: report.json and report.md, written atomically; read back, typed, by the sweep
launcher, the batch search and a rerun that skips finished work."""
from __future__ import annotations

import json
import os
from pathlib import Path

from src.report import Report, summary_rows

FINISHED = ("ok", "oom", "error", "config_error", "failed_checks")


def read(path: Path) -> Report | None:
    try:
        return Report.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def finished(out_dir: Path) -> Report | None:
    """The report of a run that already finished in this directory (ok or failed), else None."""
    report = read(Path(out_dir) / "report.json")
    return report if report is not None and report.status in FINISHED else None


def record_failure(out_dir: Path, overrides: list[str], exc: BaseException, config: dict) -> Report:
    """A report for a job whose process died before writing its own."""
    report = Report(status="error", error=f"the job's process failed: {type(exc).__name__}: {exc}"[:2000],
                    overrides=overrides, config=config)
    write(Path(out_dir), report)
    return report


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # a reader never sees half a file
    tmp.write_text(text)
    tmp.replace(path)


def write(out_dir: Path, report: Report) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(out_dir / "report.json", json.dumps(report.to_dict(), indent=2, default=str))
    md = ["# trainsweep run", "", f"`{out_dir}`", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v.replace('|', '/')} |" for k, v in summary_rows(report)]
    _atomic_write(out_dir / "report.md", "\n".join(md) + "\n")

