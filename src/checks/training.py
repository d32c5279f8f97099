"""Checks of the schedule (warmup against the steps run), the precision the card supports, and (expensive)
that gradient accumulation reproduces the larger batch through the real Trainer."""
from __future__ import annotations

import contextlib

import torch

from ..data.collate import to_device
from .results import result


# -- schedule and precision -------------------------------------------------------------------------
def schedule_check(cfg, at_step: int = 20) -> dict:
    from transformers import get_scheduler

    tr = cfg.trainer
    if str(tr.scheduler) == "reduce_lr_on_plateau":
        # its rate follows the evaluation metric, which no check before training can know (it raised a TypeError here)
        return result("train.schedule", "info", {"scheduler": "reduce_lr_on_plateau", "warmup_steps": tr.warmup_steps},
                      "a schedule known before training",
                      "the learning rate follows your evaluation metric (reduce_lr_on_plateau): nothing to check "
                      "before training")
    if str(tr.scheduler).startswith("own: "):  # the drop-in's: a scheduler the script made and passed in
        return result("train.schedule", "info", {"scheduler": str(tr.scheduler)}, "a schedule known before training",
                      f"your script's own scheduler ({str(tr.scheduler)[5:]}): lr_scheduler_type and warmup_steps "
                      "don't describe it, so it is not replayed from them")
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=tr.lr)
    kwargs = dict((tr.get("args") or {}).get("lr_scheduler_kwargs") or {})  # a scheduler's own settings (min_lr, ...)
    sched = get_scheduler(tr.scheduler, optimizer=opt, num_warmup_steps=tr.warmup_steps, num_training_steps=tr.max_steps,
                          scheduler_specific_kwargs=kwargs)
    step = min(at_step, tr.max_steps)
    reached = 0.0
    for _ in range(step):
        # the rate each of steps 1..step trains at (read before its scheduler step: step 1 trains at the first),
        # the highest, not the last: a run shorter than `at_step` has decayed by its end, which is the schedule's
        # end, not a warm-up that never arrived (a 9-step script read "0.00%" and was told to shorten it)
        reached = max(reached, sched.get_last_lr()[0] / tr.lr)
        opt.step()
        sched.step()
    status = "fail" if tr.warmup_steps >= tr.max_steps else "warn" if reached < 0.1 and tr.warmup_steps > 0.1 * tr.max_steps else "pass"
    return result("train.schedule", status,
                  {"lr_at_step": step, "fraction_of_target": round(reached, 5), "warmup_steps": tr.warmup_steps, "max_steps": tr.max_steps},
                  "warm-up <= 10% of the steps", "" if status == "pass" else
                  f"by step {step} the LR has reached at most {reached:.2%} of trainer.lr; the warm-up ({tr.warmup_steps} "
                  f"steps) {'never ends' if status == 'fail' else 'is longer than 10% of the run'}: shorten trainer.warmup_steps")


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


