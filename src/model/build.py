"""Build the model (random init from the shipped architecture, or real weights) and PEFT."""
from __future__ import annotations

import logging
import math

import torch
from omegaconf import OmegaConf
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM,
                          AutoModelForSequenceClassification, PretrainedConfig)

from ..config.errors import ConfigError
from ..machine.env import Resolved
from .speed import apply_paths

log = logging.getLogger(__name__)

AUTO_CLASS = {
    "classification": AutoModelForSequenceClassification,
    "causal_lm": AutoModelForCausalLM,
    "seq2seq": AutoModelForSeq2SeqLM,
}
PEFT_TASK = {"classification": "SEQ_CLS", "causal_lm": "CAUSAL_LM", "seq2seq": "SEQ_2_SEQ_LM"}


def hf_config(cfg) -> PretrainedConfig:
    m = cfg.model
    if m.pretrained or m.model_type == "auto":
        try:
            # local_files_only: a directory or the local Hugging Face cache, never the network (nothing downloads at
            # run time; an uncached id answered after 28 s of retries where a machine had no route out)
            conf = AutoConfig.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:  # transformers' answer is a 30-line traceback
            raise ConfigError("model.name_or_path", m.name_or_path, _unloadable(m.name_or_path, exc)) from None
    else:
        conf = AutoConfig.for_model(m.model_type, **OmegaConf.to_container(m.arch, resolve=True))
    if cfg.task.name == "classification":  # unset: the data's count, which data.prepare gives the model
        conf.num_labels = cfg.task.num_labels or (cfg.data.labels if cfg.data.source == "synthetic" else 2)
    conf.use_cache = False  # the KV cache is for generation; in training it only costs memory
    return conf


# Over this a CPU run is tens of GB of RAM and minutes before its first step (Qwen3-4B: 20 GB, two silent minutes)
CPU_MAX_PARAMS = 1e9


def parameter_count(cfg, conf: PretrainedConfig) -> int:
    """The model's parameters from its config alone: built on the meta device (no memory, no init; ~1 s for 4B)."""
    with torch.device("meta"):
        model = AUTO_CLASS[cfg.task.name].from_config(conf, trust_remote_code=cfg.model.trust_remote_code)
    return parameter_counts(model)["total"]


def check_cpu_size(cfg, res: Resolved, conf: PretrainedConfig) -> None:
    """Refuse, before building it, a model over CPU_MAX_PARAMS that would be built on the CPU: one line with its
    size, the RAM it would take and the ways out, instead of minutes of silence and a full memory."""
    if res.device != "cpu" or cfg.model.allow_large_on_cpu:
        return
    try:
        n = parameter_count(cfg, conf)
    except Exception as exc:  # an architecture that won't build on the meta device: the guard never stops a run
        log.debug("no parameter count before building: %s", exc)
        return
    if n <= CPU_MAX_PARAMS:
        return
    size = torch.empty((), dtype=res.weights_dtype).element_size()
    dtype = str(res.weights_dtype).replace("torch.", "")
    full = cfg.peft.method == "none"  # a full fine-tune adds gradients and AdamW's two moments, each the weights' size
    ram = n * size * (4 if full else 1) / 2**30
    what = f"{dtype} weights, gradients and AdamW state" if full else f"{dtype} weights"
    shrink = "a smaller model" if cfg.model.pretrained or cfg.model.model_type == "auto" else \
        "shrink it (model.arch.num_hidden_layers=2 batch=2 debug=fast: a measured report in minutes)"
    raise ConfigError("model", cfg.model.name, f"{n / 1e9:.1f}B parameters on the CPU would take ~{ram:.0f} GB of RAM "
                      f"({what}, before activations) and minutes a step: {shrink}, use a GPU, "
                      "or model.allow_large_on_cpu=true to run it anyway")


def _unloadable(path: str, exc: Exception) -> str:
    """Why a model directory's config won't load, in one line."""
    import json
    import os

    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    conf = os.path.join(os.path.expanduser(path), "config.json")
    if not os.path.exists(os.path.expanduser(path)):  # a hub id: only the local cache can answer here
        from huggingface_hub.constants import HF_HUB_CACHE

        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (f"not a local directory, and not in the Hugging Face cache ({HF_HUB_CACHE}; trainsweep downloads "
                f"nothing at run time: {text[:160]}): download it once (`hf download {path}`) or give a local model "
                "directory")
    model_type = json.load(open(conf)).get("model_type") if os.path.isfile(conf) else None
    if model_type and model_type not in CONFIG_MAPPING_NAMES:
        return (f"{conf}: model_type {model_type!r} is unknown to transformers {transformers.__version__} "
                "(newer transformers, or model.trust_remote_code=true if the directory ships its code)")
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else 'could not load its config'}"


OUTPUT_HEADS = ("score", "lm_head", "classifier")  # transformers' quantiser keeps the output head in full precision too


def build_4bit(auto_class, conf: PretrainedConfig, res: Resolved, peft_cfg) -> torch.nn.Module:
    """QLoRA's 4-bit base for a random-init model, one layer at a time: the model is laid out on the meta device
    (buffers such as rotary frequencies are made for real on the GPU), then each module's weights are made on the
    GPU, given the model's own init, and every linear layer but the output head is swapped for bitsandbytes'
    Linear4bit, quantised as it lands, before the next is made. The peak is the 4-bit model plus one bf16 layer:
    SOLAR-10.7B fits a 24 GB card, where a full-width bf16 build (21.5 GB of weights) ran out of memory on it.
    (from_pretrained quantises only while loading, which meant 8 GB of random weights written to disk and read
    back: 139 s for Qwen3-4B on an H100.) Real weights keep from_pretrained's path."""
    import bitsandbytes as bnb
    from accelerate import init_empty_weights

    with init_empty_weights(include_buffers=False), torch.device(res.device):
        model = auto_class.from_config(conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    compute = getattr(torch, peft_cfg.compute_dtype)
    for parent in list(model.modules()):
        for name, module in list(parent.named_children()):
            if not any(p.is_meta for p in module.parameters(recurse=False)):
                continue
            for pname, p in module.named_parameters(recurse=False):
                setattr(module, pname, torch.nn.Parameter(torch.empty_like(p, device=res.device), p.requires_grad))
            model._init_weights(module)
            if isinstance(module, torch.nn.Linear) and name not in OUTPUT_HEADS:
                setattr(parent, name, _linear_4bit(bnb, module, compute, peft_cfg))
    model.tie_weights()  # a tied head was made apart from its embedding above; it shares it again
    left = [n for n, p in model.named_parameters() if p.is_meta]
    if left:  # a parameter registered on the model itself, outside any child module: not seen in practice
        raise RuntimeError(f"the 4-bit build left {left[:3]} unmade")
    model.is_loaded_in_4bit = True  # peft reads it to wrap Linear4bit layers with its 4-bit LoRA
    return model


def _linear_4bit(bnb, linear: torch.nn.Linear, compute: torch.dtype, peft_cfg) -> torch.nn.Module:
    quantized = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=linear.bias is not None,
                                  compute_dtype=compute, compress_statistics=peft_cfg.double_quant,
                                  quant_type=peft_cfg.quant_type, device="meta")
    quantized.weight = bnb.nn.Params4bit(linear.weight.data, requires_grad=False, quant_type=peft_cfg.quant_type,
                                         compress_statistics=peft_cfg.double_quant).to(linear.weight.device)
    if linear.bias is not None:
        quantized.bias = linear.bias
    del linear.weight  # the bf16 weight goes now, not when the build's list of modules does
    return quantized


def build_model(cfg, res: Resolved, conf: PretrainedConfig) -> torch.nn.Module:
    m, method = cfg.model, cfg.peft.method
    auto_class = AUTO_CLASS[cfg.task.name]
    if res.attention == "varlen":
        from .packed import register_varlen

        register_varlen()
    kwargs = dict(config=conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    if method == "qlora" and (m.pretrained or m.model_type == "auto"):
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type=cfg.peft.quant_type,
            bnb_4bit_use_double_quant=cfg.peft.double_quant,
            bnb_4bit_compute_dtype=getattr(torch, cfg.peft.compute_dtype))
        model = auto_class.from_pretrained(m.name_or_path, device_map={"": torch.cuda.current_device()},
                                           local_files_only=True, **kwargs)
    elif m.pretrained or m.model_type == "auto":
        model = auto_class.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code, local_files_only=True,
                                           **kwargs)
    else:
        torch.manual_seed(cfg.trainer.seed)
        if method == "qlora":
            model = build_4bit(auto_class, conf, res, cfg.peft)
        else:
            with torch.device(res.device):  # initialise in place on the GPU: seconds, not minutes, for 4B params
                model = auto_class.from_config(conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    apply_init(model, cfg.model.init, head_init(cfg))
    if method != "none":
        model = add_adapters(cfg, res, model)
    model.trainsweep_paths = apply_paths(cfg, model, res.device)  # the report reads it; the memory model's copies get the same
    if getattr(model, "trainsweep_adapters_on", None):
        model.trainsweep_paths["adapters_on_device"] = {"converted": sum(hasattr(m, "lora_A") for m in model.modules())}
    if cfg.padding.strategy == "packed" and cfg.task.name == "classification":
        from .packed import pool_per_sequence

        pool_per_sequence(model)
    return model


def add_adapters(cfg, res: Resolved, model: torch.nn.Module) -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=cfg.peft.r, lora_alpha=cfg.peft.alpha, lora_dropout=cfg.peft.dropout,
                      target_modules=cfg.peft.target_modules, task_type=PEFT_TASK[cfg.task.name])
    # autocast_adapter_dtype=True (peft's default) keeps adapters fp32 under bf16 weights: each adapter matmul
    # then runs in fp32 or casts; adapter_dtype=auto leaves them in the weights' dtype.
    # fp16 autocast needs fp32 trainable weights (below): peft's own casting then keeps the adapters' matmuls consistent
    fp32_adapters = cfg.peft.adapter_dtype == "float32" or res.amp == "fp16"
    base = next(model.parameters()).device
    if cfg.peft.adapters_on_device and base.type != "cpu":
        # peft creates each adapter on the CPU and then copies it to its base layer's device, one copy per LoRA
        # linear. Created where the base sits, LoRA's A is drawn from that device's random stream: the same seed
        # and distribution, other values. On an H100 it took 0.11-0.20 s off a full-depth build and step 1 tied
        # (experiments/speed), so it is off by default
        with torch.device(base):
            model = get_peft_model(model, lora, autocast_adapter_dtype=fp32_adapters)
        model.trainsweep_adapters_on = base.type
    else:
        model = get_peft_model(model, lora, autocast_adapter_dtype=fp32_adapters)
    if res.amp == "fp16":
        # The fp16 GradScaler refuses fp16 gradients; peft's copy of the classification head keeps the base's
        # dtype, so every trainable weight is moved to fp32 (they are ~1% of the model).
        for param in model.parameters():
            if param.requires_grad:
                param.data = param.data.float()
    return model


def _final_norm(model) -> torch.nn.Module:
    backbone = getattr(model, model.base_model_prefix, model)
    norm = getattr(backbone, "norm", None) or getattr(backbone, "final_layer_norm", None)
    if norm is None:
        raise ConfigError("model.init.hidden_norm", "set", f"no final norm found in {type(model).__name__}")
    return norm


def uncompiled(model):
    """The module a script compiled itself (`model = torch.compile(model)` before the Trainer), or the model: its
    class, config and adapters are the original's (the compiled wrapper reads as an unknown "OptimizedModule")."""
    from accelerate.utils import is_compiled_module

    return model._orig_mod if is_compiled_module(model) else model


def attention_is_causal(model) -> bool | None:
    """Whether the model's attention layers say they are causal (is_causal): False for an encoder (BERT's
    bidirectional attention), None where they don't say (BLOOM's alibi) or disagree."""
    said = {getattr(m, "is_causal") for m in model.modules() if isinstance(getattr(m, "is_causal", None), bool)}
    return next(iter(said)) if len(said) == 1 else (False if said else None)


def active_adapter(model) -> tuple[object | None, str | None]:
    """The config of the PEFT adapter that trains and its method's name (lora, adalora, prompt_tuning, ...); (None,
    None) for a model without adapters. A script's set_adapter("second") makes it the one, not the first added;
    several active adapters (a list) read as the first added."""
    adapters = getattr(model, "peft_config", None) or {}
    if not adapters:
        return None, None
    try:
        active = model.active_adapter
    except Exception:  # a PeftMixedModel, a model that only looks like a PeftModel
        active = None
    conf = adapters.get(active) if isinstance(active, str) else None
    conf = conf if conf is not None else next(iter(adapters.values()))
    return conf, str(getattr(conf.peft_type, "value", conf.peft_type)).lower()


def loss_regulariser(model) -> float:
    """The weight of a term the active PEFT adapter adds to each forward's loss whatever the batch holds (AdaLoRA's
    orthogonal regularisation): the step's gradient holds it once per micro-batch. 0 where none."""
    conf, method = active_adapter(model)
    return float(getattr(conf, "orth_reg_weight", 0) or 0) if method == "adalora" else 0.0


def random_weights(cfg) -> bool:
    """Random-init weights at the init's own scale: no pretrained weights and no deliberately set hidden-state
    scale (model.init.hidden_norm, which the loss-69 experiments set to a pretrained LM's)."""
    m = cfg.model
    return not (m.pretrained or m.model_type == "auto" or m.init.hidden_norm)


def head_init(cfg) -> str:
    """model.init.head_init with auto decided: a random-init classifier's head starts at zero, so every logit is 0
    and the loss starts at ln(num_labels) whatever the width (at std 0.02 the logits' std grows with the hidden
    size: ~1 at Qwen3-4B's). Real weights, or a pretrained scale emulated, keep theirs: the head may be a trained
    one, and the loss-69 experiments show what a fresh one does there."""
    if cfg.model.init.head_init != "auto":
        return cfg.model.init.head_init
    return "zero" if random_weights(cfg) and cfg.task.name == "classification" else "default"


def apply_init(model, init, head: str) -> None:
    """Initial scales. hidden_norm sets the final norm's gain so the hidden states reach that L2 norm (a pretrained
    LM's scale rather than a random init's: the loss-69 experiments); `head` (head_init's choice) re-initialises the
    classification head to zero, or to std 1/hidden-norm so its logits start with std ~1."""
    if init.hidden_norm:
        norm = _final_norm(model)
        with torch.no_grad():
            norm.weight.fill_(init.hidden_norm / math.sqrt(norm.weight.numel()))
    if head == "default":
        return
    layer = getattr(model, "score", None) or getattr(model, "classifier", None)
    if not isinstance(layer, torch.nn.Linear):
        if init.head_init == "auto":  # a head of another shape (BART's dense + out_proj) keeps its own init
            return
        raise ConfigError("model.init.head_init", init.head_init, f"no linear classification head in {type(model).__name__}")
    with torch.no_grad():
        if head == "zero":
            layer.weight.zero_()
        else:  # an RMSNorm's output has norm ~ ||gain||: scale the head to it
            layer.weight.normal_(0.0, 1.0 / float(_final_norm(model).weight.float().norm()))
        if layer.bias is not None:
            layer.bias.zero_()


def parameter_counts(model: torch.nn.Module) -> dict:
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"total": total, "trainable": trainable, "trainable_fraction": trainable / max(total, 1)}
