"""The memory model's trace, remembered across runs of the same shapes.

The trace builds 1- and 2-layer copies of the model and runs them (compiled where the run compiles): on one H200
at Qwen3-4B's width it was most of the time to step 1, 26-40 s cold and 7.5-16 s warm (experiments/speed,
results/h200_fp8full_call1.jsonl, timing_s.build_parts.memory_model). What it measures depends on the model, the
adapters, the precision, the kernels and the batch, not on seeds, learning rates, step counts or loggers. So a
second job of a sweep at the same shapes (or a rerun) reads the first one's trace from TRAINSWEEP_CACHE/memory.

The key is everything of the resolved config except the keys listed below (a key missed here costs a cache miss,
never a wrong prediction), the model's HF config, what `auto` became on this machine, the card, the versions of
torch, transformers and peft, this package's own source (a fixed trace or model build makes new traces), and the
widest batch's tensors byte for byte."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from omegaconf import OmegaConf

from ..base import files

# What changes no activation or workspace byte of one forward and backward: the optimizer's schedule and state,
# seeds (a random base's values, the data's order: the widest batch itself is in the key), step counts, saving,
# logging and measuring. The weights and optimizer state are never taken from here: they are counted on the model.
NOT_MEMORY = {
    "trainer": ("max_steps", "epochs", "lr", "warmup_steps", "scheduler", "weight_decay", "max_grad_norm", "optim",
                "logging_steps", "eval_steps", "generation_max_length", "generation_num_beams", "save_steps",
                "save_total_limit", "save_final", "seed"),
    "model": ("lr", "allow_large_on_cpu", "init"),
    "data": ("seed", "size", "eval_size", "max_train_samples", "max_eval_samples", "num_proc"),
    "peft": ("adapters_on_device",),  # where the adapters are created, not what they keep
}
NOT_MEMORY_GROUPS = ("logger", "measure", "gpu", "diagnostics", "mode", "rerun", "resume", "repeat", "baseline", "sweep")


def key(cfg, res, conf, batch: dict) -> str:
    """The trace's identity: equal keys give equal traces on this card."""
    import peft
    import transformers

    config = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    for group in NOT_MEMORY_GROUPS:
        config.pop(group, None)
    for group, names in NOT_MEMORY.items():
        for name in names:
            (config.get(group) or {}).pop(name, None)
    h = hashlib.blake2b(digest_size=12)
    for source in sorted(Path(__file__).parent.glob("*.py")):  # the trace, the copies' build, the paths they take
        h.update(source.read_bytes())
    card = torch.cuda.get_device_name() if res.device == "cuda" else res.device
    h.update(json.dumps({"config": config, "model": conf.to_dict(), "resolved": {k: str(v) for k, v in vars(res).items()},
                         "card": card, "versions": [torch.__version__, transformers.__version__, peft.__version__]},
                        sort_keys=True, default=str).encode())
    for name in sorted(batch):
        value = batch[name]
        if isinstance(value, torch.Tensor):
            h.update(f"{name}:{tuple(value.shape)}:{value.dtype}".encode())
            h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            h.update(f"{name}={value!r}".encode())
    return h.hexdigest()


def remembered(trace_key: str, trace) -> tuple[dict, Path | None]:
    """(the trace, the file it was read from, or None when `trace()` ran): files.remembered under CACHE/memory."""
    return files.remembered("memory", trace_key, trace,
                            usable=lambda v: isinstance(v, dict) and {"per_layer", "outside", "layers", "workspace"} <= set(v))
