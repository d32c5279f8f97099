"""Checks on one forward and backward of the first training batch: the pooled token, the initial loss against the
uniform guess (ln of the classes or the vocabulary; ln 2 a label for multi-label; for a regression the loss of
predicting zero, where a fresh head starts), the gradient's size against the clip, the head's first step, and
packed pooling."""
from __future__ import annotations

import contextlib
import math

import torch

from ..model.build import loss_regulariser, random_weights
from .results import result


# -- model: pooling, initial loss, gradient ---------------------------------------------------------
def _head(model, width: int) -> torch.nn.Linear | None:
    """The trainable output layer with `width` outputs (peft keeps a trainable copy of a classification head)."""
    heads = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == width]
    trainable = [m for m in heads if m.weight.requires_grad]
    return (trainable or heads or [None])[-1]


def _autocast(res):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(res.amp)
    return torch.autocast(res.device, dtype=dtype) if dtype else contextlib.nullcontext()


class NoLoss(RuntimeError):
    """The model returns no loss on the batch: nothing here to check against a uniform guess."""


CLASSIFIERS = ("classification", "regression", "multi_label")  # one pooled output per row
LABEL_HEADS = CLASSIFIERS + ("token_classification",)  # a head as wide as num_labels (a regression's: 1)


def uniform_guess(task: str, width: int, labels) -> tuple[float, str]:
    """The loss of a model that knows nothing yet, and how it is written: a new head's logits start near zero."""
    if task == "regression":
        known = labels[labels == labels] if labels is not None else None  # NaN-free
        second = float(known.float().pow(2).mean()) if known is not None and known.numel() else 1.0
        return second, f"mean(label^2) = {second:.3g} (the loss of predicting 0)"
    if task == "multi_label":
        return math.log(2), "ln 2 = 0.69 (a label's 50/50 guess)"
    return math.log(width), f"ln({width}) = {math.log(width):.2f}"


def model_checks(cfg, res, model, batch: dict, conf) -> list[dict]:
    """One forward and backward on a real training batch: pooling, initial loss, logits, gradient norm."""
    task, out = cfg.task.name, []
    width = conf.num_labels if task in LABEL_HEADS else conf.vocab_size  # the head the model was built with
    head = _head(model, width)
    seen = {}
    hook = head.register_forward_hook(lambda m, i, o: seen.update(inp=i[0].detach(), inp_on_graph=i[0].requires_grad)) \
        if head else None
    model.zero_grad(set_to_none=True)
    checkpointing = cfg.trainer.gradient_checkpointing
    # As the Trainer will, so the backward below meets the same graph; a model the Trainer has already set up
    # (trainsweep.attach checks at train begin) keeps its own settings, layers skipped included.
    toggle = checkpointing and not any(getattr(m, "gradient_checkpointing", False) is True for m in model.modules())
    try:  # the hook and the checkpointing go whatever happens: the model is the user's (trainsweep.attach)
        if toggle:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": cfg.trainer.checkpoint_reentrant})
        with _autocast(res):
            outputs = model(**batch)
        loss = outputs.loss
        if loss is None:  # a batch without labels (TRL's KTO, DPO): the trainer computes the loss, not the model
            raise NoLoss("the model computes no loss on this batch (no labels): its trainer's own loss is not checked here")
        loss.float().backward()
    finally:
        if toggle:
            model.gradient_checkpointing_disable()
        if hook:
            hook.remove()
    logits = outputs.logits.detach().float()

    if task in CLASSIFIERS and head is not None:
        with _autocast(res):  # as training runs it: fp16 weights meet fp32 trainable heads only under autocast
            if "cu_seq_lens_q" in batch:  # padding-free
                out.append(packed_pooling_check(model, head, batch))
            elif "attention_mask" in batch and "inp" in seen and seen["inp"].dim() == 3:
                # the head scores every position and the model picks one (decoder classifiers); an encoder's
                # pooled [CLS] has no position to check
                out.append(pooling_check(model, head, batch))
        if "cu_seq_lens_q" in batch:  # packed: only the slots that hold a sequence have logits that mean anything
            logits = logits[batch["labels"] != -100]

    expected, written = uniform_guess(task, width, batch.get("labels"))
    value = float(loss.detach())
    pretrained_lm = task in ("causal_lm", "seq2seq") and (cfg.model.pretrained or cfg.model.model_type == "auto")
    hidden = float(seen["inp"].float().norm(dim=-1).mean()) if "inp" in seen else None
    head_std = float(head.weight.detach().float().std()) if head is not None else None
    stats = {"loss": round(value, 4), "logits_mean": round(float(logits.mean()), 4), "logits_std": round(float(logits.std()), 4),
             "head_weight_std": head_std, "hidden_norm_at_head": hidden}
    regulariser = loss_regulariser(model)
    if regulariser:  # AdaLoRA adds its orthogonal regularisation to every loss the model computes
        status, want = "info", (f"the model's loss holds AdaLoRA's orthogonal regularisation (orth_reg_weight "
                                f"{regulariser:g}) on top of the task's loss: not judged against {written}")
    elif pretrained_lm and abs(value / expected - 1) <= 0.1:  # the uniform guess: random weights, by design or not
        status, want = "info", (f"< {written} for pretrained weights; ~{written} for a model trained "
                                "from scratch (random weights), as this one starts: if you loaded weights, they did not load")
    elif pretrained_lm:  # a pretrained LM starts well below a uniform guess; above it, its weights are not an LM's
        status, want = ("pass" if value < expected else "fail"), f"< {written} for a pretrained LM"
    else:
        ratio = value / expected if expected > 0 else (1.0 if value <= 1e-6 else math.inf)
        status, want = ("pass" if ratio <= 1.25 else "warn" if ratio <= 2 else "fail"), f"~{written}"
    hint = ""
    if status == "fail" and pretrained_lm:
        hint = ("a pretrained LM starts below the uniform guess: check that its weights loaded (from_pretrained's "
                "warnings name newly initialised weights) and that the tokenizer is the model's own (other ids mean "
                "other tokens)")
    elif status != "pass" and hidden and head_std:
        hint = (f"logits std {stats['logits_std']:.1f} = head weight std {head_std:.3f} x hidden-state norm {hidden:.0f}: "
                "the head's init does not match the hidden states' scale. ")
        if task in LABEL_HEADS:
            hint += "Initialise it to 1/norm (model.init.head_init=scaled) or zero (model.init.head_init=zero)"
        else:  # an LM's head is often its embedding matrix (tied): re-initialising it would wipe the embeddings
            hint += ("An LM's output layer is often tied to its embeddings (tie_word_embeddings): scale the init of "
                     "the hidden states or of that shared matrix, never zero it")
    out.append(result("model.initial_loss", status, stats, want, hint))

    if head is not None and head.weight.requires_grad and "inp" in seen:
        out.append(head_step_check(cfg, float(seen["inp"].float().abs().sum(-1).mean())))

    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.grad is not None]
    norms = {n: float(p.grad.detach().float().norm()) for n, p in params}
    total = math.sqrt(sum(v * v for v in norms.values()))
    clip = cfg.trainer.max_grad_norm
    clipped = max(0.0, 1 - clip / total) if clip and total else 0.0
    top = max(norms, key=norms.get) if norms else None
    share = norms[top] ** 2 / total ** 2 if top and total else 0.0
    status = "fail" if clipped > 0.9 else "warn" if clipped > 0.5 else "pass"
    hint = "" if status == "pass" else (
        f"{clipped:.1%} of the step-1 gradient is clipped away; {share:.0%} of its squared norm is in {top}. "
        "A constant clip factor cancels in Adam's normalised update (AdamW), a varying one does not, and under SGD "
        "it scales every step: fix the scale at its source "
        "(the head's init, the loss scale) before raising max_grad_norm")
    if random_weights(cfg):
        # The gradient's scale is the random init's: the head's gradient is (p - y) h^T, and h at a fresh final
        # norm has norm ~sqrt(hidden_size), whatever the user chose. Judging clipping on it would fail every wide
        # random-init model (Qwen3-4B, bs 16 on an H200: 92-94% clipped) for a scale that real weights don't have.
        status, hint = "info", (f"random weights: {clipped:.1%} of this step-1 gradient is clipped, but its scale is the "
                                "random init's (hidden states of norm ~sqrt(hidden_size) at the head), not that of the "
                                "weights a fine-tune starts from; judged with model.pretrained=true")
    out.append(result("train.grad_norm", status,
                      {"grad_norm": round(total, 3), "clipped_fraction": round(clipped, 4), "largest": top,
                       "largest_share_of_norm2": round(share, 3)},
                      # one micro-batch's gradient: the Trainer logs the accumulated step's, another number
                      f"<= {clip} (trainer.max_grad_norm) or a few times it, for the first micro-batch's gradient"
                      if clip else "recorded: trainer.max_grad_norm=0 clips nothing", hint))
    if checkpointing and cfg.peft.method != "none":
        lora = [n for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
        got = sum(norms.get(n, 0.0) > 0 for n in lora)  # lora_B starts at zero: only B gets a gradient at step 1
        # A cut graph leaves the head's input off the autograd graph. Counting LoRA gradients can't tell: a zero
        # head (a random-init classifier's) passes no gradient back at step 1 through an intact graph either.
        flowing = seen.get("inp_on_graph", got > 0)
        out.append(result("train.checkpointing_grads", "pass" if flowing else "fail",
                          f"hidden states at the head {'on' if flowing else 'off'} the autograd graph; {got} of {len(lora)} "
                          "LoRA tensors got a step-1 gradient", "LoRA weights get gradients",
                          "" if flowing else "reentrant checkpointing with frozen embeddings cuts the graph: no LoRA weight "
                          "learns. Set trainer.checkpoint_reentrant=false (or enable input grads)"))
    model.zero_grad(set_to_none=True)
    return out


def head_step_check(cfg, hidden_l1: float) -> dict:
    """Adam's first update moves every head weight by lr along the sign of its gradient, (p - y) h: each
    logit then moves by lr x ||h||_1. Large hidden states (a pretrained LM's) make that many logits a step."""
    lr = cfg.trainer.lr
    step = lr * hidden_l1
    status = "fail" if step > 10 else "warn" if step > 1 else "pass"
    return result("train.head_step", status,
                  {"lr": lr, "hidden_l1_norm": round(hidden_l1, 1), "logit_change_per_step": round(step, 3)},
                  "< 1 logit per step once warm-up ends",
                  "" if status == "pass" else f"AdamW moves the head's logits by ~{step:.1f} per step (lr x ||h||_1): "
                  "the loss will climb. Lower trainer.lr, or shrink the head's input scale")


def pooling_check(model, head, batch: dict) -> dict:
    """Which position does the model pool for each row? A probe replaces the head's per-position output
    with the position's index, so the pooled logit is the position itself, whatever the weights."""
    def probe(module, inputs, output):
        index = torch.zeros(output.shape, dtype=torch.float32, device=output.device)
        index[..., 0] = torch.arange(output.shape[-2], device=output.device, dtype=torch.float32)
        return index

    hook = head.register_forward_hook(probe)
    try:
        with torch.no_grad():
            pooled = model(**{k: v for k, v in batch.items() if k != "labels"}).logits[:, 0].round().long()
    finally:
        hook.remove()
    mask = batch["attention_mask"]
    last = mask.shape[1] - 1 - mask.flip(-1).argmax(-1)  # the last attended position of each row
    wrong = int((pooled != last).sum())
    return result("model.pooling", "fail" if wrong else "pass",
                  f"{wrong} of {len(last)} rows pooled another position than their last attended token"
                  + (f" (row 0: pooled {int(pooled[0])}, last attended {int(last[0])})" if wrong else ""),
                  "every row pools its last attended token",
                  "the model finds the last token through pad_token_id: check pad == eos (a trailing eos is "
                  "skipped) and that the collator pads with the model's pad id" if wrong else "")


def packed_pooling_check(model, head, batch: dict) -> dict:
    """Padding-free batches: the head must see each sequence's last token. The backbone's output is captured
    and compared, row by row, with what reached the head."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone = getattr(base, base.base_model_prefix)
    seen = {}
    hooks = [backbone.register_forward_hook(lambda m, i, o: seen.update(hidden=o.last_hidden_state[0])),
             head.register_forward_pre_hook(lambda m, i: seen.update(pooled=i[0]))]
    try:
        with torch.no_grad():
            model(**{k: v for k, v in batch.items() if k != "labels"})
    finally:
        for h in hooks:
            h.remove()
    n = int((batch["labels"] != -100).sum())
    ends = batch["cu_seq_lens_q"][1:n + 1].long() - 1
    match = (seen["pooled"][:n] == seen["hidden"][ends]).all(-1)
    wrong = int((~match).sum())
    return result("model.pooling", "fail" if wrong else "pass",
                  f"{wrong} of {n} packed sequences pooled another position than their last token",
                  "every sequence pools its last token", "the packed classifier's pooling positions are off" if wrong else "")


