"""The checks a user's Trainer gets beyond src.run's: the loss scale of an accumulated step, measured on the
script's own compute_loss (src/levers/loss_scale.py), and what could not be checked, and why; which trainers train
on an objective of their own, and the padding check's words beside speedup's packs."""
from __future__ import annotations

from ..checks import preflight
from ..levers import loss_scale
from .reading import trl_trainer


def grad_accum_loss(trainer, dataset=None, collator=None) -> dict:
    """Is the logged loss of an accumulated step the mean over its items, or grad_accum times that? Probed on the
    first rows of `dataset` through `collator`: the ones the Trainer's train dataloader holds, where given."""
    if trainer.args.gradient_accumulation_steps == 1:  # nothing to scale: no batch made ahead (a collator counting calls)
        return preflight.result("train.grad_accum_loss", "pass", "gradient_accumulation_steps 1",
                                "the loss of the whole accumulated batch")
    scale = loss_scale.probe(trainer, loss_scale.first_batch(trainer, dataset, collator))
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


def judged_unpacked(check: dict) -> dict:
    """The padding check judges the script's own batches; beside a run that trained on speedup's packs it read as a
    contradiction (a newcomer's report: "padding packed, pad 3.0%" above "20% of the positions are padding")."""
    if check["check"] != "data.padding_waste" or check["status"] == "pass":
        return check
    return {**check, "hint": check["hint"] + ". These are your batches' figures, without speedup: this run trained "
            "on its padding-free packs, whose padding the throughput line shows"}


def own_objective(trainer) -> bool:
    """Whether the trainer trains on its own objective rather than the model's cross-entropy: TRL's preference and
    RL trainers (DPO, KTO, GRPO, RLOO, reward modelling, distillation), and SFT's loss_type="dft" (each token's loss
    weighted by its probability), whose loss never starts at a uniform guess over the vocabulary."""
    dft = getattr(getattr(trainer, "args", None), "loss_type", "nll") not in (None, "nll")
    return trl_trainer(trainer) not in (None, "SFTTrainer") or dft
