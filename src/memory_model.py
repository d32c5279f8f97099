"""Peak GPU memory of a training step, predicted before the first step.

    peak = weights + trainable state (grads + AdamW's two moments) + activations + a fixed workspace

Weights and trainable state are counted from the built model. Activations are what autograd keeps for
backward: they are traced, not guessed. One forward of small copies of the model (1 and 2 decoder layers,
two sequence lengths), built like the real one (same peft, dtypes, attention, autocast, checkpointing),
runs under saved_tensors_hooks. Every saved tensor's storage is counted once, parameters excluded. The
four traces separate bytes per token per layer, per token outside the layers (embeddings, head, logits),
and per-step constants. Those scale to the real depth and to the widest micro-batch the run will see.
Attention kernels that keep a seq x seq matrix (eager) are quadratic, so the linear fit is exact for sdpa,
flash and flex only.
"""
from __future__ import annotations

import copy
import logging

import torch

log = logging.getLogger(__name__)
WORKSPACE_GB = 0.5  # CUDA context allocations torch counts (cuBLAS workspaces, autotune buffers): a rough allowance
TRACE_TOKENS = (64, 128)


def _layers_key(conf) -> str:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if hasattr(conf, key):
            return key
    raise ValueError(f"no layer count in {type(conf).__name__}")


def _saved_bytes(model, batch: dict, amp: str, device: str) -> int:
    """Bytes of the distinct storages autograd saves in one forward (parameters are not activations)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), storage.nbytes())
        return t

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        out = model(**batch)
    del out
    return sum(seen.values())


def _batch(task: str, tokens: int, device: str, num_labels: int) -> dict:
    ids = torch.randint(3, 100, (1, tokens), device=device)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if task == "classification":
        batch["labels"] = torch.zeros(1, dtype=torch.long, device=device)
    elif task == "causal_lm":
        batch["labels"] = ids.clone()
    else:
        batch["decoder_input_ids"] = ids[:, : max(1, tokens // 4)]
        batch["labels"] = ids[:, : max(1, tokens // 4)].clone()
    return batch


def trace_activations(cfg, res, conf) -> dict:
    """Activation bytes per token per layer, per token outside the layers, and fixed, from four traces."""
    from src import models

    key = _layers_key(conf)
    small = copy.deepcopy(cfg)
    small.model.pretrained = False  # weight values don't change what is saved
    small.peft.method = "lora" if cfg.peft.method == "qlora" else cfg.peft.method  # traced in the compute dtype
    small.model.init.hidden_norm = None
    small.model.init.head_init = "default"
    saved = {}
    for layers in (1, 2):
        c = copy.deepcopy(conf)
        setattr(c, key, layers)
        if cfg.task.name == "classification":  # the vocabulary only sizes the embedding: nothing saved scales with it
            c.vocab_size, c.pad_token_id = min(c.vocab_size, 1024), 0
        if hasattr(c, "decoder_layers"):  # encoder-decoder: both stacks
            c.encoder_layers = c.decoder_layers = layers
        if getattr(c, "layer_types", None):
            c.layer_types = c.layer_types[:layers]
        model = models.build_model(small, res, c)
        model.train()
        if cfg.trainer.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if getattr(model, "enable_input_require_grads", None):
                model.enable_input_require_grads()
        for tokens in TRACE_TOKENS:
            saved[layers, tokens] = _saved_bytes(model, _batch(cfg.task.name, tokens, res.device, c.num_labels),
                                                 res.amp, res.device)
        del model
    t1, t2 = TRACE_TOKENS
    per_token = {n: (saved[n, t2] - saved[n, t1]) / (t2 - t1) for n in (1, 2)}
    fixed = {n: saved[n, t1] - per_token[n] * t1 for n in (1, 2)}
    return {"per_token_per_layer": per_token[2] - per_token[1], "per_token_outside": 2 * per_token[1] - per_token[2],
            "fixed_per_layer": fixed[2] - fixed[1], "fixed_outside": 2 * fixed[1] - fixed[2],
            "layers": getattr(conf, key)}


def weights_and_state(model) -> dict:
    """Bytes of every parameter and buffer, and of the trainable ones' gradients and AdamW moments (torch's
    AdamW keeps both moments in the parameter's dtype)."""
    weights = sum(p.untyped_storage().nbytes() for p in model.parameters()) + \
        sum(b.untyped_storage().nbytes() for b in model.buffers())
    trainable = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return {"weights": weights, "grads": trainable, "optimizer": 2 * trainable}


def widest_tokens(cfg, lengths: dict) -> int:
    """Tokens in the largest micro-batch the run can see: the activation peak follows the widest batch."""
    p, d = cfg.padding, cfg.data
    if p.strategy == "packed" and cfg.batch.tokens:
        return cfg.batch.tokens  # every micro-batch is exactly the budget
    width = d.max_length if p.strategy == "max_length" else min(d.max_length, int(lengths["max"]))
    if p.pad_to_multiple_of and p.strategy != "packed":
        width = -(-width // p.pad_to_multiple_of) * p.pad_to_multiple_of
    return cfg.batch.size * width


def before_training(cfg, res, conf, model, lengths: dict) -> dict | None:
    """The prediction a GPU run reports (measure.predict_memory). A model the trace can't handle costs a
    warning, never the run."""
    if res.device != "cuda" or not cfg.measure.predict_memory:
        return None
    try:
        return predict(cfg, res, conf, model, widest_tokens(cfg, lengths))
    except Exception as exc:
        log.warning("memory prediction skipped: %s: %s", type(exc).__name__, exc)
        return None
    finally:
        torch.cuda.reset_peak_memory_stats()  # the traced copies are not the run's peak


def predict(cfg, res, conf, model, widest_tokens: int) -> dict:
    """Predicted peak allocated memory (GB) for micro-batches of up to `widest_tokens` tokens."""
    acts = trace_activations(cfg, res, conf)
    fixed = weights_and_state(model)
    layers = acts["layers"]
    if res.distributed == "fsdp":  # each rank holds 1/N of the state, plus about one gathered layer at a time
        fixed = {k: v / res.world_size + (v / layers if k == "weights" else 0) for k, v in fixed.items()}
    per_token = acts["per_token_per_layer"] * layers + acts["per_token_outside"]
    if cfg.trainer.gradient_checkpointing:
        full = copy.deepcopy(cfg)
        full.trainer.gradient_checkpointing = False
        full_layer = trace_activations(full, res, conf)["per_token_per_layer"]
        # checkpoint_every=k keeps layers 0, k, 2k, ... checkpointed (train.PartialCheckpointing); the rest
        # keep everything. Backward recomputes one layer at a time: its full activations come back on top.
        kept_full = layers - -(-layers // cfg.trainer.checkpoint_every)
        per_token += (full_layer - acts["per_token_per_layer"]) * kept_full + full_layer
    activations = per_token * widest_tokens + acts["fixed_per_layer"] * layers + acts["fixed_outside"]
    parts = {**fixed, "activations": activations, "workspace": WORKSPACE_GB * 2**30}
    gb = {k: v / 2**30 for k, v in parts.items()}
    capacity = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**30 \
        if res.device == "cuda" else None
    capacity = min(capacity, cfg.gpu.memory_cap_gb or capacity) if capacity else None
    if capacity and sum(gb.values()) > capacity:
        log.warning("predicted peak %.1f GB exceeds the %.1f GB this process may use: expect OOM "
                    "(smaller batch.size, gradient checkpointing, or peft=qlora)", sum(gb.values()), capacity)
    return {"peak_allocated": sum(gb.values()), "parts": gb, "widest_tokens": widest_tokens,
            "activation_bytes_per_token": per_token}
