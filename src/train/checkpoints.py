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
