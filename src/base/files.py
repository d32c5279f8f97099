"""Files a reader can trust: written whole or not at all, a directory held by one writer at a time, and
where the caches live."""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

CACHE = Path(os.environ.get("TRAINSWEEP_CACHE", "outputs/cache"))  # tokenised data, tokenizers, compiled kernels
LOCK = "run.lock"  # held while a process writes the directory (its pid inside, for the refusal's message)


def atomic_write(path: Path, text: str) -> None:
    """Write a file a reader trusts: it sees the old file or the whole new one, never a part (a full disk
    or a kill mid-write leaves the old file and no temporary behind)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # the data is on disk before the name points at it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class Busy(Exception):
    """Another process holds the run directory's lock."""


@contextmanager
def lock(out_dir: Path):
    """Hold the run directory against a second writer (Busy, at once, if another holds it). An flock: the
    kernel drops it when its holder dies however it dies, so a killed run never leaves the directory stuck."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    f = open(out_dir / LOCK, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "?"
        f.close()
        raise Busy(f"{out_dir} is in use by another run (pid {holder}); it was left alone") from None
    try:
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield
    finally:
        f.close()  # releases the lock


def locked(out_dir: Path) -> bool:
    """Whether another process holds the directory now (the launcher asks before starting a job there)."""
    try:
        with lock(out_dir):
            return False
    except Busy:
        return True
