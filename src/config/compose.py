"""What Hydra needs before it composes a run's config: the schema registered (importing src.config.schema
does it), the resolvers the YAML files use, and the config groups' directory; `compose` gives the config a
command line would run, for tests and benchmarks."""
from __future__ import annotations

import hashlib
import os
import re

from omegaconf import DictConfig, OmegaConf

from ..base.ranks import run_stamp
from . import schema  # noqa: F401  (registers the schema Hydra composes against)
from .cli import check_choices, check_keys, quote_numeric_choices, rewrite
from .paths import CONF_DIR, PACKAGE

# Job directory names from override sets: `batch='16',batch.grad_accum=2` -> `batch=16,batch.grad_accum=2`.
MAX_DIRNAME = 200  # bytes; most file systems stop at 255, and a sweep with a dozen overrides passes that


_GROUP_NUMBER = re.compile(r"(?:^|(?<=,))([\w-]+)='(\d+)'(?=,|$)")  # batch='16': the command line's quotes (cli.py)


def job_dirname(overrides: str) -> str:
    """A sweep job's directory name: its overrides, readable, and one per cell whatever its values. A `/` can't be
    in a name and a quote is noise, so `model.name=x/y` reads `model.name=x-y`; where that loses anything (other
    than the quotes the command line put around a numbered group choice) a hash of the overrides follows, so x/y
    and x-y never share a directory. Past MAX_DIRNAME: their start and that hash. The same on a rerun (which
    finds the finished jobs by it)."""
    name = re.sub(r"batch\.grad_accum='?\$\{grad_accum_for:(\d+),\$\{batch\.size\}\}'?", r"batch.effective=\1", overrides)
    name = _GROUP_NUMBER.sub(lambda m: f"{m[1]}={m[2]}" if os.path.isdir(os.path.join(CONF_DIR, m[1])) else m[0], name)
    readable = name.replace("'", "").replace("/", "-") or "defaults"
    digest = hashlib.sha1(overrides.encode()).hexdigest()[:12]
    if readable != (name or "defaults"):
        readable += "-" + digest
    if len(readable.encode()) <= MAX_DIRNAME:
        return readable
    return readable.encode()[:MAX_DIRNAME - 13].decode(errors="ignore") + "-" + digest


OmegaConf.register_new_resolver("job_dirname", job_dirname, replace=True)


def grad_accum_for(effective: int, size: int) -> int:
    """batch.effective's grad_accum: the effective batch over this job's micro-batch, which must divide it."""
    if size > effective or effective % size:
        raise ValueError(f"batch.effective={effective} is not a whole number of micro-batches of batch.size={size}")
    return effective // size


OmegaConf.register_new_resolver("grad_accum_for", grad_accum_for, replace=True)
# Run directories: under torchrun every rank names the same one (src/base/ranks.py says how).
OmegaConf.register_new_resolver("run_stamp", lambda fmt: run_stamp(fmt), replace=True, use_cache=True)
# This package's import name, for the config's `_target_`s: `src` in a checkout, `trainsweep` installed.
OmegaConf.register_new_resolver("package", lambda: PACKAGE, replace=True)


def compose(overrides: list[str]) -> DictConfig:
    """The config `python -m src.run OVERRIDES` would run, for tests and benchmarks; a value outside a
    closed set raises ConfigError, as the command line refuses it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    check_choices(overrides)
    overrides = rewrite(list(overrides))
    check_keys(overrides)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return hydra_compose("config", overrides=quote_numeric_choices(overrides))
