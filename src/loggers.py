"""Logging backends around the Trainer: csv (the log history at the end) and wandb (offline by default)."""
from __future__ import annotations

import os
from pathlib import Path


def setup(cfg, out_dir: Path) -> None:
    """Environment for the Trainer's own integrations; call before the Trainer is built."""
    if cfg.logger.name == "wandb":
        # Offline unless asked: no account or network needed; `wandb sync` uploads later.
        os.environ.setdefault("WANDB_MODE", cfg.logger.mode)
        os.environ.setdefault("WANDB_DIR", str(out_dir))
        os.environ.setdefault("WANDB_PROJECT", cfg.logger.project)
        if cfg.logger.entity:
            os.environ.setdefault("WANDB_ENTITY", cfg.logger.entity)
        os.environ.setdefault("WANDB_SILENT", "true")


def finish(cfg, log_history: list[dict], out_dir: Path) -> None:
    if cfg.logger.name == "csv" and log_history:
        import pandas as pd

        pd.DataFrame(log_history).to_csv(out_dir / "metrics.csv", index=False)
