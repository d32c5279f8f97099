"""Build the model (random init from the shipped architecture, or real weights), its tokenizer, and PEFT."""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
from pathlib import Path

import torch
from omegaconf import OmegaConf
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM,
                          AutoModelForSequenceClassification, AutoTokenizer, PretrainedConfig)

from src.config import ConfigError
from src.env import CACHE, Resolved

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
        conf = AutoConfig.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code)
    else:
        conf = AutoConfig.for_model(m.model_type, **OmegaConf.to_container(m.arch, resolve=True))
    if cfg.task.name == "classification":
        conf.num_labels = cfg.task.num_labels
    conf.use_cache = False  # the KV cache is for generation; in training it only costs memory
    return conf


def load_tokenizer(cfg):
    """The model directory's tokenizer, or None for random-init models (synthetic data needs none)."""
    m = cfg.model
    if not (m.pretrained or m.model_type == "auto"):
        return None
    tok = AutoTokenizer.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code)
    tok.padding_side = cfg.padding.side
    if tok.pad_token is None:
        # Common practice, and the loss-69 report's suspect: the diagnostics check pad == eos.
        log.warning("tokenizer has no pad token; using eos (%s) as pad", tok.eos_token)
        tok.pad_token = tok.eos_token
    return tok


def random_weights_dir(cfg, conf: PretrainedConfig, dtype: torch.dtype) -> Path:
    """Random-init weights saved once per architecture, for loaders that need weights on disk (4-bit
    quantisation happens inside from_pretrained)."""
    key = json.dumps({"task": cfg.task.name, "config": conf.to_dict(), "dtype": str(dtype)}, sort_keys=True)
    path = CACHE / "weights" / f"{cfg.model.name}-{cfg.task.name}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"
    if not (path / "config.json").exists():
        log.info("saving random-init weights once to %s", path)
        torch.manual_seed(cfg.trainer.seed)
        model = AUTO_CLASS[cfg.task.name].from_config(conf, dtype=dtype)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        model.save_pretrained(tmp)
        del model
        try:
            tmp.rename(path)  # atomic: a concurrent job (another torchrun rank) never sees half a checkpoint
        except OSError:  # another process got there first with the same weights
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def build_model(cfg, res: Resolved, conf: PretrainedConfig) -> torch.nn.Module:
    m, method = cfg.model, cfg.peft.method
    auto_class = AUTO_CLASS[cfg.task.name]
    if res.attention == "varlen":
        from src.packing import register_varlen

        register_varlen()
    kwargs = dict(config=conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    if method == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type=cfg.peft.quant_type,
            bnb_4bit_use_double_quant=cfg.peft.double_quant,
            bnb_4bit_compute_dtype=getattr(torch, cfg.peft.compute_dtype))
        path = m.name_or_path if m.pretrained else random_weights_dir(cfg, conf, res.weights_dtype)
        model = auto_class.from_pretrained(path, device_map={"": torch.cuda.current_device()}, **kwargs)
    elif m.pretrained or m.model_type == "auto":
        model = auto_class.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code, **kwargs)
    else:
        torch.manual_seed(cfg.trainer.seed)
        with torch.device(res.device):  # initialise in place on the GPU: seconds, not minutes, for 4B params
            model = auto_class.from_config(conf, dtype=res.weights_dtype, attn_implementation=res.attention)
    apply_init(model, cfg.model.init)
    if method != "none":
        model = add_adapters(cfg, res, model)
    if cfg.padding.strategy == "packed" and cfg.task.name == "classification":
        from src.packing import pool_per_sequence

        pool_per_sequence(model)
    return model


def add_adapters(cfg, res: Resolved, model: torch.nn.Module) -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=cfg.peft.r, lora_alpha=cfg.peft.alpha, lora_dropout=cfg.peft.dropout,
                      target_modules=cfg.peft.target_modules, task_type=PEFT_TASK[cfg.task.name])
    # autocast_adapter_dtype=True (peft's default) keeps adapters fp32 under bf16 weights: each adapter matmul
    # then runs in fp32 or casts; adapter_dtype=auto leaves them in the weights' dtype.
    model = get_peft_model(model, lora, autocast_adapter_dtype=cfg.peft.adapter_dtype == "float32")
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
