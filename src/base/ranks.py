"""Several processes, one run: who this process is under torchrun, the run directory they share, and the
report's cross-rank numbers. The Trainer (through accelerate) owns the process group and the DDP/FSDP
wrapping; this module only reads what torchrun set and gathers a few numbers once, after training."""
from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)
# what could not be looked up in this process, by report key, with why (the report's not_measured lifts it)
NOT_MEASURED: dict[str, str] = {}


def rank() -> int:
    return int(os.environ.get("RANK", 0))


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", 1))


def nodes() -> int:
    """How many hosts (torchrun agents, or a SLURM job's nodes) this launch spans. torchrun sets GROUP_WORLD_SIZE
    (its agents) and LOCAL_WORLD_SIZE; submitit's export (from_submitit) only the latter, so the count is the
    world over the processes of one host there."""
    if os.environ.get("GROUP_WORLD_SIZE", "").isdigit():
        return int(os.environ["GROUP_WORLD_SIZE"])
    local = os.environ.get("LOCAL_WORLD_SIZE", "")
    return max(1, world_size() // int(local)) if local.isdigit() and int(local) > 0 else 1


def problem() -> str | None:
    """What is wrong with torchrun's variables in this environment, or None: one that is no whole number was a
    traceback, and a RANK left over from another launch (RANK=1, no WORLD_SIZE) trained, wrote nothing as a
    non-main rank, and exited 0."""
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        raw = os.environ.get(var)
        if raw is not None and not raw.strip().isdigit():
            return f"{var}={raw}: must be a whole number (torchrun sets it; unset it to run in one process)"
    if world_size() < 1 or rank() >= world_size():
        return (f"RANK={rank()}: must be below WORLD_SIZE ({world_size()}): left from another launch? unset RANK and "
                "WORLD_SIZE to run in one process, or start the run with torchrun")
    return None


def is_main() -> bool:
    """Only rank 0 writes reports, the run's config and logs; the others train and report to it."""
    return rank() == 0


def run_stamp(fmt: str) -> str:
    """The run directory's timestamp. Under torchrun every rank must name the same directory, but each
    process starts at its own second: they share their launcher's start time instead (torchrun's agent is
    every local worker's parent). Alone, it is now."""
    started = time.time()
    if world_size() > 1:
        try:
            import psutil  # a dependency of accelerate

            started = psutil.Process(os.getppid()).create_time()
        except Exception as exc:  # each rank falls back to its own start, and may name a run directory of its own
            why = f"could not check: the launcher's start time ({type(exc).__name__}: {exc}); each rank stamped its own"
            NOT_MEASURED["distributed.run_stamp"] = why
            log.warning("run directory: %s", why)
    return time.strftime(fmt, time.localtime(started))


def from_submitit() -> None:
    """A submitit job of several tasks (hydra/launcher=slurm or the local `isolated` launcher with
    distributed.nproc_per_job > 1) is one data-parallel run: each task gets the variables torchrun would
    set, so the Trainer forms the process group exactly as under torchrun."""
    if "SUBMITIT_EXECUTOR" not in os.environ:
        return
    from submitit import JobEnvironment
    from submitit.helpers import TorchDistributedEnvironment

    try:
        tasks = JobEnvironment().num_tasks
    except RuntimeError:  # not inside a submitit job after all
        return
    if tasks > 1:  # each rank picks its GPU by LOCAL_RANK; the job keeps all its GPUs visible
        TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)


def gather(value):
    """Every rank's value, in rank order, on every rank (one collective; call after training, never per
    step). A single process gets [value]."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [value]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def combine(per_rank: list[dict]) -> dict:
    """The report's cross-rank view: tokens summed over ranks (global throughput), and each rank's tokens,
    mean step time and memory beside them. Throughput uses rank 0's step time: the ranks wait for each
    other at every gradient all-reduce, so their steps end together."""
    first = per_rank[0]
    tokens = None
    if all(r.get("tokens") for r in per_rank):
        tokens = {k: sum(r["tokens"][k] for r in per_rank) for k in first["tokens"]}
    return {"tokens": tokens, "tokens_per_rank": [r.get("tokens") for r in per_rank],
            "step_mean_per_rank": [r.get("step_mean") for r in per_rank],
            "memory_per_rank": [r.get("memory") for r in per_rank]}
