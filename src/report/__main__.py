"""python -m src.report DIR: a run directory's summary, or a sweep directory's ranked table and plots;
python -m src.report REPORTS.jsonl: the same table and plots beside a file of collected reports;
... baseline=debug=none: each job also stated against that one (a sweep's `baseline` key, given afterwards)."""
import sys
from pathlib import Path

from .document import format_summary
from .files import read
from .summary import write as write_summary

target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
extra = sys.argv[2:]
if (target is None or not (target.is_dir() or target.suffix == ".jsonl" and target.is_file())
        or len(extra) > 1 or extra and not extra[0].startswith("baseline=")):
    print("usage: python -m src.report RUN_OR_SWEEP_DIR | REPORTS.jsonl [baseline=KEY=VALUE]", file=sys.stderr)
    sys.exit(2)
if (target / "report.json").exists():
    print(format_summary(read(target / "report.json")))
else:
    print(write_summary(target, baseline=extra[0].split("=", 1)[1] if extra else None))
