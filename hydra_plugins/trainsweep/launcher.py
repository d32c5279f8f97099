"""The `isolated` launcher: hydra-submitit-launcher's submitit_local, one job at a time.

Each job runs in its own process, so memory peaks, the CUDA context and OOM state never leak into the
next job, and no two jobs compete for the GPU they are timing (submitit_local would start them all at
once). A job whose directory holds a finished report of the same config and code (status ok or oom) is not
run again (`rerun=true` forces it); every other job runs: failed, changed, never finished. A job whose
process dies (killed, out of host memory, a CUDA fault) is recorded as failed and the sweep goes on. A job
dies with its sweep and with its own launcher process (submitit_local's jobs would outlive both), and a
directory another process holds is left alone.
"""
import atexit
import json
import logging
import os
import select
import shlex
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher
from omegaconf import OmegaConf, open_dict

from hydra_plugins.trainsweep import app  # src or trainsweep: the package this process runs

log = logging.getLogger(__name__)


@dataclass
class IsolatedLauncherConf(LocalQueueConf):
    _target_: str = "hydra_plugins.trainsweep.launcher.IsolatedLauncher"
    timeout_min: int = 120  # a job still running after this is stopped and recorded as failed
    tasks_per_node: int = "${distributed.nproc_per_job}"  # type: ignore  # >1: each job one DDP/FSDP run of N processes
    repeats: int = 1  # sweep.repeats=N: every job N times, in interleaved rounds (A B C A B C)
    plan: str = "all"  # sweep.plan=predict: predict every cell first, run only those that could win (src/plan/)
    top: Optional[int] = None  # sweep.plan=predict: the predicted leaders the first wave runs (None: 3; 1 for fastest)
    question: str = "both"  # sweep.question=largest|fastest: which of sweep=fit's two answers the runs confirm
    predict_on_cpu: bool = False  # predictions are timed on a GPU; on a CPU only for tests of the planner


ConfigStore.instance().store(group="hydra/launcher", name="isolated", node=IsolatedLauncherConf,
                             provider="trainsweep")


def job_gpus(params: dict) -> dict:
    """Launcher parameters that give each job the GPUs this process sees. submitit_local sets a job's
    CUDA_VISIBLE_DEVICES to 0..gpus_per_node-1 (default: none, so every job would run on the CPU); a
    CUDA_VISIBLE_DEVICES of our own is passed through verbatim by the job's shell setup."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        import torch

        return {"gpus_per_node": torch.cuda.device_count()}
    # quoted: the line runs in a shell, where `0, 1` failed every job and `$(...)` would run as a command
    setup = list(params.get("setup") or []) + [f"export CUDA_VISIBLE_DEVICES={shlex.quote(env)}"]
    return {"gpus_per_node": len([x for x in env.split(",") if x.strip()]), "setup": setup}


def rounds(jobs: Sequence[Sequence[str]], repeats: int) -> list[list[str]]:
    """Every job once per round, round after round, so a drift of the machine hits every job alike; repeat 0
    is the plain job (its directory unchanged: a finished sweep gains repeats without recomputing), repeat
    r > 0 adds the override repeat=r. The summary ranks each job on its repeats (src/report/summary.py)."""
    return [list(job) + ([f"repeat={r}"] if r else []) for r in range(repeats) for job in jobs]


def link_log(job_dir: Path) -> None:
    """job_dir/job.log -> the job's output, which submitit keeps under the sweep's .submitit/<id>/."""
    logs = sorted((job_dir.parent / ".submitit").glob("*/*_log.out"), key=lambda p: p.stat().st_mtime)
    link = job_dir / "job.log"
    if logs and job_dir.is_dir():
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(logs[-1], job_dir))


def job_line(job_dir: Path) -> str:
    """One line per finished job while the sweep runs: status, real tokens/s with its interval, flags."""
    rep = app("report.files").read(job_dir / "report.json")
    if rep is None:
        return "no report"
    th, flags = rep.get("throughput"), rep.get("flags")
    rate = f", {th.real_tok_text()} real tok/s" if th and th.real_tokens_per_s else ""
    why = f": {rep.error.strip().splitlines()[0]}" if rep.status != "ok" and rep.get("error") else ""  # one line
    return f"{rep.status}{why}{rate}" + (f"; flagged: {flags.line()}" if flags and flags.reasons else "")


def die_with(pid: int, what: str = "the sweep") -> None:
    """Kill this process when process `pid` (the sweep, or the job's own launcher) exits, however it exits: a
    SIGKILLed sweep can't stop its jobs, and submitit_local's job controller is made to outlive it. SIGKILL,
    because submitit's job process ignores SIGTERM (a cluster's warning of preemption). The job's report is then
    missing, so the job runs again with the rerun sweep."""
    def stop():
        print(f"{what} (pid {pid}) is gone: this job stops with it", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    def watch(fd):
        select.select([fd], [], [])  # returns once the process has exited
        stop()

    try:
        fd = os.pidfd_open(pid)  # a reused pid can't fool it, and an unreaped (zombie) sweep counts as gone
    except ProcessLookupError:
        stop()
    except (AttributeError, OSError) as exc:  # not Linux >= 5.3
        log.warning("this job can't watch its sweep (%s): it may outlive a killed sweep", exc)
        return
    threading.Thread(target=watch, args=(fd,), daemon=True, name="sweep-watch").start()


class IsolatedLauncher(LocalLauncher):
    sweep_pid = None  # set by launch(); travels to each job with this launcher (pickled)

    def __init__(self, repeats: int = 1, plan: str = "all", top: int | None = None, predict_on_cpu: bool = False,
                 question: str = "both", **params):
        super().__init__(**params)
        self.repeats = repeats  # src/config/cli.py refuses anything but a positive integer
        self.plan, self.top, self.predict_on_cpu = plan, top, predict_on_cpu  # cli.py checks plan
        self.question = question  # and question

    def __call__(self, *args, **kwargs):  # in the job's process
        if self.sweep_pid is not None:
            die_with(self.sweep_pid)
            # and with submitit's controller, this process's parent: killed alone, the sweep saw the job fail and
            # started the next while this one trained on, both timed on one machine and this one then ranked ok
            if os.getppid() not in (1, self.sweep_pid):
                die_with(os.getppid(), "its launcher process")
        result = super().__call__(*args, **kwargs)
        # once submitit has stored this result and returns: exit without the interpreter's teardown, seconds a
        # job (base/children.exit_now); a job that raised exits the usual way
        atexit.register(app("base.children").exit_now, 0)
        return result

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        self.sweep_pid = os.getpid()
        if self.params.get("gpus_per_node") is None:  # each job gets the GPUs this process sees
            self.params.update(job_gpus(self.params))

        with open_dict(self.config):  # a timestamped sweep dir must not be re-resolved in each job's process
            self.config.hydra.sweep.dir = str(self.config.hydra.sweep.dir)
        if self.plan != "predict" and self.question != "both":
            log.info(f"sweep.question={self.question} asks the planner, and sweep.plan=all runs every cell")
        planner, fell_back = app("plan.sweep"), None
        if self.plan == "predict":
            planned = planner.run_planned(self, job_overrides, initial_job_idx)
            if not isinstance(planned, str):
                planner.record(Path(self.config.hydra.sweep.dir), self.plan)
                return planned
            fell_back = planned  # why every cell runs instead: the summary says it
        planner.record(Path(self.config.hydra.sweep.dir), self.plan, fell_back)
        planner.estimate_first(self, job_overrides, initial_job_idx)  # a CPU's long sweep: its duration, said first
        self.record_jobs(rounds(job_overrides, self.repeats))
        returns = []
        for idx, overrides in enumerate(rounds(job_overrides, self.repeats), start=initial_job_idx):
            returns += self.run_job(idx, overrides)
        return returns

    def record_jobs(self, jobs: Sequence[Sequence[str]]) -> None:
        """The sweep's jobs.json: the directory of every job it will run, written before the first starts, so a
        summary after a kill names the jobs that never started, not only the one that was killed."""
        try:
            names = [str(self.hydra_context.config_loader.load_sweep_config(self.config, list(job)).hydra.sweep.subdir)
                     for job in jobs]
        except Exception as exc:  # a cell that won't compose: run_job meets it and records it in its report
            log.debug("no jobs.json: %s", exc)
            return
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        app("base.files").atomic_write(sweep_dir / app("report.summary").JOBS_FILE, json.dumps({"jobs": names}, indent=1))

    def run_job(self, idx: int, overrides: Sequence[str]) -> list[JobReturn]:
        """One job in its own process, unless it finished earlier or another process holds its directory."""
        report_files = app("report.files")
        job_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        job_dir = Path(str(job_cfg.hydra.sweep.dir)) / str(job_cfg.hydra.sweep.subdir)
        name = f"\t#{idx} : {' '.join(overrides)}"
        try:
            digest = report_files.config_hash(job_cfg)
            done, why = report_files.finished(job_dir, digest, report_files.data_fingerprint(job_cfg))
        except Exception:  # a value that doesn't resolve, a data file it can't read: the job's own process meets
            # it again and records it in its report; raised here, it ended the sweep before its other jobs and summary
            digest, done, why = None, None, ""
        if done and not job_cfg.get("rerun", False):
            log.info(f"{name}: finished earlier ({done.status}), skipped")
            return [self._completed(overrides, job_dir, done.real_tokens_per_s)]
        if app("base.files").locked(job_dir):  # another process writes there: its files stay its own
            log.warning(f"{name}: {job_dir} is in use by another process, skipped")
            return [self._completed(overrides, job_dir, None)]
        if why:
            log.info(f"{name}: {why}, running it again")
        returns = []
        # the job's own process count: the launcher's params were resolved once, against the sweep's config, so
        # `distributed.nproc_per_job=1,2,4` ran every job as one process
        self.params["tasks_per_node"] = int(job_cfg.hydra.launcher.tasks_per_node)
        try:
            for ret in super().launch([overrides], idx):
                ret.working_dir = str(job_dir)  # where the job wrote (jobs don't chdir)
                returns.append(ret)
            link_log(job_dir)
            log.info(f"{name}: {job_line(job_dir)}")
        except Exception as exc:  # the job's process died before it could write its own report
            log.error(f"{name}: the job's process failed: {exc}")
            config = OmegaConf.to_container(job_cfg, resolve=False)
            config.pop("hydra", None)
            report = report_files.record_failure(job_dir, list(overrides), exc, config, digest)
            returns.append(self._completed(overrides, job_dir, report.real_tokens_per_s))
        return returns

    @staticmethod
    def _completed(overrides, job_dir: Path, rate) -> JobReturn:
        # COMPLETED even for a failed job: the sweeper re-raises FAILED ones, which would end the sweep
        # before the rest ran and before its summary; the failure lives in the job's report instead.
        return JobReturn(overrides=list(overrides), working_dir=str(job_dir), status=JobStatus.COMPLETED,
                         _return_value=rate)
