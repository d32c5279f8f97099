"""A run's report on disk: report.json and report.md, written atomically; read back, typed, by the sweep
launcher, the batch search and a rerun that skips finished work. Also what decides "finished" (a result of
the same config, code and data) and the lock that keeps a second writer out of a run directory."""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import subprocess
from pathlib import Path

from ..base.files import Busy, atomic_write, content_hash, lock
from ..config.errors import ConfigError
from ..config.run_dir import check as check_run_dir  # noqa: F401  (src/run.py, tests)
from ..config.schema import HOW_NOT_WHAT
from .document import Report, summary_rows

# Results, which a rerun keeps. error, config_error and failed_checks run again (a fix may be what changed),
# and so does a directory whose process died before writing a report.
FINISHED = ("ok", "oom")
BUSY_EXIT = 75  # sysexits' EX_TEMPFAIL: another run holds the directory; try again when it is done


def read(path: Path) -> Report | None:
    try:
        return Report.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, TypeError):
        return None


@functools.lru_cache(maxsize=1)
def code_version() -> str | None:
    """The git commit of this code ("+dirty" with uncommitted changes to tracked files); installed from a wheel,
    the package's version (site-packages may sit inside someone else's git checkout); else None."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        from importlib import metadata

        try:
            return "trainsweep " + metadata.version("trainsweep")
        except metadata.PackageNotFoundError:
            return None
    try:
        def git(*args):
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()
        commit = git("rev-parse", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return None


def config_hash(cfg) -> str:
    """What a finished report must match to be skipped: the resolved config (a DictConfig; a `hydra` node and
    HOW_NOT_WHAT keys left out) and the code version. The launcher and the job compute it alike."""
    from omegaconf import OmegaConf

    cfg = cfg.copy()
    OmegaConf.set_readonly(cfg, False)
    OmegaConf.set_struct(cfg, False)
    for key in ("hydra", *HOW_NOT_WHAT):
        cfg.pop(key, None)
    text = json.dumps([OmegaConf.to_container(cfg, resolve=True), code_version()], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def data_fingerprint(cfg) -> str | None:
    """The content of the files a run reads (data=files), hashed: a file changed, replaced or re-pointed by a
    symlink after a run finished makes it run again. None for synthetic rows, which the config makes."""
    d = cfg.data
    if d.source != "files":
        return None
    parts = []
    for key in ("train_file", "eval_file"):
        path = d[key]
        if not path:
            continue
        try:
            parts.append(content_hash(path) if os.path.isfile(path) else f"missing:{path}")  # loading says it's missing
        except OSError as exc:  # permission denied, an I/O error: the run can't read it either; one line, exit 2
            raise ConfigError(f"data.{key}", path, f"can't be read ({exc.strerror or exc}): give a file this "
                                                   "user can read") from None
    return hashlib.sha256("+".join(parts).encode()).hexdigest()[:16]


def finished(out_dir: Path, config_hash: str, fingerprint: str | None = None) -> tuple[Report | None, str]:
    """(the report, "") when this directory holds a finished run of this config, code and data, else (None, why
    it runs: "" when there is no report at all)."""
    path = Path(out_dir) / "report.json"
    report = read(path)
    if report is None:
        return None, ("its report.json is unreadable" if path.exists() else "")
    if report.status not in FINISHED:
        return None, f"its earlier run ended {report.status}"
    if report.get("config_hash") != config_hash:
        return None, "its config or code changed since its report"
    if report.get("data_fingerprint") != fingerprint:
        return None, "its data files changed since its report"
    return report, ""


def record_failure(out_dir: Path, overrides: list[str], exc: BaseException, config: dict,
                   config_hash: str | None = None) -> Report:
    """A report for a job whose process died before writing its own; nothing is written while another
    process holds the directory (its report is its own)."""
    report = Report(status="error", error=f"the job's process failed: {type(exc).__name__}: {exc}"[:2000],
                    overrides=overrides, config=config, config_hash=config_hash)
    try:
        with lock(out_dir):
            write(Path(out_dir), report)
    except Busy:
        pass
    return report


def finite(tree):
    """The tree with every nan or infinite float as None: Python's json writes them as bare NaN and Infinity,
    which strict parsers (JSON.parse, jq, most languages' readers) refuse. A diverged run's loss curve holds them."""
    if isinstance(tree, float):
        return tree if math.isfinite(tree) else None
    if isinstance(tree, dict):
        return {k: finite(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [finite(v) for v in tree]
    return tree


def write(out_dir: Path, report: Report) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / "report.json", json.dumps(finite(report.to_dict()), indent=2, default=str, allow_nan=False))
    md = ["# trainsweep run", "", f"`{out_dir}`", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v.replace('|', '/')} |" for k, v in summary_rows(report)]
    atomic_write(out_dir / "report.md", "\n".join(md) + "\n")
