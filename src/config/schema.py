"""Config schema: one dataclass per config group, registered in Hydra's ConfigStore, each with the checks of
its values right under it; `validate` runs them all.

Hydra checks keys and types against these dataclasses while it composes, and a field that takes one of a
fixed set of strings is a Choice (an Enum), so Hydra refuses any other value there too. Each group's `check`
covers what types can't (ranges, another group's setting, what this machine has) and raises ConfigError,
which run.py turns into one line on stderr and exit code 2. OmegaConf runs no __post_init__ on a composed
config, so the checks are staticmethods that `validate` calls with the composed DictConfig.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

from .data import BatchConfig, DataConfig, DataloaderConfig, PaddingConfig
from .errors import Choice, ConfigError
from .model import AttentionConfig, InitConfig, ModelConfig, PeftConfig, PrecisionConfig, TaskConfig
from .training import (DebugConfig, DiagnosticsConfig, DistributedConfig, EnvConfig, GpuConfig, LoggerConfig,
                       MeasureConfig, TrainerConfig)


Device = Choice("Device", "auto cuda cpu")
Mode = Choice("Mode", "train diagnose")  # diagnose: every check, no training; exit 1 if any fails


@dataclass
class Config:
    model: ModelConfig = MISSING
    task: TaskConfig = MISSING
    data: DataConfig = MISSING
    padding: PaddingConfig = MISSING
    dataloader: DataloaderConfig = MISSING
    precision: PrecisionConfig = MISSING
    batch: BatchConfig = MISSING
    peft: PeftConfig = MISSING
    attention: AttentionConfig = MISSING
    env: EnvConfig = MISSING
    logger: LoggerConfig = MISSING
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    measure: MeasureConfig = field(default_factory=MeasureConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    debug: DebugConfig = MISSING
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)
    distributed: DistributedConfig = MISSING
    mode: Mode = Mode.train
    device: Device = Device.auto
    rerun: bool = False  # true: recompute a run whose directory already holds a finished report
    resume: bool = False  # true: continue the interrupted run in hydra.run.dir from its last checkpoint
    baseline: Optional[str] = None  # a sweep's reference job, by an override (debug=none): the summary compares each job with it
    repeat: int = 0  # which repeat of a sweep job (sweep.repeats: hydra_plugins/trainsweep/launcher.py); the run ignores it


# How to run or summarise, not what: a config hash leaves them out, and a resumed run is the same run.
HOW_NOT_WHAT = ("rerun", "resume", "baseline")


def validate(cfg: DictConfig, cuda_available: bool) -> None:
    """Check what the schema's types can't, group by group. Raises ConfigError naming the first bad key."""
    if cfg.device == "cuda" and not cuda_available:
        raise ConfigError("device", "cuda", "no CUDA device is visible; use device=auto or device=cpu")
    on_gpu = cuda_available and cfg.device != "cpu"
    for group in (InitConfig, ModelConfig, TaskConfig, DataConfig, PaddingConfig, DataloaderConfig, PrecisionConfig,
                  BatchConfig, PeftConfig, AttentionConfig, EnvConfig, DistributedConfig, GpuConfig, DebugConfig, TrainerConfig,
                  MeasureConfig):
        group.check(cfg, on_gpu)



ConfigStore.instance().store(name="config_schema", node=Config)
