"""Files a reader can trust: written whole or not at all, a directory held by one writer at a time, where the
caches live, and a file's content hash (what a cache or a finished run is keyed by, never its name or mtime)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from contextlib import contextmanager
from pathlib import Path

# tokenised data, tokenizers, compiled kernels; an empty TRAINSWEEP_CACHE is unset (Path("") is the working
# directory, which filled with cache entries)
CACHE = Path(os.environ.get("TRAINSWEEP_CACHE") or "outputs/cache")
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
    """Hold the run directory against a second writer (Busy, at once, if another holds it). A POSIX record lock
    (lockf): the kernel drops it when its holder dies however it dies, and a child the holder forks (a
    tokenising pool, a DataLoader worker) does not inherit it, so no orphan keeps the directory (an flock is
    shared with every forked child and lived on in pool workers a kill -9 left behind). A process holds it once:
    opening and closing the file again in the holder would release it, so nothing else here opens it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    f = open(out_dir / LOCK, "a+")
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # EACCES or EAGAIN: held elsewhere
        f.seek(0)
        holder = f.read().strip() or "?"
        f.close()
        raise Busy(f"{out_dir} is in use by another run (pid {holder}); it was left alone") from None
    try:
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        remove_stale_temporaries(out_dir)
        yield
    finally:
        f.close()  # releases the lock


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """atomic_write's `.NAME.PID.tmp` files whose writer is gone (a kill mid-write leaves one behind)."""
    gone = []
    for tmp in Path(directory).glob(".*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            gone.append(tmp)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def locked(out_dir: Path) -> bool:
    """Whether another process holds the directory now (the launcher asks before starting a job there)."""
    try:
        with lock(out_dir):
            return False
    except Busy:
        return True


def _hasher():
    try:
        import xxhash

        return xxhash.xxh3_128()  # several GB/s
    except ImportError:
        return hashlib.blake2b(digest_size=16)


def content_hash(path: str) -> str:
    """A fast hash of the file's bytes, streamed. Remembered under CACHE/hashes by path, size, mtime, ctime and
    inode, so an unchanged file is not read again: `cp -p` (or rsync -t) of other rows keeps the mtime, and
    maybe the size, but the kernel sets ctime on every write and no tool can set it back."""
    st = os.stat(path)
    full = os.path.abspath(path)
    key = [full, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    memo = CACHE / "hashes" / (hashlib.blake2b(full.encode(), digest_size=8).hexdigest() + ".json")
    try:
        saved = json.loads(memo.read_text())
        if saved["key"] == key:
            return saved["hash"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    h = _hasher()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(memo, json.dumps({"key": key, "hash": digest}))
    except OSError:  # a read-only cache: the hash is still right, only read again next time (the run says why)
        pass
    return digest


def remembered(kind: str, key: str, compute, usable=lambda value: True):
    """compute()'s JSON value, kept under CACHE/kind/key.json: (the value, the file it was read from, or None when
    compute() ran). An unreadable or unusable entry is computed again; a cache that can't be written costs the
    next run the work, never this one."""
    path = CACHE / kind / f"{key}.json"
    try:
        value = json.loads(path.read_text())
        if usable(value):
            return value, path
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(value))
    except OSError as exc:
        logging.getLogger(__name__).warning("%s not kept for the next run (%s): %s", kind, path, exc)
    return value, None


def cache_problem() -> str | None:
    """Why CACHE can't take a run's entries (read-only, a file in its path, no space), or None. Asked before a
    run builds anything: a tokenised dataset's write failing minutes in was a traceback."""
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        probe = CACHE / f".probe.{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
