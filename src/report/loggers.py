"""Logging backends: csv (the Trainer's log history at the end) and Weights & Biases, offline by default.

One W&B run per job: group = the sweep, name = the job's overrides, the resolved config, tags for model,
task and peft. Metrics under stable names: loss, lr, grad_norm, eval/*, perf/* (summary: mean), mem/*
(summary: max), diag/*; the report's final numbers go into the run summary. A sweep adds a summary run
to its group with the ranked table and the plots. W&B never stops training: if it is missing or fails,
one warning, and the run goes on without it.
"""
from __future__ import annotations

import logging
import os
import resource
import statistics
from pathlib import Path

import torch
from transformers import TrainerCallback

log = logging.getLogger(__name__)
TRAINER_KEYS = {"loss": "loss", "learning_rate": "lr", "grad_norm": "grad_norm"}


def _init(cfg, out_dir: Path, **kwargs):
    """wandb.init, or None with one warning when wandb is missing or can't start. Online, it gets
    WANDB_INIT_TIMEOUT seconds (default 30; wandb's own is 90) to reach the server: without a network the
    run starts that much later, not a minute and a half."""
    mode = os.environ.get("WANDB_MODE", cfg.logger.mode)
    timeout = _init_timeout()
    try:
        import wandb

        os.environ.setdefault("WANDB_SILENT", "true")
        if mode == "online":
            log.info("wandb: waiting up to %.0f s for the W&B server (WANDB_INIT_TIMEOUT)", timeout)
        return wandb.init(project=cfg.logger.project, entity=cfg.logger.entity, dir=str(out_dir), mode=mode,
                          reinit="create_new", settings=wandb.Settings(init_timeout=timeout), id=_run_id(out_dir),
                          resume="allow", **kwargs)
    except Exception as exc:  # not installed, no disk, bad credentials or no network online: log nothing, lose nothing
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        hint = f" (no answer from the W&B server within {timeout:.0f} s; logger.mode=offline logs locally)" \
            if mode == "online" else ""
        log.warning("wandb logging is off for this run: %s: %s%s", type(exc).__name__, first, hint)
        return None


def _init_timeout(default: float = 30.0) -> float:
    """WANDB_INIT_TIMEOUT in seconds; a value that is no positive number (`abc`) failed the whole run: the
    default, with a warning, instead."""
    raw = os.environ.get("WANDB_INIT_TIMEOUT")
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        log.warning("WANDB_INIT_TIMEOUT=%s is no positive number of seconds: waiting %.0f s", raw, default)
        return default
    return value


def _run_id(out_dir: Path) -> str:
    """This directory's W&B run id, kept in its wandb/ so that every rerun (after a kill, an error, a changed
    config) logs as the same run: a new id each time left one offline-run-* per attempt, and `wandb sync` uploaded
    them all into the group. The earlier attempts' offline files go (the run is logged anew from its start, or
    from its checkpoint under resume); online, resume="allow" continues the one run."""
    import shutil

    from ..base.files import atomic_write

    path = Path(out_dir) / "wandb" / "trainsweep-run-id"
    try:
        run_id = path.read_text().strip()
    except OSError:
        run_id = ""
    if not run_id.isalnum():  # none yet, or unreadable: a fresh one, 8 of [a-z0-9] as wandb makes them
        import secrets
        import string

        run_id = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, run_id)
    for earlier in path.parent.glob(f"offline-run-*-{run_id}"):
        shutil.rmtree(earlier, ignore_errors=True)
    return run_id


class WandbLogger(TrainerCallback):
    """Streams the Trainer's logs and per-window perf/mem figures; the report's numbers at the end."""

    def __init__(self, run, meter):
        self.run, self.meter, self._read = run, meter, 0
        run.define_metric("step")
        for pattern, summary in (("loss", "min"), ("lr", "last"), ("grad_norm", "max"), ("eval/*", "last"),
                                 ("perf/*", "mean"), ("mem/*", "max")):
            run.define_metric(pattern, step_metric="step", summary=summary)

    def on_log(self, args, state, control, logs=None, **kw):
        row = {"step": state.global_step}
        for key, value in (logs or {}).items():
            if key in TRAINER_KEYS:
                row[TRAINER_KEYS[key]] = value
            elif key.startswith("eval_"):
                row["eval/" + key[5:]] = value
        new = self.meter.step_times[self._read:] if self.meter else []  # steps the meter has read so far
        self._read += len(new)
        if new:
            row["perf/step_time_s"] = statistics.fmean(new)
        if torch.cuda.is_available():  # host-side allocator counters: no sync
            row["mem/allocated_gb"] = torch.cuda.memory_allocated() / 2**30
            row["mem/reserved_gb"] = torch.cuda.memory_reserved() / 2**30
        else:
            row["mem/peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        self._log(row)

    def _log(self, row: dict) -> None:
        if self.run is None:
            return
        try:
            self.run.log(row)
        except Exception as exc:
            log.warning("wandb.log failed, logging stops: %s", exc)
            self.run = None


class Loggers:
    """The run's logging backends: `callbacks` go to the Trainer, `finish` gets the report."""

    def __init__(self, cfg, out_dir: Path, overrides: list[str], group: str | None, meter=None, enabled: bool = True):
        self.cfg, self.out_dir, self.run, self.callbacks, self.enabled = cfg, out_dir, None, [], enabled
        if enabled and cfg.logger.name == "wandb":
            c = cfg.model.name, cfg.task.name, cfg.peft.method
            self.run = _init(cfg, out_dir, group=group, name=",".join(overrides) or "defaults",
                             config=_config(cfg), tags=[f"model:{c[0]}", f"task:{c[1]}", f"peft:{c[2]}"])
            if self.run is not None:
                self.callbacks.append(WandbLogger(self.run, meter))

    def finish(self, rep, log_history: list[dict]) -> None:  # rep: src.report.Report
        if self.enabled and self.cfg.logger.name == "csv" and log_history:
            import pandas as pd

            pd.DataFrame(log_history).to_csv(self.out_dir / "metrics.csv", index=False)
        if self.run is not None:
            try:
                self.run.summary.update(rep.wandb_summary())
                self.run.finish()
            except Exception as exc:
                log.warning("wandb could not finish this run: %s", exc)


def _config(cfg) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def log_sweep(cfg, sweep_dir: Path, table, lines: list[str], plots: list[Path]) -> None:
    """A summary run in the sweep's group: the ranked table, the recommendation and the plots."""
    run = _init(cfg, sweep_dir, group=sweep_dir.name, name="sweep-summary", job_type="sweep-summary",
                tags=["sweep-summary"], config={"sweep_dir": str(sweep_dir), "jobs": len(table)})
    if run is None:
        return
    try:
        import wandb

        run.log({"ranked": wandb.Table(dataframe=table.astype(str)),
                 **{f"plots/{p.stem}": wandb.Image(str(p)) for p in plots}})
        run.summary.update({"recommendation": "\n".join(lines), "jobs": len(table),
                            "best/job": str(table.iloc[0]["job"]), "best/real_tokens_per_s": table.iloc[0]["real_tok_s"]})
        run.finish()
    except Exception as exc:
        log.warning("wandb could not log the sweep summary: %s", exc)
