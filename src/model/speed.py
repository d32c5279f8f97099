"""The model's speed paths, applied after it is built: FP8 for LoRA's frozen base matmuls and the fused LoRA
linear (both swap modules' math in place, before compile), regional compile of its decoder layers, and the
Liger kernels that fit the task."""
from __future__ import annotations

import contextlib
import types

import torch

from ..config.errors import ConfigError


def liger_kernels(task: str) -> dict | None:
    """Liger's kernels for the task. Its fused linear cross-entropy replaces the causal-LM forward (it reads
    lm_head): on a classifier only the layer kernels apply (RoPE, RMSNorm, SwiGLU)."""
    if task == "causal_lm":
        return None  # Liger's defaults: the layer kernels and the fused linear cross-entropy
    return {"rope": True, "rms_norm": True, "swiglu": True, "cross_entropy": False, "fused_linear_cross_entropy": False}


def decoder_layers(model: torch.nn.Module) -> list:
    """The model's decoder (and encoder) layers in forward order: transformers marks them as the modules
    gradient checkpointing wraps."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]


def compile_regions(model: torch.nn.Module, tr) -> int:
    """Regional compilation (torchtune's and accelerate's): every decoder layer compiled in place, the rest of the
    model (embeddings, head, loss) eager. The layers share their code, but torch guards on whether a layer's input
    requires grad: under LoRA the embeddings are frozen, so the first layer's input does not and its graph (no
    input gradient in its backward) is a second compile beside the one all the others share.
    `tr.compile_one_graph` makes the embeddings' output require grad, so one graph serves every layer: one
    layer's compile instead of two, for an input gradient of the first layer that nobody uses (on an H200 at
    Qwen3-4B's full depth the step's speed was a tie: experiments/speed). Returns the number of compiled layers."""
    layers = decoder_layers(model)
    if not layers:
        raise ConfigError("trainer.compile_scope", "regional", f"no decoder layers found in {type(model).__name__}: use compile_scope=model")
    if getattr(tr, "compile_one_graph", False) and frozen_input(model):
        model.enable_input_require_grads()
    for layer in layers:
        layer.compile(backend=tr.compile_backend, mode=tr.compile_mode)
    return len(layers)


def compile_layers_once(model: torch.nn.Module) -> int:
    """compile_scope=model with trainer.compile_layers_once: every decoder layer becomes one nested compile region
    (torch.compiler.nested_compile_region), so the whole-model compile compiles a layer's graph once and calls it
    for each layer, instead of inlining and compiling every layer apart. Eager runs (the checks' forwards) are
    unchanged. Needs torch >= 2.8 (checked at startup: src/config/compiling.py). Returns the number of layers marked."""
    layers = decoder_layers(model)
    if not layers:
        raise ConfigError("trainer.compile_layers_once", True, f"no decoder layers found in {type(model).__name__}")
    # one marked function for all layers: torch reuses a region's compiled graph per function it was given
    region = torch.compiler.nested_compile_region(_layer_forward)
    for layer in layers:
        layer.forward = types.MethodType(region, layer)  # the instance's own: the user's class stays as it was
    return len(layers)


def _layer_forward(layer, *args, **kwargs):
    return type(layer).forward(layer, *args, **kwargs)


@contextlib.contextmanager
def inductor_options(tr):
    """trainer.inductor's options patched into torch._inductor.config for one run. A sweep's jobs share the process
    (Hydra's basic launcher), and dynamo keeps compiled code across it without checking inductor's options: its
    caches are cleared as the options take hold and again as they go, so this run compiles under its options and
    the next one under its own. Inductor's on-disk caches key on the options."""
    from ..config.compiling import flat_inductor_options

    options = flat_inductor_options(tr)
    if not options:
        yield
        return
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    try:
        with inductor_config.patch(options):
            yield
    finally:
        torch._dynamo.reset()


def frozen_input(model: torch.nn.Module) -> bool:
    """Whether the first decoder layer's input arrives without grad: frozen input embeddings (LoRA, QLoRA)."""
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    return embeddings is not None and not any(p.requires_grad for p in embeddings.parameters())


# precision=fp8 changes what the model computes, not only how fast: the runner says so before training and the
# run's summary in a `numerics` row
FP8_NUMERICS = ("the frozen base's matmuls run in FP8, so the loss is not bf16's. At full depth on an H200 (random "
                "weights) its curve stayed within bf16's seed-to-seed spread on a task that learns, but behind "
                "bf16's at every logged step while the loss fell; on a run that memorised, its final loss was higher "
                "than bf16's on both seeds (experiments/speed, FP8 at full depth): check your eval metric against a "
                "precision=bf16 run")


def apply_paths(cfg, model: torch.nn.Module, device: str) -> dict:
    """precision.fp8 and peft.fused on a built peft model, in that order (the fused path calls an FP8 base as
    it is). Returns what each did, for the report: layers converted, and layers left alone with why."""
    out = {}
    if cfg.precision.fp8 != "none":
        from .fp8 import fp8_supported, to_fp8

        ok, why = fp8_supported(device)
        if not ok:
            raise ConfigError("precision.fp8", cfg.precision.fp8, why)
        out["fp8"] = {"scaling": str(cfg.precision.fp8), **to_fp8(model, scaling=str(cfg.precision.fp8))}
    if cfg.peft.fused:
        from .fused_lora import fuse_lora

        out["fused_lora"] = fuse_lora(model)
    return out
