"""Read a W&B offline run back from disk through wandb's own reader, `wandb leet inspect` (wandb 0.31+):
`--json` prints the run's records (its run record: group, name, tags, job type, config; one line per
history row), `--summary --json` the run's final state as wandb computes it. The transaction log's binary
format stays wandb's business, so an upgrade that changes it cannot silently break these tests; a wandb
without the reader skips them, saying so."""
import json
import subprocess
import sys
from pathlib import Path

WANDB = [sys.executable, "-m", "wandb"]  # the CLI of the wandb this interpreter imports


def _reader_missing() -> str | None:
    """Why the tests can't read an offline run, or None when `wandb leet inspect` is there."""
    try:
        proc = subprocess.run([*WANDB, "leet", "inspect", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the wandb CLI did not answer: {exc}"
    if proc.returncode != 0 or "--summary" not in proc.stdout:
        import wandb

        return f"wandb {wandb.__version__} has no `wandb leet inspect --summary --json` (its offline-run reader, 0.31+)"
    return None


READER_MISSING = _reader_missing()


def _inspect(run_dir: Path, *flags: str) -> str:
    proc = subprocess.run([*WANDB, "leet", "inspect", *flags, "--json", str(run_dir)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"wandb leet inspect {' '.join(flags)} {run_dir}: {proc.stderr[-2000:]}"
    return proc.stdout


def read_run(run_dir: Path) -> dict:
    """{'group', 'name', 'tags', 'job_type', 'config': {key: value}, 'summary': {key: value}, 'history': [rows]}.
    Values are decoded JSON; nested summary values (a table's or an image's fields) are nested dicts."""
    records = [json.loads(line) for line in _inspect(run_dir).splitlines() if line.strip()]
    [run] = [r["run"] for r in records if r["type"] == "run"]
    state = json.loads(_inspect(run_dir, "--summary"))
    return {"group": run.get("run_group", ""), "name": run.get("display_name", ""), "tags": run.get("tags", []),
            "job_type": run.get("job_type", ""), "config": state["config"], "summary": state["summary"],
            "history": [r["history"]["item"] for r in records if r["type"] == "history"]}


def offline_runs(root: Path) -> list[Path]:
    return sorted(Path(root).glob("wandb/offline-run-*"))
