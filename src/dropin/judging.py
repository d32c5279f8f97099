"""The checks a user's Trainer gets beyond src.run's: the loss scale of an accumulated step, measured on the
script's own compute_loss (src/levers/loss_scale.py), and what could not be checked, and why."""
from __future__ import annotations

from ..checks import preflight
from ..levers import loss_scale


def grad_accum_loss(trainer) -> dict:
    """Is the logged loss of an accumulated step the mean over its items, or grad_accum times that?"""
    if trainer.args.gradient_accumulation_steps == 1:  # nothing to scale: no batch made ahead (a collator counting calls)
        return preflight.result("train.grad_accum_loss", "pass", "gradient_accumulation_steps 1",
                                "the loss of the whole accumulated batch")
    scale = loss_scale.probe(trainer, loss_scale.first_batch(trainer))
    ga = scale.grad_accum
    if scale.own_step:
        return preflight.result("train.grad_accum_loss", "not_run", scale.detail,
                                "the loss of the whole accumulated batch", f"not checked: {scale.detail}")
    if scale.reads_items is False:
        told = hasattr(trainer, "loss_is_scaled_for_ga")  # transformers 5.24+ lets a script say it
        fix = ("trainer.loss_is_scaled_for_ga = False" if told else "trainer.model_accepts_loss_kwargs = False")
        return preflight.result(
            "train.grad_accum_loss", "fail", scale.detail, "the loss of the whole accumulated batch",
            f"the logged loss and the gradients are {ga}x too large: the loss is each micro-batch's mean and ignores "
            f"num_items_in_batch, while the Trainer leaves the division by gradient_accumulation_steps to it. Set "
            f"{fix} before trainer.train() (transformers#47688)")
    if scale.reads_items is None and not scale.trainer_divides:
        return preflight.result("train.grad_accum_loss", "warn", scale.detail, "the loss of the whole accumulated batch",
                                "the loss neither halves nor stays with twice the item count: check its scale by hand")
    return preflight.result("train.grad_accum_loss", "pass", scale.detail, "the loss of the whole accumulated batch")


def not_run(groups: tuple, why: str) -> list[dict]:
    """The check groups that could not run, each saying why: a silent gap reads like a pass."""
    return [preflight.result(group, "not_run", why, "checks that run", f"not checked: {why}") for group in groups]
