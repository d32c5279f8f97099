"""Preflight checks: the loss-69 class of bugs, caught before the first step.

Each check is {check, status: pass|warn|fail|info, value, expected, hint}. The cheap ones run at the start of
every run (one forward and backward on the first training batch, arithmetic on lengths and the config);
`mode=diagnose` adds the expensive one (gradient-accumulation equivalence through the real Trainer) and
trains nothing. `info` is a value measured and shown but not judged: a check whose verdict would be about the
random init's scale rather than the weights a fine-tune starts from (random_weights).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import torch

from .config import PACKED_TASKS
from .models import random_weights


def result(check: str, status: str, value, expected, hint: str = "") -> dict:
    return {"check": check, "status": status, "value": value, "expected": expected, "hint": hint}


# -- tokenizer ----------------------------------------------------------------------------------------
def tokenizer_checks(tokenizer, conf, train_ds, task: str) -> list[dict]:
    if tokenizer is None:
        return []
    out = []
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    out.append(result("tokenizer.pad_token", "pass" if pad is not None else "fail", tokenizer.pad_token,
                      "a pad token", "" if pad is not None else "set tokenizer.pad_token to a token the texts never contain"))
    if pad is None or pad != eos:
        out.append(result("tokenizer.pad_is_eos", "pass", f"pad {pad}, eos {eos}", "pad != eos"))
    else:
        ids = train_ds.select(range(min(len(train_ds), 2000)))["input_ids"]
        ending = sum(1 for row in ids if row and row[-1] == eos)
        inside = sum(1 for row in ids if eos in row[:-1])
        bad = task == "classification" and ending > 0
        out.append(result("tokenizer.pad_is_eos", "fail" if bad else "warn",
                          f"pad == eos ({tokenizer.eos_token}); eos ends {ending} and occurs inside {inside} of {len(ids)} rows",
                          "pad != eos",
                          "sequence classification pools the last token that is not pad_token_id: a trailing eos is "
                          "skipped. Add a dedicated pad token (tokenizer.add_special_tokens) and resize the embeddings"))
    vocab, rows = len(tokenizer), conf.vocab_size
    out.append(result("tokenizer.vocab_vs_embeddings", "pass" if vocab <= rows else "fail", f"{vocab} tokens, {rows} embedding rows",
                      "tokens <= embedding rows", "" if vocab <= rows else "ids past the embedding table: model.resize_token_embeddings(len(tokenizer))"))
    missing = [name for name in ("eos_token", "pad_token") if getattr(tokenizer, name) is None]
    out.append(result("tokenizer.special_tokens", "warn" if missing else "pass",
                      {n: getattr(tokenizer, n) for n in ("bos_token", "eos_token", "pad_token", "unk_token")},
                      "eos and pad defined", f"missing: {', '.join(missing)}" if missing else ""))
    side = tokenizer.padding_side
    ok = side == "right" or task == "classification"
    out.append(result("tokenizer.padding_side", "pass" if ok else "warn", side, "right for training",
                      "" if ok else "left padding is for generation; training a causal LM with it shifts positions"))
    return out


# -- data -------------------------------------------------------------------------------------------
def pad_fraction(lengths: np.ndarray, strategy: str, batch: int, max_length: int, multiple: int | None,
                 chunk: int = 1000, seed: int = 0, tokens: int | None = None) -> float:
    """The share of computed positions that are padding, from the lengths alone (no training)."""
    if strategy == "packed":  # only the unfilled tail of each pack (a token budget) or of each row (multiple of 64)
        if tokens:
            from .packing import first_fit

            return float(1 - lengths.sum() / (len(first_fit(lengths, tokens, seed)) * tokens))
        rows = np.array_split(lengths, max(1, math.ceil(len(lengths) / batch)))
        return float(1 - lengths.sum() / sum(math.ceil(r.sum() / 64) * 64 for r in rows))
    rng = np.random.default_rng(seed)
    if strategy == "max_length":
        widths = np.full(len(lengths), max_length)
    elif strategy == "longest":  # every chunk of rows padded to its longest at tokenisation time
        widths = np.concatenate([np.full(len(c), c.max()) for c in np.array_split(lengths, max(1, math.ceil(len(lengths) / chunk)))])
    else:
        order = rng.permutation(len(lengths))
        if strategy == "grouped":  # like LengthGroupedSampler: sort within mega-batches of 50 batches
            mega = 50 * batch
            order = np.concatenate([o[np.argsort(-lengths[o])] for o in np.array_split(order, max(1, math.ceil(len(order) / mega)))])
        shuffled = lengths[order]
        widths = np.concatenate([np.full(len(b), b.max()) for b in np.array_split(shuffled, max(1, math.ceil(len(shuffled) / batch)))])
    if multiple and strategy != "max_length":
        widths = np.ceil(widths / multiple) * multiple
    return float(1 - lengths.sum() / widths.sum())


def data_checks(cfg, train_ds) -> list[dict]:
    out = []
    lengths = np.asarray(train_ds["length"], dtype=np.int64)
    d, task = cfg.data, cfg.task.name
    if task == "classification":
        labels = np.asarray(train_ds["labels"])
        bad = int(((labels < 0) | (labels >= cfg.task.num_labels)).sum())
        out.append(result("data.labels_in_range", "fail" if bad else "pass",
                          f"{bad} of {len(labels)} labels outside [0, {cfg.task.num_labels}); min {labels.min()}, max {labels.max()}",
                          f"all in [0, {cfg.task.num_labels})", "set task.num_labels to the number of classes" if bad else ""))
    truncated = float((lengths >= d.max_length).mean())
    out.append(result("data.truncation", "warn" if truncated > 0.05 else "pass",
                      {"rows_at_max_length": round(truncated, 4), "mean": round(float(lengths.mean()), 1),
                       "p90": float(np.percentile(lengths, 90)), "max": int(lengths.max())},
                      f"<= 5% of rows at data.max_length ({d.max_length})",
                      f"raise data.max_length (now {d.max_length}): the ends of these rows are cut" if truncated > 0.05 else ""))
    p = cfg.padding
    strategies = ["max_length", "longest", "dynamic", "grouped"] + (["packed"] if task in PACKED_TASKS else [])
    waste = {s: pad_fraction(lengths, s, cfg.batch.size, d.max_length, p.pad_to_multiple_of, p.chunk_size,
                             tokens=cfg.batch.tokens) for s in strategies}
    chosen, best = waste[p.strategy], min(waste.values())
    best_name = min(waste, key=waste.get)
    worse = chosen - best > 0.10
    out.append(result("data.padding_waste", "warn" if worse else "pass",
                      {"chosen": p.strategy, **{k: round(v, 3) for k, v in waste.items()}},
                      f"within 10 points of the least ({best_name}: {best:.1%})",
                      f"padding={p.strategy} computes {chosen:.0%} padding; padding={best_name} {best:.0%}. Fewer pad "
                      "tokens is not always faster: a host-bound step can gain more from fixed shapes" if worse else ""))
    return out


# -- model: pooling, initial loss, gradient ---------------------------------------------------------
def _head(model, width: int) -> torch.nn.Linear | None:
    """The trainable output layer with `width` outputs (peft keeps a trainable copy of a classification head)."""
    heads = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == width]
    trainable = [m for m in heads if m.weight.requires_grad]
    return (trainable or heads or [None])[-1]


def _autocast(res):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(res.amp)
    return torch.autocast(res.device, dtype=dtype) if dtype else contextlib.nullcontext()


def model_checks(cfg, res, model, batch: dict, conf) -> list[dict]:
    """One forward and backward on a real training batch: pooling, initial loss, logits, gradient norm."""
    task, out = cfg.task.name, []
    width = cfg.task.num_labels if task == "classification" else conf.vocab_size
    head = _head(model, width)
    seen = {}
    hook = head.register_forward_hook(lambda m, i, o: seen.update(inp=i[0].detach(), inp_on_graph=i[0].requires_grad)) \
        if head else None
    model.zero_grad(set_to_none=True)
    checkpointing = cfg.trainer.gradient_checkpointing
    # As the Trainer will, so the backward below meets the same graph; a model the Trainer has already set up
    # (trainsweep.attach checks at train begin) keeps its own settings, layers skipped included.
    toggle = checkpointing and not any(getattr(m, "gradient_checkpointing", False) is True for m in model.modules())
    if toggle:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": cfg.trainer.checkpoint_reentrant})
    with _autocast(res):
        outputs = model(**batch)
    loss = outputs.loss
    loss.float().backward()
    if toggle:
        model.gradient_checkpointing_disable()
    if hook:
        hook.remove()
    logits = outputs.logits.detach().float()

    if task == "classification" and head is not None:
        with _autocast(res):  # as training runs it: fp16 weights meet fp32 trainable heads only under autocast
            if "cu_seq_lens_q" in batch:  # padding-free
                out.append(packed_pooling_check(model, head, batch))
            elif "attention_mask" in batch and "inp" in seen and seen["inp"].dim() == 3:
                # the head scores every position and the model picks one (decoder classifiers); an encoder's
                # pooled [CLS] has no position to check
                out.append(pooling_check(model, head, batch))
        if "cu_seq_lens_q" in batch:  # packed: only the slots that hold a sequence have logits that mean anything
            logits = logits[batch["labels"] != -100]

    expected = math.log(width)
    value = float(loss.detach())
    pretrained_lm = task != "classification" and (cfg.model.pretrained or cfg.model.model_type == "auto")
    hidden = float(seen["inp"].float().norm(dim=-1).mean()) if "inp" in seen else None
    head_std = float(head.weight.detach().float().std()) if head is not None else None
    stats = {"loss": round(value, 4), "logits_mean": round(float(logits.mean()), 4), "logits_std": round(float(logits.std()), 4),
             "head_weight_std": head_std, "hidden_norm_at_head": hidden}
    if pretrained_lm:  # a pretrained LM starts well below a uniform guess; at or above it, its weights did not load
        status, want = ("pass" if value < expected else "fail"), f"< ln({width}) = {expected:.2f} for a pretrained LM"
    else:
        ratio = value / expected
        status, want = ("pass" if ratio <= 1.25 else "warn" if ratio <= 2 else "fail"), f"~ln({width}) = {expected:.2f}"
    hint = ""
    if status != "pass" and hidden and head_std:
        hint = (f"logits std {stats['logits_std']:.1f} = head weight std {head_std:.3f} x hidden-state norm {hidden:.0f}: "
                "the head's init does not match the hidden states' scale. Initialise it to 1/norm "
                "(model.init.head_init=scaled) or zero (model.init.head_init=zero)")
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
        "A constant clip factor cancels in AdamW, a varying one does not: fix the scale at its source "
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
                      f"<= {clip} (trainer.max_grad_norm) or a few times it", hint))
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


# -- schedule and precision -------------------------------------------------------------------------
def schedule_check(cfg, at_step: int = 20) -> dict:
    from transformers import get_scheduler

    tr = cfg.trainer
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=tr.lr)
    sched = get_scheduler(tr.scheduler, optimizer=opt, num_warmup_steps=tr.warmup_steps, num_training_steps=tr.max_steps)
    step = min(at_step, tr.max_steps)
    for _ in range(step):
        opt.step()
        sched.step()
    reached = sched.get_last_lr()[0] / tr.lr
    status = "fail" if tr.warmup_steps >= tr.max_steps else "warn" if reached < 0.1 and tr.warmup_steps > 0.1 * tr.max_steps else "pass"
    return result("train.schedule", status,
                  {"lr_at_step": step, "fraction_of_target": round(reached, 5), "warmup_steps": tr.warmup_steps, "max_steps": tr.max_steps},
                  "warm-up <= 10% of the steps", "" if status == "pass" else
                  f"by step {step} the LR is {reached:.2%} of trainer.lr; the warm-up ({tr.warmup_steps} steps) "
                  f"{'never ends' if status == 'fail' else 'is longer than 10% of the run'}: shorten trainer.warmup_steps")


def device_facts(res) -> dict:
    cuda = res.device == "cuda"
    return {"bf16": cuda and torch.cuda.is_bf16_supported(), "ampere": cuda and torch.cuda.get_device_capability()[0] >= 8,
            "tf32": torch.backends.cuda.matmul.allow_tf32}


def precision_checks(cfg, res, facts: dict) -> list[dict]:
    out = []
    if cfg.peft.method == "qlora" and cfg.peft.compute_dtype == "float32":
        out.append(result("precision.qlora_compute_dtype", "warn", "float32", "bfloat16",
                          "every dequantised matmul runs in fp32: set peft.compute_dtype=bfloat16"))
    if res.amp == "fp16" and facts["bf16"]:
        out.append(result("precision.fp16_vs_bf16", "warn", "fp16", "bf16 on this GPU",
                          "bf16 needs no loss scaling and has fp32's range: precision=bf16"))
    if facts["ampere"] and res.amp == "none" and not facts["tf32"]:
        out.append(result("precision.tf32", "warn", "fp32 matmuls without TF32", "TF32 on Ampere+",
                          "precision=tf32 or env=tuned: ~8x faster fp32 matmuls on tensor cores"))
    if not out:
        out.append(result("precision", "pass", f"weights {str(res.weights_dtype).replace('torch.', '')}, amp {res.amp}",
                          "bf16 or TF32 where the device supports it"))
    return out


# -- gradient accumulation equivalence (expensive) --------------------------------------------------
@contextlib.contextmanager
def _no_dropout(model):
    """eval() for the comparison: the Trainer calls model.train() each step, so shadow it meanwhile."""
    model.eval()
    model.train = lambda mode=True: model
    try:
        yield
    finally:
        del model.train
        model.train()


def grad_accum_check(trainer, model, rows: list, collator, device: str, tolerance: float) -> dict:
    """(2k rows, grad_accum 1) vs (k rows, grad_accum 2) on the same rows, through the real Trainer's
    training_step and its num_items_in_batch: loss and gradients must match."""
    half = len(rows) // 2
    from .data import to_device

    to = lambda b: to_device(b, device)  # noqa: E731
    params = [p for p in model.parameters() if p.requires_grad]

    def run(batches):
        model.zero_grad(set_to_none=True)
        count = trainer._get_num_items_in_batch(batches, torch.device(device))
        trainer.current_gradient_accumulation_steps = len(batches)
        loss = sum(float(trainer.training_step(model, b, count)) for b in batches)
        return loss, torch.cat([p.grad.detach().float().flatten() for p in params if p.grad is not None])

    counter, trainer.token_counter = getattr(trainer, "token_counter", None), None  # the check's batches are not training's tokens
    try:
        with _no_dropout(model):
            loss_full, grad_full = run([to(collator(rows))])
            loss_ga, grad_ga = run([to(collator(rows[:half])), to(collator(rows[half:]))])
    finally:
        trainer.token_counter = counter
    model.zero_grad(set_to_none=True)
    rel = float((grad_full - grad_ga).norm() / grad_full.norm())
    ok = rel <= tolerance and abs(loss_full - loss_ga) <= tolerance * abs(loss_full) + 1e-6
    return result("train.grad_accum_equivalence", "pass" if ok else "fail",
                  {"loss_bs2k": round(loss_full, 5), "loss_bsk_ga2": round(loss_ga, 5), "grad_rel_diff": rel,
                   "ratio_of_grad_norms": float(grad_ga.norm() / grad_full.norm())},
                  f"equal within {tolerance}",
                  "" if ok else "grad accumulation does not reproduce the larger batch: the loss is normalised per "
                  "micro-batch where it should be per accumulated batch (see transformers#47688)")


# -- all of it --------------------------------------------------------------------------------------
def preflight(cfg, res, model, trainer, collator, train_ds, tokenizer, conf, expensive: bool) -> list[dict]:
    from .data import to_device

    # Eagerly, even under regional compile: the checks' no-grad forwards would compile graphs training never uses.
    stance = torch.compiler.set_stance("force_eager") if hasattr(torch.compiler, "set_stance") else contextlib.nullcontext()
    with stance:
        return _preflight(cfg, res, model, trainer, collator, train_ds, tokenizer, conf, expensive, to_device)


def _preflight(cfg, res, model, trainer, collator, train_ds, tokenizer, conf, expensive, to_device) -> list[dict]:
    rows = [train_ds[i] for i in range(min(len(train_ds), cfg.batch.size))]
    batch = to_device(collator(rows), res.device)
    checks = tokenizer_checks(tokenizer, conf, train_ds, cfg.task.name) + data_checks(cfg, train_ds)
    checks += model_checks(cfg, res, model, batch, conf)
    checks += [schedule_check(cfg)] + precision_checks(cfg, res, device_facts(res))
    if expensive:
        k = max(1, min(cfg.batch.size, 4))
        pairs = [train_ds[i] for i in range(min(len(train_ds), 2 * k))]
        tolerance = 1e-3 if res.amp == "none" else 3e-2
        checks.append(grad_accum_check(trainer, model, pairs, collator, res.device, tolerance))
    return checks


def summary(checks: list[dict]) -> str:
    counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail", "info")}
    return f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail" + \
        (f", {counts['info']} not judged (info)" if counts["info"] else "")
