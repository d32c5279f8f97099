"""The compile options' checks, run at startup with the trainer group's: trainer.inductor's options against torch's
own (key, type, a did-you-mean) and trainer.compile_layers_once against the torch release it runs on."""
from __future__ import annotations

import importlib.metadata

from omegaconf import DictConfig

from .errors import ConfigError


def layers_once_check(cfg: DictConfig) -> None:
    """trainer.compile_layers_once: a whole-model compile's option, refused where torch would not use the regions or
    would fail on them. Gradient checkpointing wraps each layer's call, and torch then inlines the layers (no region
    was seen on torch 2.11 or 2.13). Torch 2.11 fails comparing two layers' graphs that hold an autograd.Function
    (KeyError 'example_value' in dynamo, at the first step: seen with the fused LoRA linear, bitsandbytes' 4-bit
    layers and a plain Function); 2.13 compiles them (2.12 was not tried)."""
    tr = cfg.trainer
    if not (tr.torch_compile and tr.compile_scope == "model"):
        raise ConfigError("trainer.compile_layers_once", True, "for a whole-model compile: add trainer.torch_compile=true "
                          "trainer.compile_scope=model (regional compile already compiles one layer for all)")
    if torch_release() < (2, 8):
        raise ConfigError("trainer.compile_layers_once", True, f"needs torch >= 2.8 (torch.compiler.nested_compile_region); "
                          f"this is {torch_release_text()}")
    if tr.gradient_checkpointing:
        raise ConfigError("trainer.compile_layers_once", True, "checkpointing wraps each layer's call and torch then "
                          "inlines the layers: set trainer.gradient_checkpointing=false, or this off")
    functions = [way_out for on, way_out in ((cfg.peft.fused, "peft.fused=false"),
                                             (cfg.precision.fp8 != "none", "precision=bf16"),
                                             (cfg.peft.method == "qlora", "peft=lora"),
                                             (tr.use_liger_kernel, "trainer.use_liger_kernel=false")) if on]
    if functions and torch_release() < (2, 13):
        raise ConfigError("trainer.compile_layers_once", True, f"torch {torch_release_text()} can't reuse a layer graph "
                          f"that holds an autograd Function (needs torch >= 2.13): {', '.join(functions)}, or this off")


def torch_release() -> tuple:
    """torch's (major, minor), read from its metadata: no import of torch while a config is checked. A version it
    can't read counts as (0, 0), the oldest."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(torch_release_text()).release[:2]
    except InvalidVersion:
        return 0, 0


def torch_release_text() -> str:
    return importlib.metadata.version("torch")


def inductor_options_check(tr: DictConfig) -> None:
    """trainer.inductor: each key one of torch._inductor.config's (dotted for its sections, e.g. triton.cudagraphs),
    its value of that option's type where the option has one, on a run inductor compiles. Imports torch, so only
    when the knob is set."""
    options = flat_inductor_options(tr)
    if not options:  # only empty sections ({triton: {}}): nothing to set
        return
    if not tr.torch_compile or tr.compile_backend != "inductor":
        key, value = next(iter(options.items()))
        raise ConfigError(f"trainer.inductor.{key}", value, "an option of inductor's compiles: needs "
                          "trainer.torch_compile=true and trainer.compile_backend=inductor")
    defaults = inductor_defaults()
    for key, value in options.items():
        if key not in defaults:
            import difflib

            near = difflib.get_close_matches(key, list(defaults), n=1)
            raise ConfigError(f"trainer.inductor.{key}", value, "not a torch._inductor.config option"
                              + (f"; did you mean trainer.inductor.{near[0]}?" if near else ""))
        kinds, words = _INDUCTOR_TYPES.get(type(defaults[key]), (None, ""))
        if kinds and (not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds):  # True is an int too
            raise ConfigError(f"trainer.inductor.{key}", value, f"must be {words}, as its default ({defaults[key]!r})")


# an option's type, from its default: what values it takes and how the error names them (a default of another kind,
# None or one torch computes at import, takes any value)
_INDUCTOR_TYPES = {bool: ((bool,), "true or false"), int: ((int,), "an integer"), float: ((int, float), "a number"),
                   str: ((str,), "a string"), list: ((list,), "a list"), dict: ((dict,), "a mapping")}


def inductor_defaults() -> dict:
    """Every torch._inductor.config option (get_config_copy leaves some out) with its default."""
    import torch._inductor.config as inductor_config

    entries = getattr(inductor_config, "_config", None)
    if isinstance(entries, dict):
        return {key: getattr(entry, "default", None) for key, entry in entries.items()}
    return inductor_config.get_config_copy()


def flat_inductor_options(tr: DictConfig) -> dict:
    """trainer.inductor as torch._inductor.config's flat keys and plain values: the command line's
    trainer.inductor.triton.x=1 arrives nested, as {"triton": {"x": 1}}, while an option whose value is a mapping
    (post_grad_fusion_options={...}) stays one. Imports torch only when the knob is set."""
    from omegaconf import OmegaConf

    given = tr.get("inductor") or {}
    if not given:
        return {}
    tree = OmegaConf.to_container(given, resolve=True) if OmegaConf.is_config(given) else dict(given)
    options = inductor_defaults()

    def flat(node, prefix=""):
        for key, value in node.items():
            if isinstance(value, dict) and f"{prefix}{key}" not in options:
                yield from flat(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}", value
    return dict(flat(tree))

