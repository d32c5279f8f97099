"""The base beside a LoRA adapter trained on random weights, so that final/ is a result a user can load.

An adapter on pretrained weights names its base (adapter_config.json's base_model_name_or_path: the model
directory or hub id). On random weights (model.pretrained=false) that base exists nowhere but in the run's
memory, and rebuilding it from the seed is fragile: on a GPU the init draws from the CUDA generator, whose
stream differs by device and library version. So where it is small (BASE_CAP_MB) the base is written to
final/base/ and the adapter points at it; where it is not, the report carries a one-line rebuild recipe.
"""
from __future__ import annotations

import copy
import json
import logging
import shutil
from pathlib import Path

import torch

from ..base import ranks

log = logging.getLogger(__name__)
BASE_CAP_MB = 100  # a tiny or toy model's base is a few MB; a 4B model's is 8 GB a run, too much to keep silently


def random_base(cfg) -> bool:
    """A LoRA adapter whose base was initialised here (not read from a directory or the hub). QLoRA's random
    base is 4-bit and built by hand (src/model/build.py): no from_pretrained reads it back, so it gets the recipe."""
    m = cfg.model
    return cfg.peft.method != "none" and not (m.pretrained or m.model_type == "auto")


def base_size_mb(model) -> float:
    """The base's weights on disk: every parameter but the adapters' and peft's trained copies of whole modules."""
    skip = ("lora_", "modules_to_save.")
    return sum(p.numel() * p.element_size() for n, p in model.named_parameters() if not any(s in n for s in skip)) / 2**20


def original_base(peft_model):
    """A copy of the base as it was before training: peft's trained copy of a whole module (the classifier head,
    modules_to_save) swapped back for the untouched original, then the LoRA layers taken out unmerged."""
    from peft.utils.other import ModulesToSaveWrapper

    clone = copy.deepcopy(peft_model)
    for name, module in list(clone.named_modules()):
        if isinstance(module, ModulesToSaveWrapper):
            parent, _, child = name.rpartition(".")
            setattr(clone.get_submodule(parent), child, module.original_module)
    return clone.unload()


def recipe(cfg, model, device: str, why: str) -> str:
    """One line that rebuilds the random base; the adapter's own weights (head included) go on top of it."""
    m = cfg.model
    heads = f", num_labels={model.config.num_labels}" if cfg.task.name == "classification" else ""
    dtype = next(p.dtype for n, p in model.named_parameters() if "lora_" not in n)  # the draws depend on it
    dtype = "" if dtype == torch.float32 else f", dtype={dtype}"
    auto = {"classification": "AutoModelForSequenceClassification", "causal_lm": "AutoModelForCausalLM",
            "seq2seq": "AutoModelForSeq2SeqLM"}[cfg.task.name]
    return (f"not saved ({why}); rebuild: torch.manual_seed({cfg.trainer.seed}); with torch.device('{device}'): "
            f"base = {auto}.from_config(AutoConfig.for_model('{m.model_type}', **model.arch from config.yaml{heads}){dtype}) "
            f"- the same weights only on the same device type, torch and transformers"
            + (" (CUDA-seeded)" if device.startswith("cuda") else ""))


def _check_loads(cfg, path: Path) -> None:
    """from_pretrained fills a weight it doesn't find with a fresh random one and only warns: a base saved under
    other names (a lever that swapped modules) would load as a different model. Loaded back once (it is small)."""
    from ..model.build import AUTO_CLASS

    _, info = AUTO_CLASS[cfg.task.name].from_pretrained(str(path), output_loading_info=True)
    wrong = {k: v for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    if wrong:
        raise ValueError(f"the saved base does not load as its architecture: {wrong}")


def keep_base(cfg, trainer, partial: Path, final: Path) -> str:
    """Write the random base into partial/base (renamed to final/base with it) and point the adapter at
    final/base; or say why not and how to rebuild it. Returns what the report's saved.base says."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    device = str(next(model.parameters()).device.type)
    size = base_size_mb(model)
    if cfg.peft.method == "qlora":
        return recipe(cfg, model, device, "a 4-bit random base has no from_pretrained")
    if ranks.world_size() > 1:  # FSDP holds a shard a rank; a gather of the whole base is the size the cap avoids
        return recipe(cfg, model, device, "trained in several processes")
    if size > BASE_CAP_MB:
        return recipe(cfg, model, device, f"{size:,.0f} MB > the {BASE_CAP_MB} MB cap")
    if cfg.precision.fp8 != "none":  # its base linears hold fp8 copies under other names: no checkpoint reads them
        return recipe(cfg, model, device, "precision.fp8 replaced its linear layers")
    try:
        original_base(model).save_pretrained(str(partial / "base"))
        _check_loads(cfg, partial / "base")
    except Exception as exc:  # a lever's patched module unload doesn't know: the adapter is still the result
        log.warning("the random base was not saved beside the adapter: %s: %s", type(exc).__name__, exc)
        shutil.rmtree(partial / "base", ignore_errors=True)
        return recipe(cfg, model, device, f"{type(exc).__name__}: {exc}")
    adapter = partial / "adapter_config.json"
    settings = json.loads(adapter.read_text())
    settings["base_model_name_or_path"] = str(final / "base")  # where it will be once partial is renamed to final
    adapter.write_text(json.dumps(settings, indent=2, sort_keys=True))
    return str(final / "base")
