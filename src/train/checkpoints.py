"""Which checkpoint `resume=true` continues from: the newest one whose files load, that holds everything a resume
restores, and that was made under this config (each checkpoint records its own). Light imports only, so a run
without one fails in a second, before torch and before anything is built."""
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


STAMP = "trainsweep_config.json"  # the config a checkpoint was made under, written once the Trainer has saved it
# What a resume restores, each under the names the Trainer gives it (one file, or FSDP's sharded forms). Without
# optimizer.pt the Trainer resumed anyway, AdamW started fresh and the warm-up restarted, and status said ok.
PARTS = (("optimizer.pt", "optimizer.bin", "optimizer_0"), ("scheduler.pt",),
         ("adapter_model.safetensors", "adapter_model.bin", "model.safetensors", "model.safetensors.index.json",
          "pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model_fsdp.bin", "pytorch_model_fsdp_0"))


def incomplete(checkpoint: Path) -> str | None:
    """The first file a resume needs that the checkpoint lacks (`no optimizer.pt`), or None."""
    have = {p.name for p in checkpoint.iterdir()}
    for names in PARTS:
        if not have & set(names):
            return f"no {names[0]}" + (" (nor adapter_model.safetensors)" if names[0].startswith("adapter") else "")
    if have & {"adapter_model.safetensors", "adapter_model.bin"} and "adapter_config.json" not in have:
        return "no adapter_config.json"  # the adapter's weights alone load onto nothing
    if STAMP not in have:
        return f"no {STAMP} (made by another tool or an older trainsweep, or the job died while saving it)"
    return None


DATA = "data files' content"  # a key beside the config's: the rows decide num_labels, so the head's shape


def config_of(cfg, data: str | None = None) -> dict:
    """What a checkpoint belongs to: the resolved config, flat, how-to-run keys (resume, rerun) left out, and the
    data files' content hash (report.files.data_fingerprint; None for synthetic rows, which the config makes).
    Taken at the run's start, before the data fills in task.num_labels or trainer.epochs' steps: a file of
    three classes where the checkpoint's had two was a size-mismatch traceback beside "resumed"."""
    from omegaconf import OmegaConf

    from ..config.schema import HOW_NOT_WHAT

    flat = _flat(OmegaConf.to_container(cfg, resolve=True))
    kept = {k: v for k, v in flat.items() if k.split(".")[0] not in HOW_NOT_WHAT and k.split(".")[0] != "hydra"}
    if data is not None:
        kept[DATA] = data
    return json.loads(json.dumps(kept, default=str))  # as the checkpoint's JSON gives it back, to compare alike


def stamp(checkpoint: Path, config: dict) -> None:
    """Record in a checkpoint the config it was made under (TrainerCallback.on_save, main rank)."""
    from ..base.files import atomic_write

    atomic_write(Path(checkpoint) / STAMP, json.dumps({"config": config}, default=str, sort_keys=True))


def changes(before: dict, now: dict) -> list[str]:
    """`key: before -> now` for every value that differs."""
    keys = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    return [f"{k}: {before.get(k, '(none)')} -> {now.get(k, '(none)')}" for k in keys]


def last_checkpoint(out_dir: Path, cfg=None, data: str | None = None) -> str:
    """The newest checkpoint in this run directory that loads, holds everything a resume restores and was made
    under this config (any config when cfg is None); each newer one is named in a warning with why it is
    skipped. None: a ConfigError, naming what changed when the newest complete one is another config's. The run
    directory's config.yaml is no witness: a run of another config, killed before its first checkpoint, has
    written its own there beside the earlier run's checkpoints."""
    from ..config.errors import ConfigError

    folder = Path(out_dir) / "checkpoints"
    found = sorted(folder.glob("checkpoint-*[0-9]"), key=lambda p: int(p.name.rsplit("-", 1)[1]), reverse=True)
    now = config_of(cfg, data) if cfg is not None else None
    other, first_problem = None, None
    for checkpoint in found:
        problem = unreadable(checkpoint) or incomplete(checkpoint)
        if problem is None and now is not None:
            made = _flat(json.loads((checkpoint / STAMP).read_text()).get("config") or {})
            if diff := changes(made, now if DATA in made else {k: v for k, v in now.items() if k != DATA}):  # older stamps
                other = other or (checkpoint, diff)
                problem = f"made under another config ({'; '.join(diff[:4])}{'; ...' if len(diff) > 4 else ''})"
        if problem is None:
            return str(checkpoint)
        first_problem = first_problem or f"{checkpoint.name}: {problem}"
        log.warning("resume: skipping %s: %s", checkpoint, problem)
    if other:
        checkpoint, diff = other  # the newest complete one: the run a resume would have continued
        raise ConfigError("resume", True, f"the config changed since the run it would continue ({'; '.join(diff[:4])}"
                                          f"{'; ...' if len(diff) > 4 else ''}): no checkpoint in {folder} was made "
                                          "under this config; resume it unchanged, or train anew in another hydra.run.dir")
    raise ConfigError("resume", True, f"no complete checkpoint in {folder}" + (f" (newest {first_problem})" if first_problem
                                      else "") + ": point hydra.run.dir at the interrupted run's directory (it needs "
                                      "trainer.save_steps > 0)")


def _flat(tree, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; an empty mapping stays a value."""
    if isinstance(tree, dict) and tree:
        out = {}
        for key, value in tree.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: tree}
