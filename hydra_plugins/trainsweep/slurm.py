"""hydra/launcher=slurm (conf/hydra/launcher/slurm.yaml): hydra-submitit-launcher's SLURM launcher, one sbatch
array per job shape.

An sbatch array shares one header (nodes, tasks and GPUs per node), and hydra-submitit submits a whole sweep as
one array, its params resolved once against the sweep's config: `distributed.nproc_per_job=1,2,4` started every
job on the first count (the job then refuses itself: src/config/training.py). Here each job's launcher params are
resolved against the job's own config, the jobs are grouped by shape, and every group is submitted as its own
array before any result is awaited, so the arrays queue side by side.
"""
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

log = logging.getLogger(__name__)
SHAPE = ("nodes", "tasks_per_node", "gpus_per_node")  # what one sbatch header fixes for all of its array's jobs


@dataclass
class ShapedSlurmConf(SlurmQueueConf):
    _target_: str = "hydra_plugins.trainsweep.slurm.ShapedSlurmLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="trainsweep_slurm", node=ShapedSlurmConf,
                             provider="trainsweep")


class ShapedSlurmLauncher(SlurmLauncher):
    def shapes(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> dict:
        """(nodes, tasks_per_node, gpus_per_node) -> [(job index, overrides)], in sweep order."""
        groups: dict = {}
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            job = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides)).hydra.launcher
            groups.setdefault(tuple(job.get(k) for k in SHAPE), []).append((idx, list(overrides)))
        return groups

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        groups = self.shapes(job_overrides, initial_job_idx)
        if len(groups) == 1 and next(iter(groups)) == tuple(self.params.get(k) for k in SHAPE):
            return super().launch(job_overrides, initial_job_idx)  # one shape, the sweep's own: one array as ever
        import submitit

        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        base = set(OmegaConf.structured(BaseQueueConf).keys())  # the rest take the executor's prefix (as upstream)
        submitted = []
        for shape, jobs in groups.items():
            executor = submitit.AutoExecutor(cluster=self._EXECUTOR, folder=self.params["submitit_folder"],
                                             **({"slurm_max_num_timeout": self.params["max_num_timeout"]}
                                                if "max_num_timeout" in self.params else {}))
            params = {**self.params, **dict(zip(SHAPE, shape))}
            executor.update_parameters(**{k if k in base else f"{self._EXECUTOR}_{k}": v for k, v in params.items()
                                          if k not in ("submitit_folder", "max_num_timeout")})
            log.info("sbatch array of %d job(s): %s", len(jobs), ", ".join(f"{k}={v}" for k, v in zip(SHAPE, shape)))
            for idx, overrides in jobs:
                log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            args = [(overrides, "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state())
                    for idx, overrides in jobs]
            submitted += zip((idx for idx, _ in jobs), executor.map_array(self, *zip(*args)))
        return [job.results()[0] for _, job in sorted(submitted, key=lambda pair: pair[0])]
