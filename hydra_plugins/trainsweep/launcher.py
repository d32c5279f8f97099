"""The `isolated` launcher: hydra-submitit-launcher's submitit_local, one job at a time.

Each job runs in its own process, so memory peaks, the CUDA context and OOM state never leak into the
next job, and no two jobs compete for the GPU they are timing (submitit_local would start them all at
once). A job whose directory already holds a finished report is not run again (`rerun=true` forces it);
a job whose process dies (killed, out of host memory, a CUDA fault) is recorded as failed and the sweep
goes on.
"""
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher
from omegaconf import OmegaConf, open_dict

log = logging.getLogger(__name__)


@dataclass
class IsolatedLauncherConf(LocalQueueConf):
    _target_: str = "hydra_plugins.trainsweep.launcher.IsolatedLauncher"
    timeout_min: int = 120  # a job still running after this is stopped and recorded as failed
    tasks_per_node: int = "${distributed.nproc_per_job}"  # type: ignore  # >1: each job one DDP/FSDP run of N processes


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
    setup = list(params.get("setup") or []) + [f"export CUDA_VISIBLE_DEVICES={env}"]
    return {"gpus_per_node": len([x for x in env.split(",") if x.strip()]), "setup": setup}


def link_log(job_dir: Path) -> None:
    """job_dir/job.log -> the job's output, which submitit keeps under the sweep's .submitit/<id>/."""
    logs = sorted((job_dir.parent / ".submitit").glob("*/*_log.out"), key=lambda p: p.stat().st_mtime)
    link = job_dir / "job.log"
    if logs and job_dir.is_dir():
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(logs[-1], job_dir))


def job_line(job_dir: Path) -> str:
    """One line per finished job while the sweep runs: status, real tokens/s with its interval, flags."""
    from src.report_files import read

    rep = read(job_dir / "report.json")
    if rep is None:
        return "no report"
    th, flags = rep.get("throughput"), rep.get("flags")
    rate = f", {th.real_tok_text()} real tok/s" if th and th.real_tokens_per_s else ""
    return f"{rep.status}{rate}" + (f"; flagged: {flags.line()}" if flags and flags.reasons else "")


class IsolatedLauncher(LocalLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from src.report_files import finished, record_failure

        if self.params.get("gpus_per_node") is None:  # each job gets the GPUs this process sees
            self.params.update(job_gpus(self.params))

        with open_dict(self.config):  # a timestamped sweep dir must not be re-resolved in each job's process
            self.config.hydra.sweep.dir = str(self.config.hydra.sweep.dir)
        returns = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            job_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            job_dir = Path(str(job_cfg.hydra.sweep.dir)) / str(job_cfg.hydra.sweep.subdir)
            done = finished(job_dir)
            if done and not job_cfg.get("rerun", False):
                log.info(f"\t#{idx} : {' '.join(overrides)}: finished earlier ({done.status}), skipped")
                returns.append(self._completed(overrides, job_dir, done))
                continue
            try:
                for ret in super().launch([overrides], idx):
                    ret.working_dir = str(job_dir)  # where the job wrote (jobs don't chdir)
                    returns.append(ret)
                link_log(job_dir)
                log.info(f"\t#{idx} : {' '.join(overrides)}: {job_line(job_dir)}")
            except Exception as exc:  # the job's process died before it could write its own report
                log.error(f"\t#{idx} : {' '.join(overrides)}: the job's process failed: {exc}")
                config = OmegaConf.to_container(job_cfg, resolve=False)
                config.pop("hydra", None)
                returns.append(self._completed(overrides, job_dir, record_failure(job_dir, list(overrides), exc, config)))
        return returns

    @staticmethod
    def _completed(overrides, job_dir: Path, report) -> JobReturn:  # report: src.report.Report
        # COMPLETED even for a failed job: the sweeper re-raises FAILED ones, which would end the sweep
        # before the rest ran and before its summary; the failure lives in the job's report instead.
        return JobReturn(overrides=list(overrides), working_dir=str(job_dir), status=JobStatus.COMPLETED,
                         _return_value=report.real_tokens_per_s)
