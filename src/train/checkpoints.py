"""Which checkpoint `resume=true` continues from: the newest one whose files load. Light imports only, so a
run without one fails in a second, before torch and before anything is built."""
from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path

log = logging.getLogger(__name__)


def unreadable(checkpoint: Path) -> str | None:
    """What is wrong with a checkpoint directory, or None when every file the Trainer reads back opens.
    Cheap checks that catch what a kill or a full disk leaves (a truncated or empty file) without reading
    the tensors: JSON parses, a safetensors header fits its file, a torch.save zip has its central directory
    (written last, so a truncated file has none)."""
    if not (checkpoint / "trainer_state.json").is_file():
        return "no trainer_state.json (the job died while saving it; the Trainer writes it last)"
    for path in sorted(checkpoint.iterdir()):
        try:
            if path.suffix == ".json":
                json.loads(path.read_text())
            elif path.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(path), "np"):
                    pass
            elif path.suffix in (".pt", ".pth", ".bin"):
                zipfile.ZipFile(path).close()
        except Exception as exc:  # what each reader raises differs; any of them means the file won't load
            return f"{path.name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'unreadable'}"
    return None


def last_checkpoint(out_dir: Path) -> str:
    """The newest checkpoint in this run directory that loads; each newer one that doesn't is named in a
    warning (a killed or disk-full save leaves one like that)."""
    from ..config.errors import ConfigError

    folder = Path(out_dir) / "checkpoints"
    found = sorted(folder.glob("checkpoint-*[0-9]"), key=lambda p: int(p.name.rsplit("-", 1)[1]), reverse=True)
    for checkpoint in found:
        problem = unreadable(checkpoint)
        if problem is None:
            return str(checkpoint)
        log.warning("resume: skipping %s: %s", checkpoint, problem)
    raise ConfigError("resume", True, f"no complete checkpoint in {folder}: point hydra.run.dir at the interrupted "
                                      "run's directory (it needs trainer.save_steps > 0)")


def config_changes(out_dir: Path, cfg) -> list[str]:
    """`key: before -> now` for every value that differs between this config and the one the run directory's
    config.yaml recorded (how-to-run keys such as resume left out); [] when none does or there is none. A
    resume continues the checkpoint's schedule and state: under another config it would be a finished run of
    a config that never ran."""
    from omegaconf import OmegaConf

    from ..config.schema import HOW_NOT_WHAT

    path = Path(out_dir) / "config.yaml"
    if not path.is_file():
        return []
    before = _flat(OmegaConf.to_container(OmegaConf.load(path), resolve=False))
    now = _flat(OmegaConf.to_container(cfg, resolve=True))
    keys = sorted(k for k in before.keys() | now.keys() if k.split(".")[0] not in HOW_NOT_WHAT and before.get(k) != now.get(k))
    return [f"{k}: {before.get(k, '(none)')} -> {now.get(k, '(none)')}" for k in keys]


def _flat(tree, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; an empty mapping stays a value."""
    if isinstance(tree, dict) and tree:
        out = {}
        for key, value in tree.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: tree}
