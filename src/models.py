"""Build the model (random init from the shipped architecture, or real weights) and PEFT."""
from __future__ import annotations

import logging
import math

import torch
from omegaconf import OmegaConf
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM,
                          AutoModelForSequenceClassification, PretrainedConfig)

from .config import ConfigError
from .env import Resolved

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
            conf = AutoConfig.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code)
        except (OSError, ValueError, KeyError) as exc:  # transformers' answer is a 30-line traceback
            raise ConfigError("model.name_or_path", m.name_or_path, _unloadable(m.name_or_path, exc)) from None
    else:
        conf = AutoConfig.for_model(m.model_type, **OmegaConf.to_container(m.arch, resolve=True))
    if cfg.task.name == "classification":
        conf.num_labels = cfg.task.num_labels
    conf.use_cache = False  # the KV cache is for generation; in training it only costs memory
    return conf


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
        return (f"not a local directory, and neither the Hugging Face cache ({HF_HUB_CACHE}) nor the hub gave it "
                f"({text[:160]}): download it once (`hf download {path}`) or give a local model directory")
    model_type = json.load(open(conf)).get("model_type") if os.path.isfile(conf) else None
    if model_type and model_type not in CONFIG_MAPPING_NAMES:
        return (f"{conf}: model_type {model_type!r} is unknown to transformers {transformers.__version__} "
                "(newer transformers, or model.trust_remote_code=true if the directory ships its code)")
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else 'could not load its config'}"


def quantize_4bit(model: torch.nn.Module, peft_cfg) -> None:
    """QLoRA's 4-bit base for a random-init model, in seconds: the model is built on the GPU in bf16 and every
    linear layer but the output head is swapped for bitsandbytes' Linear4bit, whose weight quantises as it lands
    on the GPU. (from_pretrained quantises only while loading, which meant 8 GB of random weights written to
    disk and read back: 139 s for Qwen3-4B on an H100.) Real weights keep from_pretrained's path."""
    import bitsandbytes as bnb

    compute = getattr(torch, peft_cfg.compute_dtype)
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if not isinstance(child, torch.nn.Linear) or name in ("score", "lm_head", "classifier"):
                continue  # transformers' quantiser keeps the output head in full precision too
            quantized = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                          compute_dtype=compute, compress_statistics=peft_cfg.double_quant,
                                          quant_type=peft_cfg.quant_type, device="meta")
            quantized.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False, quant_type=peft_cfg.quant_type,
                                                 compress_statistics=peft_cfg.double_quant).to(child.weight.device)
            if child.bias is not None:
                quantized.bias = child.bias
            setattr(module, name, quantized)
    model.is_loaded_in_4bit = True  # peft reads it to wrap Linear4bit layers with its 4-bit LoRA


def build_model(cfg, res: Resolved, conf: PretrainedConfig) -> torch.nn.Module:
    m, method = cfg.model, cfg.peft.method
    auto_class = AUTO_CLASS[cfg.task.name]
    if res.attention == "varlen":
        from .packing import register_varlen

        register_varlen()
    kwargs = dict(config=conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    if method == "qlora" and (m.pretrained or m.model_type == "auto"):
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type=cfg.peft.quant_type,
            bnb_4bit_use_double_quant=cfg.peft.double_quant,
            bnb_4bit_compute_dtype=getattr(torch, cfg.peft.compute_dtype))
        model = auto_class.from_pretrained(m.name_or_path, device_map={"": torch.cuda.current_device()}, **kwargs)
    elif m.pretrained or m.model_type == "auto":
        model = auto_class.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code, **kwargs)
    else:
        torch.manual_seed(cfg.trainer.seed)
        with torch.device(res.device):  # initialise in place on the GPU: seconds, not minutes, for 4B params
            model = auto_class.from_config(conf, dtype=res.weights_dtype, attn_implementation=res.attention)
        if method == "qlora":
            quantize_4bit(model, cfg.peft)
    apply_init(model, cfg.model.init)
    if method != "none":
        model = add_adapters(cfg, res, model)
    if cfg.padding.strategy == "packed" and cfg.task.name == "classification":
        from .packing import pool_per_sequence

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


def apply_init(model, init) -> None:
    """Deliberate initial scales, for the loss-69 experiments. hidden_norm sets the final norm's gain so the
    hidden states reach that L2 norm (a pretrained LM's scale rather than a random init's); head_init
    re-initialises the classification head to zero, or to std 1/hidden-norm so its logits start with std ~1."""
    if init.hidden_norm:
        norm = _final_norm(model)
        with torch.no_grad():
            norm.weight.fill_(init.hidden_norm / math.sqrt(norm.weight.numel()))
    if init.head_init == "default":
        return
    head = getattr(model, "score", None) or getattr(model, "classifier", None)
    if not isinstance(head, torch.nn.Linear):
        raise ConfigError("model.init.head_init", init.head_init, f"no linear classification head in {type(model).__name__}")
    with torch.no_grad():
        if init.head_init == "zero":
            head.weight.zero_()
        else:  # an RMSNorm's output has norm ~ ||gain||: scale the head to it
            head.weight.normal_(0.0, 1.0 / float(_final_norm(model).weight.float().norm()))
        if head.bias is not None:
            head.bias.zero_()


def parameter_counts(model: torch.nn.Module) -> dict:
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"total": total, "trainable": trainable, "trainable_fraction": trainable / max(total, 1)}
