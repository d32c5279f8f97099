"""Run one corpus script in a process of its own and read back what its Trainers logged.

    run_script(script, args, modes, workdir, timeout=120) -> Result       # a child forked from a warm server
    run_subprocess(script, args, modes, workdir, timeout=300) -> Result   # `python script.py ARGS`, fresh
    modes: frozenset() plain, {"measure"}, {"speedup"} or both (src/dropin/hook.py installed before the script)

Why a fork server: importing torch, transformers, datasets, peft and TRL costs 6-15 s a process on CI's two
cores, and the corpus runs about 80 processes. A helper process (`python harness.py serve`, one per test process)
imports them once, runs no torch op and starts no thread (a forked child must not inherit a half-held lock), then
forks a child per run. The child sets argv, cwd and environment, draws fresh random states as a new interpreter
would (so a script that forgets to seed is caught as nondeterministic, not falsely repeatable), installs the hook
for `modes`, wraps Trainer.train with the recorder (outermost: it sees the log_history the hook leaves) and runs
the script with runpy. What a fork cannot give back: the heavy packages are imported before the script starts (an
environment variable a script sets before its imports comes too late; corpus scripts set none), and the hash seed
is the server's (PYTHONHASHSEED=0 in both ways of running, so that they agree).

The recorder (test code) appends a JSON line per train() call: {"trainer", "log_history", "global_step"}, or
{"trainer", "error": traceback} if it raised; then the run exits non-zero even if the script swallowed the error.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RECORD_ENV, MODES_ENV = "CORPUS_RECORD", "CORPUS_MODES"
HOOK_FAILED = 87  # the child's exit status when src.dropin.hook could not be imported or installed
PROTOCOL = "@@corpus "  # the server's answers; anything else on its stdout (a library's print) is ignored
# Read by torch, tokenizers and datasets when they are imported, so they go into the server's environment.
QUIET_ENV = {"TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
             "HF_HUB_DISABLE_TELEMETRY": "1", "WANDB_MODE": "disabled", "PYTHONHASHSEED": "0"}


class HookUnavailable(RuntimeError):
    """src/dropin/hook.py could not be imported or installed: the variant cannot run (a test skips it)."""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    records: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def losses(self) -> list[float]:
        """Every recorded train()'s per-step training losses, in order (a script that trains twice, one Trainer or
        two, is held to both)."""
        return [e["loss"] for r in self.records for e in r.get("log_history", []) if "loss" in e]

    def describe(self) -> str:
        return f"exit {self.returncode} after {self.seconds:.1f}s, stderr's tail:\n{self.stderr[-4000:]}"


def _collect(workdir: Path, returncode: int, seconds: float) -> Result:
    if returncode == HOOK_FAILED and (workdir / "hook_error.txt").exists():
        raise HookUnavailable((workdir / "hook_error.txt").read_text())
    record = workdir / "records.jsonl"
    records = [json.loads(x) for x in record.read_text().splitlines() if x.strip()] if record.exists() else []
    read = lambda name: (workdir / name).read_text(errors="replace") if (workdir / name).exists() else ""  # noqa: E731
    return Result(returncode, read("stdout.txt"), read("stderr.txt"), records, seconds)


def _prepare_workdir(workdir: Path) -> Path:
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("records.jsonl", "hook_error.txt", "stdout.txt", "stderr.txt"):
        (workdir / name).unlink(missing_ok=True)
    return workdir


# -- the test's end --------------------------------------------------------------------------------------------
class ForkServer:
    def __init__(self):
        # datasets' cache of its own (read at import, so set for the server): nothing shared with other runs on
        # the machine, nothing left in ~/.cache
        self.cache = tempfile.mkdtemp(prefix="corpus-datasets-")
        env = {**os.environ, **QUIET_ENV, "HF_DATASETS_CACHE": self.cache,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "serve"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._answer().get("ready") is not True:
            raise RuntimeError("the corpus fork server did not start")

    def _answer(self) -> dict:
        for line in filter(lambda line: line.startswith(PROTOCOL), self.proc.stdout):
            return json.loads(line[len(PROTOCOL):])
        raise RuntimeError(f"the corpus fork server died (exit {self.proc.wait()})")

    def run(self, script, args, modes, workdir, timeout: float = 120, env=None) -> Result:
        workdir = _prepare_workdir(workdir)
        request = {"script": str(Path(script).resolve()), "args": [str(a) for a in args], "modes": sorted(modes),
                   "workdir": str(workdir), "timeout": timeout, "env": dict(env or {})}
        started = time.monotonic()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        code = self._answer()["returncode"]
        return _collect(workdir, code, time.monotonic() - started)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.cache, ignore_errors=True)


_server: ForkServer | None = None


def server() -> ForkServer:
    """The process's shared fork server, started on first use (some seconds) and closed at exit."""
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = ForkServer()
        atexit.register(_server.close)
    return _server


def shutdown() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None


def run_script(script: Path, args: list[str], modes: frozenset[str], workdir: Path, timeout: float = 120,
               env: dict | None = None) -> Result:
    """Run `script ARGS` in a child forked from the warm server; raises HookUnavailable if `modes` can't be had."""
    return server().run(script, args, modes, workdir, timeout, env)


def run_subprocess(script: Path, args: list[str], modes: frozenset[str], workdir: Path, timeout: float = 300,
                   env: dict | None = None) -> Result:
    """`python script.py ARGS` in a new interpreter; a generated sitecustomize (chaining any other) does what the
    forked child does before the script: the hook for `modes`, then the recorder."""
    workdir = _prepare_workdir(workdir)
    site = workdir / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport harness\nsys.path.remove({str(HERE)!r})\n"
        "harness._startup()\n")
    child_env = {**os.environ, **QUIET_ENV, "HF_DATASETS_CACHE": str(workdir / "datasets-cache"), **(env or {}),
                 RECORD_ENV: str(workdir / "records.jsonl"), MODES_ENV: ",".join(sorted(modes)),
                 "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    with open(workdir / "stdout.txt", "w") as out, open(workdir / "stderr.txt", "w") as err:
        try:
            code = subprocess.run([sys.executable, str(Path(script).resolve()), *map(str, args)], cwd=workdir,
                                  env=child_env, stdout=out, stderr=err, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = -signal.SIGKILL
    return _collect(workdir, code, time.monotonic() - started)


# -- the child's end (a forked child, or a fresh interpreter through the generated sitecustomize) ---------------
_failed = []  # a train() that raised: the run exits non-zero whatever the script does with the exception


def _install_hook(modes: set[str], workdir: Path) -> None:
    try:
        from src.dropin import hook

        hook.install(set(modes), out_dir=None)
    except Exception:
        import traceback

        (workdir / "hook_error.txt").write_text(traceback.format_exc())
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        os._exit(HOOK_FAILED)


def _wrap_train(module, record: str) -> None:
    import traceback

    original = module.Trainer.train

    def train(self, *args, **kwargs):
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            _failed.append({"trainer": type(self).__name__, "error": traceback.format_exc()})
            _append(record, _failed[-1])
            raise
        _append(record, {"trainer": type(self).__name__, "log_history": self.state.log_history,
                         "global_step": self.state.global_step})
        return result

    train.__corpus_recorder__ = True
    module.Trainer.train = train


def _append(path: str, line: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(line, default=repr) + "\n")


def _install_recorder(record: str) -> None:
    """Wrap Trainer.train, outside whatever the hook wrapped: now if transformers.trainer is loaded, else right
    after the hook's own wrap when the script imports it (our finder asks the others, theirs included, first)."""
    import importlib.abc
    import importlib.util

    if "transformers.trainer" in sys.modules:
        return _wrap_train(sys.modules["transformers.trainer"], record)

    class Loader(importlib.abc.Loader):
        def __init__(self, inner):
            self.inner, self.create_module = inner, inner.create_module

        def exec_module(self, module):
            self.inner.exec_module(module)
            _wrap_train(module, record)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "transformers.trainer":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.loader is not None:
                spec.loader = Loader(spec.loader)
            return spec

    sys.meta_path.insert(0, Finder())


def _startup() -> None:
    """A fresh interpreter's start (from the generated sitecustomize): chain the sitecustomize we hide, then the
    hook and the recorder."""
    import importlib

    here = os.path.dirname(sys.modules["sitecustomize"].__file__)
    ours, saved = sys.modules.pop("sitecustomize"), list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:], sys.modules["sitecustomize"] = saved, ours
    record = os.environ[RECORD_ENV]
    modes = {m for m in os.environ.get(MODES_ENV, "").split(",") if m}
    if modes:
        _install_hook(modes, Path(record).parent)
    _install_recorder(record)
    atexit.register(_exit_if_train_failed)  # registered first, so it runs last


def _exit_if_train_failed() -> None:
    if _failed:
        sys.stdout.flush(), sys.stderr.flush()
        os._exit(1)


def _child(req: dict) -> None:
    """In the forked child: never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: a timeout kills what it started too (datasets' num_proc workers)
        workdir = Path(req["workdir"])
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            os.dup2(os.open(workdir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.stdout.reconfigure(line_buffering=True), sys.stderr.reconfigure(line_buffering=True)
        os.environ.update({**QUIET_ENV, **req["env"]})
        os.chdir(workdir)
        import random

        import numpy as np
        import torch

        random.seed(), np.random.seed(), torch.seed()  # a new interpreter's states, not the server's
        torch.set_num_threads(1)
        if req["modes"]:
            _install_hook(set(req["modes"]), workdir)
        _install_recorder(str(workdir / "records.jsonl"))
        import runpy

        sys.argv = [req["script"], *req["args"]]
        sys.path.insert(0, os.path.dirname(req["script"]))  # as `python script.py` puts the script's folder first
        try:
            runpy.run_path(req["script"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        if _failed and code == 0:
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush(), sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.02)


def serve() -> None:
    import datasets  # noqa: F401
    import peft  # noqa: F401
    import torch  # noqa: F401
    import transformers.trainer  # noqa: F401  (loaded here: each child wraps its Trainer.train in place)
    import trl  # noqa: F401
    import trl.trainer.sft_trainer  # noqa: F401

    def answer(obj):
        sys.stdout.write(PROTOCOL + json.dumps(obj) + "\n")
        sys.stdout.flush()

    answer({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        sys.stderr.flush()  # nothing buffered for the child to write out again
        pid = os.fork()
        if pid == 0:
            _child(req)
        answer({"returncode": _wait(pid, req["timeout"])})


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
