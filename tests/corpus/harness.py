"""Run a corpus script in a process of its own, fast, and read back what its Trainers logged.

Importing torch, transformers, datasets, peft and TRL takes 6-15 s a process on CI's two cores, and the corpus
runs ~80 processes. So a fork server (`python harness.py serve`, started once per test module) imports them once,
runs no torch op, and forks a fresh child per run: the child sets argv, cwd and environment, attaches trainsweep as
the launcher's sitecustomize would (src/dropin/hook.py: `measure`, `speedup` or both, or nothing for the plain
run), wraps Trainer.train with a recorder of its own (outermost), and runs the script with runpy. Each child is
its own process: nothing of one run leaks into the next.

The recorder (test code, no part of trainsweep) writes one JSON line per finished train(): the Trainer's class,
its log_history, its last step, and, counted step by step from what training_step receives, the rows, attended
tokens and scored labels of every training micro-batch (the independent count a report's figures are held to).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    records: list = field(default_factory=list)

    @property
    def losses(self) -> list[float]:
        return [e["loss"] for e in self.records[0]["log_history"] if "loss" in e] if self.records else []


class Server:
    """The fork server's parent end: one request a run, answered with the child's exit status."""

    def __init__(self):
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, __file__, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=ROOT)
        assert self.proc.stdout.readline().strip() == "ready"

    def run(self, script: Path, args: list[str], modes=frozenset(), workdir: Path | None = None, timeout: float = 180,
            speedup_args: dict | None = None) -> Result:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        files = {k: workdir / f"{k}.txt" for k in ("stdout", "stderr", "record")}
        files["record"].unlink(missing_ok=True)
        request = {"script": str(script), "args": [str(a) for a in args], "modes": sorted(modes), "cwd": str(workdir),
                   "timeout": timeout, "speedup": speedup_args or {}, **{k: str(v) for k, v in files.items()}}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        code = json.loads(self.proc.stdout.readline())["returncode"]
        records = [json.loads(x) for x in files["record"].read_text().splitlines()] if files["record"].exists() else []
        return Result(code, files["stdout"].read_text(), files["stderr"].read_text(), records)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run_subprocess(script: Path, args: list[str], workdir: Path, launcher: list[str] | None = None,
                   timeout: float = 300) -> subprocess.CompletedProcess:
    """A genuinely fresh interpreter: `python script ARGS`, or behind a launcher (`python -m src.run measure --`)."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    command = [*(launcher or []), sys.executable, str(script), *map(str, args)]
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


# -- the server and its children -------------------------------------------------------------------
def _record(path: str):
    """Wrap Trainer.train: after each train(), one JSON line with the log and the recorder's own counts."""
    import transformers
    from transformers import TrainerCallback

    original = transformers.Trainer.train

    class Steps(TrainerCallback):
        step = 0

        def on_step_begin(self, args, state, control, **kw):
            self.step = state.global_step + 1

    def train(self, *args, **kwargs):
        steps, counts = Steps(), {}
        self.add_callback(steps)
        step_fn = self.training_step

        def training_step(model, kw, *rest, **more):  # the micro-batch as the Trainer hands it over, labels included
            if steps.step and "input_ids" in kw:
                ids, mask, labels = kw["input_ids"], kw.get("attention_mask"), kw.get("labels")
                c = counts.setdefault(steps.step, {"rows": 0, "real": 0, "scored": 0, "scored_shifted": 0})
                positions = kw.get("position_ids")
                if mask is None and positions is not None and ids.shape[0] == 1:  # padding-free: a row of sequences
                    c["rows"] += int((positions == 0).sum())
                else:
                    c["rows"] += int(ids.shape[0])
                c["real"] += int(mask.sum()) if mask is not None else int(ids.numel())
                if labels is not None and labels.dim() > 1 and not labels.is_floating_point():
                    c["scored"] += int((labels != -100).sum())
                    c["scored_shifted"] += int((labels[..., 1:] != -100).sum())
                elif labels is not None:
                    c["scored"] += int(labels.shape[0])
            return step_fn(model, kw, *rest, **more)

        self.training_step = training_step
        try:
            return original(self, *args, **kwargs)
        finally:
            del self.training_step
            line = {"trainer": type(self).__name__, "log_history": self.state.log_history,
                    "global_step": self.state.global_step, "counts": counts,
                    "grad_accum": self.args.gradient_accumulation_steps}
            with open(path, "a") as f:
                f.write(json.dumps(line, default=str) + "\n")

    transformers.Trainer.train = train


def _child(req: dict) -> None:
    os.chdir(req["cwd"])
    for fd, name in ((1, "stdout"), (2, "stderr")):
        os.dup2(os.open(req[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    code = 0
    try:
        # Every generator seeded alike in every run: a script that loads a checkpoint before any set_seed draws
        # its new head's weights from whatever state the process starts with (the four variants must start equal).
        import random

        import numpy as np
        import torch

        random.seed(0), np.random.seed(0), torch.manual_seed(0)
        if req["modes"]:
            from src.dropin import hook

            hook.install(set(req["modes"]), speedup_args=req["speedup"])
        _record(req["record"])
        import runpy

        sys.argv = [req["script"], *req["args"]]
        sys.path.insert(0, str(Path(req["script"]).parent))
        runpy.run_path(req["script"], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    # The heavy imports, once; no torch op here (a forked child must find no thread pool started).
    import datasets  # noqa: F401
    import peft  # noqa: F401
    import torch  # noqa: F401
    import transformers
    import trl  # noqa: F401
    from transformers import Trainer  # noqa: F401  (transformers.trainer loaded: the children patch it)

    transformers.logging.set_verbosity_error()
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        deadline = time.monotonic() + req["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                code = -9
                break
            time.sleep(0.05)
        print(json.dumps({"returncode": code}), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
