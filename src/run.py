"""trainsweep's entry point: the command line, Hydra's composition, and the run directory taken (skipped when
finished, refused when held or unusable) before src/runner.py trains and measures in it.

    python -m src.run                                   # the main job (tiny model, CPU, ~1 minute); installed: trainsweep
    python -m src.run model=qwen3 batch=16              # one run
    python -m src.run -m batch=4,8,16,32 batch.grad_accum=1,2,4   # a sweep
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from .base import bytecode, files, laps

_STARTED = time.perf_counter()  # the command line's imports start here (timing_s.imports; cli() hands it on)
# first, before torch loads: where Python keeps no bytecode, every job would compile torch's Python again (~10 s)
_PYCACHE = bytecode.cache_in(files.CACHE)

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from . import runner
from .base import children, ranks
from .config.cli import hydra_argv  # numeric group choices quoted; a bad closed-set value refused in one line, exit 2
from .config.compose import CONF_DIR  # importing registers the schema and the resolvers Hydra composes with
from .config.errors import ConfigError
from .runner import run  # noqa: F401  (tests and scripts: from src.run import run)

_composed = False  # set once Hydra has composed a config and handed it over


@hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    global _composed
    _composed = True
    ranks.from_submitit()  # a multi-process sweep job: torchrun's variables, before anything reads them
    children.die_with_this_process()  # tokenising pools and DataLoader workers never outlive this run
    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    in_sweep = hydra_cfg.mode == RunMode.MULTIRUN
    overrides = OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)  # as typed: `${...}` unresolved
    from .report import files as report_files

    try:  # every interpolation resolves and every value is checked here, before anything is written
        digest, data = report_files.config_hash(cfg), report_files.data_fingerprint(cfg)
        report_files.check_run_dir(out_dir)
        runner.check(cfg)
    except (ConfigError, OmegaConfBaseException) as exc:
        return runner.refused(exc, cfg, out_dir, overrides, in_sweep)
    fresh = not out_dir.is_dir() or {p.name for p in out_dir.iterdir()} <= runner.HYDRA_OWN
    earlier, why = report_files.finished(out_dir, digest, data)  # read-only: a finished run in a read-only dir answers
    if earlier and not cfg.rerun:  # finished jobs are never recomputed or overwritten unless asked
        print(f"{out_dir}: finished earlier ({earlier.status}); rerun=true recomputes it")
        return earlier.real_tokens_per_s
    with ExitStack() as held:
        if ranks.is_main():  # rank 0 writes the directory; torchrun's other ranks share it
            try:
                held.enter_context(files.lock(out_dir))
            except files.Busy as exc:  # a second writer would mix its files with the first's
                print(f"not started: {exc}", file=sys.stderr)
                if in_sweep:
                    return None
                sys.exit(report_files.BUSY_EXIT)
            except OSError as exc:  # read-only, a name too long, no space: the directory can't be written
                print(f"not started: {out_dir} can't be written: {exc.strerror or exc}", file=sys.stderr)
                if in_sweep:
                    return None
                sys.exit(2)
        if why:
            print(f"{out_dir}: {why}: running it again")
        group = Path(hydra_cfg.sweep.dir).name if in_sweep else None  # a sweep's jobs share a W&B group
        report = runner.run(cfg, out_dir, overrides=overrides, group=group)
    if report["status"] != "ok" and not in_sweep:  # a sweep records the failure and goes on
        if report["status"] == "config_error":  # a data file or a model found bad while loading
            if fresh:  # nothing of an earlier run there: no run directory for a config error
                runner.discard(out_dir)
            sys.exit(2)
        sys.exit(1)
    return (report.get("throughput") or {}).get("real_tokens_per_s")


def cli() -> None:
    """The command line: `python -m src.run ...` in a checkout, `trainsweep ...` installed. `measure` and `speedup`
    run a user's own training command with the drop-in attached (src/dropin/launch.py)."""
    laps.PROCESS_START = _STARTED  # only a command-line process reports its imports (not a test's run())
    if sys.argv[1:2] in (["measure"], ["speedup"]):
        from .dropin import launch

        sys.exit(launch.main(sys.argv[1:]))
    bytecode.hand_down(_PYCACHE)  # after the drop-in's branch: a user's own command keeps its environment
    # nothing downloads at run time: models and data are local directories or already in the Hugging Face cache, and
    # transformers' kernel and agent lookups would otherwise ask the hub at import (HF_HUB_OFFLINE=0 opts back in)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if (bad := ranks.problem()) is not None:  # before anything reads them: which process writes the run dir
        print(f"config error: {bad}", file=sys.stderr)
        sys.exit(2)
    sys.argv = hydra_argv(sys.argv)
    signal.signal(signal.SIGINT, runner.on_interrupt)
    run_dir = next((Path(a.split("=", 1)[1]) for a in sys.argv if a.startswith("hydra.run.dir=")), None)
    # refused before Hydra writes its .hydra/ there; rank 0 alone: another rank would find rank 0's own lock
    # (agents on two nodes start their ranks seconds apart) and stop
    if ranks.is_main() and run_dir and run_dir.is_dir() and "-m" not in sys.argv:
        try:
            with files.lock(run_dir):
                pass
        except files.Busy as exc:
            print(f"not started: {exc}", file=sys.stderr)
            sys.exit(75)
        except OSError:  # unwritable: main() says so once Hydra has composed the config
            pass
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID`: a hung run (a rank stuck in a collective) prints where it is
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    if not ranks.is_main():  # torchrun's other ranks share rank 0's run directory and leave its files alone
        sys.argv += ["hydra.output_subdir=null", "hydra/job_logging=stdout"]
    try:
        main()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the goodbye
        print("\ninterrupted: what finished is kept (a sweep's finished jobs, a run's checkpoints: resume=true)",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)  # no interpreter shutdown: it can meet the interrupt again in a thread's cleanup
    except SystemExit as exc:
        # Hydra answers composition errors (unknown option, bad override, wrong type) with exit 1 before
        # our function runs; those are config errors, which exit 2. A sweep where no job finished exits 1 on
        # purpose (src/report/summary.py's NothingFinished, marked sweep_over).
        if exc.code == 1 and not _composed and not getattr(exc, "sweep_over", False):
            sys.exit(2)
        if isinstance(exc.code, int):
            children.exit_now(exc.code)
        raise
    children.exit_now(0)  # a run or a sweep is over: skip the interpreter's teardown (children.exit_now says why)


if __name__ == "__main__":
    cli()
