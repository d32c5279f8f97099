"""The `batch_search` sweeper: which micro-batch gives the most real tokens/s on this card?

Not the largest that fits: past the point where the GPU is busy, a larger micro-batch adds memory and no
speed, and near capacity the allocator's retries make it slower. The search doubles the micro-batch from
the smallest size and stops at the first OOM or failure, at the first memory-saturated job, or once
`patience` sizes in a row fail to beat the best by `min_gain`. With `effective_batch` it keeps
size x grad_accum fixed (grad_accum = effective_batch / size), which is the question when the
optimisation recipe fixes the batch. Jobs run through the configured launcher (isolated by default);
the sweep's usual summary follows, and search.json records the path and the answer.

    python -m src.run -m hydra/sweeper=batch_search model=qwen3
    python -m src.run -m hydra/sweeper=batch_search hydra.sweeper.effective_batch=64 model=qwen3
"""
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from omegaconf import OmegaConf

from hydra_plugins.trainsweep import app  # src or trainsweep: the package this process runs

log = logging.getLogger(__name__)


@dataclass
class BatchSearchConf:
    _target_: str = "hydra_plugins.trainsweep.batch_search.BatchSearchSweeper"
    sizes: List[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256])
    effective_batch: Optional[int] = None  # fixed size x grad_accum; sizes that don't divide it are skipped
    min_gain: float = 0.03  # a larger micro-batch must beat the best by this much to count as better
    patience: int = 1  # stop after this many sizes in a row that were not better


ConfigStore.instance().store(group="hydra/sweeper", name="batch_search", node=BatchSearchConf, provider="trainsweep")


def plan(sizes: List[int], effective_batch: Optional[int]) -> List[tuple]:
    """(micro-batch, grad_accum) pairs in search order."""
    if not effective_batch:
        return [(s, 1) for s in sizes]
    return [(s, effective_batch // s) for s in sizes if s <= effective_batch and effective_batch % s == 0]


class BatchSearchSweeper(Sweeper):
    def __init__(self, sizes: List[int], effective_batch: Optional[int], min_gain: float, patience: int):
        self.sizes, self.effective_batch = list(sizes), effective_batch
        self.min_gain, self.patience = min_gain, patience

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        Report, report_files = app("report.document").Report, app("report.files")

        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        path, best, misses, stop = [], None, 0, "tried every size"
        for idx, (size, accum) in enumerate(plan(self.sizes, self.effective_batch)):
            overrides = list(arguments) + [f"batch.size={size}", f"batch.grad_accum={accum}"]
            [ret] = self.launcher.launch([overrides], initial_job_idx=idx)
            job_dir = Path(ret.hydra_cfg.hydra.runtime.output_dir) if ret.hydra_cfg else Path(ret.working_dir)
            report = report_files.read(job_dir / "report.json") or Report(status="error")  # this job's, fresh or finished earlier
            rate = report.real_tokens_per_s
            saturated = bool(report.get("verdict") and report.verdict.saturated)
            path.append({"batch": size, "grad_accum": accum, "status": report.status,
                         "real_tokens_per_s": rate, "saturated": saturated, "dir": str(job_dir)})
            if report.status != "ok" or rate is None:
                stop = f"batch {size} ended {report.status}"
                break
            if best is None or rate > best["real_tokens_per_s"] * (1 + self.min_gain):
                best, misses = path[-1], 0
            else:
                misses += 1
            if saturated:
                stop = f"batch {size} saturated memory: larger micro-batches only get slower or run out"
                break
            if misses > self.patience:
                stop = f"{misses} sizes in a row gained less than {self.min_gain:.0%} over batch {best['batch']}"
                break
        answer = {"best": best, "stopped_because": stop, "path": path, "effective_batch": self.effective_batch}
        app("base.files").atomic_write(sweep_dir / "search.json", json.dumps(answer, indent=2))
        if best:
            log.info(f"batch search: micro-batch {best['batch']} x grad_accum {best['grad_accum']} is fastest, "
                     f"{best['real_tokens_per_s']:,.0f} real tokens/s (stopped: {stop})")
        else:
            log.info(f"batch search: no size finished ({stop})")
        return [path]
