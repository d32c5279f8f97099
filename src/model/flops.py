"""Model FLOPs per token, counted from the model's own matmul layers, and the GPU peak table for MFU.

Method (PaLM appendix B, nanoGPT estimate_mfu, torchtitan): every matmul weight W costs 2|W| FLOPs per
token forward, 2|W| for the input gradient, and 2|W| more for its weight gradient when W is trained.
So a full fine-tune costs 6N and LoRA 4N + 6N_adapter. The embedding lookup is no matmul; a tied LM head
is a matmul and counts once. Attention scores and values add 12 * layers * heads * head_dim * seq per
token (fwd + bwd, no causal halving); they have no weights, so LoRA doesn't shrink them. Gradient
checkpointing recomputes the forward: hardware FLOPs (HFU) add 2N + 4 * layers * heads * head_dim * seq.
"""
from __future__ import annotations

import torch

# Dense tensor-core peaks (TFLOP/s, no sparsity) from vendor datasheets: bf16/fp16 under autocast, tf32 when
# fp32 matmuls may use TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32), fp32 otherwise. A card
# without TF32 (V100, T4) has None there: its fp32 matmuls stay on the fp32 units.
PEAK_TFLOPS = {
    "H200": {"bf16": 989.0, "tf32": 494.7, "fp32": 67.0},
    "H100": {"bf16": 989.0, "tf32": 494.7, "fp32": 67.0},  # SXM; the PCIe card is below
    "H100 PCIE": {"bf16": 756.0, "tf32": 378.0, "fp32": 51.0},
    "A100": {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5},
    "L40S": {"bf16": 362.0, "tf32": 183.0, "fp32": 91.6},
    "A10G": {"bf16": 125.0, "tf32": 62.5, "fp32": 31.2},
    "L4": {"bf16": 121.0, "tf32": 60.0, "fp32": 30.3},
    "RTX 4090": {"bf16": 165.0, "tf32": 82.6, "fp32": 82.6},
    "RTX 3090": {"bf16": 71.0, "tf32": 35.6, "fp32": 35.6},
    "V100": {"bf16": 125.0, "tf32": None, "fp32": 15.7},  # no bf16: fp16 tensor cores
    "T4": {"bf16": 65.0, "tf32": None, "fp32": 8.1},
}


def peak_tflops(device_name: str, amp: str, override: float | None = None, tf32: bool = False) -> float | None:
    """The card's dense peak for the math the matmuls actually use; None where the card is unknown (CPU)."""
    if override:
        return override
    name = device_name.upper()
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):  # "H100 PCIE" before "H100"
        if key in name:
            peaks = PEAK_TFLOPS[key]
            if amp in ("bf16", "fp16"):
                return peaks["bf16"]
            return peaks["tf32"] if tf32 and peaks["tf32"] else peaks["fp32"]
    return None


def _is_matmul(module: torch.nn.Module) -> bool:
    # bitsandbytes' Linear4bit subclasses nn.Linear; peft's LoRA wrappers hold nn.Linear children.
    return isinstance(module, torch.nn.Linear)


def matmul_params(model: torch.nn.Module) -> tuple[int, int]:
    """(frozen, trainable) matmul weight counts, from in_features * out_features of every Linear."""
    frozen = trainable = 0
    for module in model.modules():
        if _is_matmul(module):
            n = module.in_features * module.out_features
            if module.weight.requires_grad:
                trainable += n
            else:
                frozen += n
    return frozen, trainable


def matmul_shapes(model: torch.nn.Module) -> list[tuple[int, int, int, bool, bool]]:
    """(in_features, out_features, count, trained, fp8) of the model's matmuls, LoRA's rank-r adapters left out:
    the GEMMs a step can't do without, whose speed on this card is the run's ceiling (src/machine/ceiling.py)."""
    counts: dict[tuple, int] = {}
    for name, module in model.named_modules():
        # peft keeps a frozen copy of a trained head (original_module) that the forward never calls
        if _is_matmul(module) and ".lora_" not in name and ".original_module" not in name:
            fp8 = module.weight.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
            key = (module.in_features, module.out_features, bool(module.weight.requires_grad), fp8)
            counts[key] = counts.get(key, 0) + 1
    return [(k, n, count, trained, fp8) for (k, n, trained, fp8), count in sorted(counts.items())]


def micro_batch_tokens(cfg, lengths: dict) -> int:
    """Token rows one micro-batch's matmuls process: the budget when packed, else rows x their padded width."""
    if cfg.padding.strategy == "packed" and cfg.batch.tokens:
        return int(cfg.batch.tokens)
    width = cfg.data.max_length if cfg.padding.strategy == "max_length" else lengths["mean"]
    return int(cfg.batch.size * width)


def attention_shape(conf) -> tuple[int, int]:
    """(layers, heads * head_dim) of the attention blocks; encoder-decoders count every block."""
    if getattr(conf, "is_encoder_decoder", False):
        # BART's and Marian's names, or T5's (num_layers, num_decoder_layers; heads x d_kv wide, which need not be
        # d_model): a T5 script's report was lost to an AttributeError here
        enc = getattr(conf, "encoder_layers", None) or conf.num_layers
        dec = getattr(conf, "decoder_layers", None) or getattr(conf, "num_decoder_layers", None) or enc
        width = conf.num_heads * conf.d_kv if getattr(conf, "d_kv", None) else conf.d_model
        # encoder self, decoder self and decoder cross attention
        return enc + 2 * dec, width
    heads = conf.num_attention_heads
    head_dim = getattr(conf, "head_dim", None) or conf.hidden_size // heads
    return conf.num_hidden_layers, heads * head_dim


def checkpointed_share(model: torch.nn.Module) -> float:
    """The share of decoder layers that recompute their forward in the backward: transformers'
    `activation_checkpointing_kwargs={"every_n_layers": 2}` checkpoints half of them. 1.0 where no layer shows its
    flag on yet (checkpointing asked for, turned on by train() later)."""
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError:  # an older transformers: checkpointing is all or nothing
        return 1.0
    flags = [bool(m.gradient_checkpointing) for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    return sum(flags) / len(flags) if any(flags) else 1.0


def flops_per_token(model: torch.nn.Module, conf, seq: float, gradient_checkpointing: bool = False,
                    checkpoint_every: int = 1) -> dict:
    """Model FLOPs (MFU) and hardware FLOPs (HFU) per real token, at mean attended length `seq`; under checkpointing
    the recomputed forward of the layers that checkpoint counts toward HFU: every `checkpoint_every`-th layer
    (the runner's trainer.checkpoint_every, set on the layers only once training begins), or as the layers' own
    flags say (checkpointed_share: transformers' every_n_layers)."""
    frozen, trainable = matmul_params(model)
    layers, width = attention_shape(conf)
    attn_fwd = 4 * layers * width * seq
    model_flops = 4 * frozen + 6 * trainable + 3 * attn_fwd
    recompute = 0.0 if not gradient_checkpointing else \
        -(-layers // checkpoint_every) / layers if checkpoint_every > 1 else checkpointed_share(model)
    hardware = model_flops + recompute * (2 * (frozen + trainable) + attn_fwd)
    return {"per_token": float(model_flops), "per_token_hardware": float(hardware),
            "matmul_params_frozen": frozen, "matmul_params_trainable": trainable, "seq": float(seq)}


def forward_per_token(model: torch.nn.Module, conf, seq: float) -> float:
    """A forward alone (no grad, no backward), per token at mean attended length `seq`: a reference model scoring
    the batch (src/measure/forwards.py)."""
    frozen, trainable = matmul_params(model)
    layers, width = attention_shape(conf)
    return float(2 * (frozen + trainable) + 4 * layers * width * seq)
