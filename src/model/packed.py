"""How a model reads padding-free batches (src/data/packing.py makes them).

Attention reads the sequence boundaries without a dense mask: `attention=varlen` is PyTorch's own
variable-length flash attention (torch.nn.attention.varlen), registered with transformers'
AttentionInterface. On sdpa or eager, transformers rebuilds a block-diagonal mask from position_ids: the
same numbers, the slow reference. A classifier pools each sequence at its own last token and scores one loss
per sequence.
"""
from __future__ import annotations

import inspect
import types

import torch


# -- attention ----------------------------------------------------------------------------------------
VARLEN = "varlen"
_causal = None


def _varlen_kwargs() -> dict:
    """Causal masking and GQA as this torch release spells them (2.11: window_size, GQA implied; later:
    enable_gqa too; earlier: is_causal)."""
    from torch.nn.attention.varlen import varlen_attn

    params = inspect.signature(varlen_attn).parameters
    kw = {"window_size": (-1, 0)} if "window_size" in params else {"is_causal": True}
    if "enable_gqa" in params:
        kw["enable_gqa"] = True
    return kw


def varlen_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention signature over torch's varlen flash kernel. query (B, H, T, D), key/value
    (B, Hkv, T, D); sequences from cu_seq_lens_q (a batch without them: each row one sequence)."""
    from torch.nn.attention.varlen import varlen_attn

    global _causal
    if _causal is None:
        _causal = _varlen_kwargs()
    b, h, t, d = query.shape
    cu = kwargs.get("cu_seq_lens_q")
    max_len = kwargs.get("max_length_q") or t
    if cu is None:
        cu = torch.arange(0, (b + 1) * t, t, dtype=torch.int32, device=query.device)
    flat = lambda x: x.transpose(1, 2).reshape(b * t, x.shape[1], d)  # noqa: E731
    out = varlen_attn(flat(query), flat(key), flat(value), cu, cu, max_len, max_len, scale=scaling, **_causal)
    return out.view(b, t, h, d), None


def register_varlen() -> None:
    """Make attn_implementation="varlen" known to transformers. No mask function is registered, so the model
    builds no attention mask at all for it (the kernel needs none)."""
    from transformers import AttentionInterface

    AttentionInterface.register(VARLEN, varlen_attention)


# -- classification ---------------------------------------------------------------------------------
def pool_per_sequence(model, scale: float = 1):
    """Teach a sequence classifier packed batches: with cu_seq_lens_q in the inputs it pools each sequence's
    last token that is not the pad id (as the model's own pooling reads a row) and scores one loss per sequence
    (summed, over num_items_in_batch when given, so grad-accum equals the larger batch), times `scale` (a user's
    script whose accumulated loss was grad_accum times the mean keeps that scale: src/levers/packing.py). Without
    them it is the model's own forward.

    Returns switch(on). Off gives the model's own forward back: the pooling removed where nothing wrapped it since,
    else passed through untouched, so that a wrapper put on top of it stays (accelerate's autocast under --bf16,
    set when train() prepares the model: removing ours with it ran the script's bf16 run in fp32). On brings the
    pooling back without wrapping twice."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    previous = vars(base).get("forward")
    # unbound, called on the instance it runs on: a deep copy of the model (an EMA teacher, a snapshot) computes
    # with its own weights, not with the original's a bound method would hold
    if previous is None:
        original = type(base).forward
    elif isinstance(previous, types.MethodType) and previous.__self__ is base:
        original = previous.__func__
    else:
        original = lambda self, *args, **kwargs: previous(*args, **kwargs)  # noqa: E731
    state = {"on": True}

    def forward(self, *args, **kwargs):
        if not state["on"]:
            return original(self, *args, **kwargs)
        cu_seq_lens_q, num_items_in_batch = kwargs.pop("cu_seq_lens_q", None), kwargs.pop("num_items_in_batch", None)
        if cu_seq_lens_q is None:
            return original(self, *args, **kwargs)
        from transformers.modeling_outputs import SequenceClassifierOutputWithPast

        input_ids, position_ids, labels = (kwargs.get(k) for k in ("input_ids", "position_ids", "labels"))
        attn = {k: kwargs[k] for k in ("cu_seq_lens_k", "max_length_q", "max_length_k") if k in kwargs}
        backbone = getattr(self, self.base_model_prefix)
        hidden = backbone(input_ids=input_ids, position_ids=position_ids, cu_seq_lens_q=cu_seq_lens_q, **attn).last_hidden_state
        ends = (cu_seq_lens_q[1:].long() - 1).clamp(min=0)  # each slot's last token (an unused slot's is ignored)
        pad = self.config.get_text_config().pad_token_id
        if pad is not None and input_ids is not None:
            # the model's own pooling reads a row's rightmost token that is not the pad id, so a row ending in an eos
            # that is also the pad token pools the token before it (a user's script did; packs pooled the eos)
            at = torch.arange(input_ids.shape[-1], device=input_ids.device)
            last = torch.where(input_ids[0] != pad, at, -1).cummax(0).values[ends]
            ends = torch.where(last >= cu_seq_lens_q[:-1].long(), last, ends)
        logits = self.score(hidden[0, ends])
        loss = None
        if labels is not None:
            total = torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")
            loss = total / (num_items_in_batch if num_items_in_batch is not None else (labels != -100).sum().clamp(min=1))
            loss = loss * scale if scale != 1 else loss
        return SequenceClassifierOutputWithPast(loss=loss, logits=logits)

    installed = types.MethodType(forward, base)
    base.forward = installed

    def switch(on: bool) -> None:
        state["on"] = on
        inside = vars(base).get("forward") is installed  # nothing wrapped it since
        if not on and inside:
            if previous is None:
                vars(base).pop("forward")
            else:
                base.forward = previous
        elif on and vars(base).get("forward") is previous:  # taken off above: put back
            base.forward = installed

    return switch
