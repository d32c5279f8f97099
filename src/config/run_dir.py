"""Where a run may write. A run writes config.yaml, report.json, labels.json, checkpoints/ and final/ into its
directory, replacing what is there, so it never gets trainsweep's own source or config (`hydra.run.dir=conf`
replaced conf/config.yaml, and every later run failed to compose), the working directory, a project's root or
a directory above trainsweep's own, nor a directory inside another run's (its final/ or checkpoints/). The
command line checks the directory as typed, before Hydra writes its .hydra/ there (src/config/cli.py); the
run checks the one Hydra resolved (src/run.py)."""
from __future__ import annotations

from pathlib import Path

from .errors import ConfigError
from .paths import CONF_DIR, PACKAGE_DIR, ROOT

# a run directory: its lock, taken when a run starts from the command line, or its config beside its report (a
# report.json alone may be anybody's)
RUN_MARKERS = (("run.lock",), ("report.json", "config.yaml"))
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py")


def _own() -> dict[str, Path]:
    """trainsweep's own directories: its package, its config groups, its Hydra plugins."""
    return {"source": Path(PACKAGE_DIR), "config": Path(CONF_DIR), "Hydra plugins": Path(ROOT) / "hydra_plugins"}


def check(out_dir, key: str = "hydra.run.dir", value=None) -> None:
    """ConfigError when a run (key hydra.run.dir) or a sweep's jobs (hydra.sweep.dir) would write into `out_dir`
    over files that are not theirs; `value` is the path as typed, for the message."""
    value = out_dir if value is None else value
    out = Path(out_dir).resolve()
    own = {what: path.resolve() for what, path in _own().items()}
    for what, path in own.items():
        if out == path or path in out.parents:
            raise ConfigError(key, value, f"is inside trainsweep's own {what} ({path}); a run writes config.yaml and "
                                          "report.json there: give it a directory of its own")
    if key == "hydra.run.dir" and (out == Path.cwd().resolve() or any((out / m).exists() for m in PROJECT_MARKERS)):
        raise ConfigError(key, value, "is the working directory or a project's root; a run writes "
                                      "report.json and config.yaml there: give it a directory of its own")
    if out in own["source"].parents:
        raise ConfigError(key, value, f"holds trainsweep's own source ({own['source']}): give it a directory of its own")
    # a run's own directory may hold its earlier report (a rerun); a sweep's directory holds none
    above = out.parents if key == "hydra.run.dir" else (out, *out.parents)
    for parent in above:
        marker = next((m for m in RUN_MARKERS if all((parent / name).is_file() for name in m)), None)
        if marker:
            raise ConfigError(key, value, f"is inside the run directory {parent} (its {' and '.join(marker)}); its "
                                          "files and this run's would mix: give it a directory of its own")
