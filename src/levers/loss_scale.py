"""How a Trainer scales the loss of an accumulated step, measured rather than assumed.

The Trainer divides each micro-batch's loss by gradient_accumulation_steps unless it believes the loss is
normalised over the whole accumulated batch already: when the model takes **kwargs (model_accepts_loss_kwargs)
and it can count the batch's items (num_items_in_batch), or a compute_loss_func is set. Whether the loss really
reads num_items_in_batch depends on the model's loss function or the script's own compute_loss: a sequence
classifier's, a token classifier's or a subclass's mean ignores it, and then the logged loss and the gradients
come out grad_accum times too large (transformers#47688). One probe tells: the script's own compute_loss on one
micro-batch with num_items_in_batch n and 2n (no grad, dropout off). A loss that halves reads it; one that stays
ignores it. A subclass whose own training_step never calls the Trainer's scales the loss itself: nothing here
applies to it, and it is not probed.
"""
from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import torch

from ..base.rng import held_by, rng_kept
from ..train.trainer import own_method

# What a loss computation may write on a Trainer: TRL logs token counts and metrics from compute_loss.
TRAINER_STATE = ("_metrics", "_total_train_tokens")


def _tally(value, depth: int = 3) -> bool:
    """Numbers, strings and one-element tensors, or small containers of them: a subclass's running tallies, cheap
    to copy. Not a container holding a model or a batch (a dict of teachers: copying it would copy their weights)."""
    if isinstance(value, (int, float, str, bool, type(None))):
        return True
    if isinstance(value, torch.Tensor):
        return value.numel() <= 1
    if depth and isinstance(value, (dict, list, set, tuple)) and len(value) <= 10_000:
        items = value.values() if isinstance(value, dict) else value
        return all(_tally(v, depth - 1) for v in items)
    return False


@contextlib.contextmanager
def trainer_kept(trainer):
    """The Trainer's logged metrics and counters, a subclass's own (a compute_loss adding its ce_loss and z_loss to
    a dict it logs: the probe's call added to them), and every generator as they were: a probe's compute_loss
    leaves nothing for training's logs to pick up, and draws nothing training would have drawn."""
    saved = {k: copy.deepcopy(v) for k, v in vars(trainer).items() if k in TRAINER_STATE or _tally(v)}
    before = set(vars(trainer))
    try:
        with rng_kept(*held_by(trainer)):
            yield
    finally:
        for k in set(vars(trainer)) - before:  # set by the probe's call: set again by training's first
            if _tally(vars(trainer)[k]):
                del vars(trainer)[k]
        vars(trainer).update(saved)


@dataclass
class LossScale:
    grad_accum: int
    trainer_divides: bool  # the Trainer divides each micro-batch's loss by grad_accum itself
    reads_items: bool | None  # the loss reads num_items_in_batch (None: not probed)
    detail: str
    own_step: bool = False  # the script's training_step never calls the Trainer's: the scale is its own

    @property
    def factor(self) -> int:
        """The logged loss (and the gradient) over the mean over the step's items: 1, or grad_accum (the bug)."""
        return 1 if self.trainer_divides or self.reads_items is not False else self.grad_accum


def trainer_divides(trainer, items) -> bool:
    """Whether training_step divides the loss by the accumulation steps, as the installed transformers decides it."""
    told = getattr(trainer, "loss_is_scaled_for_ga", None)  # transformers 5.24+: the script may say so
    if told is not None:
        return not told
    return not ((trainer.model_accepts_loss_kwargs and items is not None) or trainer.compute_loss_func is not None)


def own_step(trainer) -> str | None:
    """The script's class whose training_step never calls the Trainer's (it runs its own forward and backward), or
    None. One that calls it (super().training_step, then an adversarial pass) still gets the Trainer's scaling."""
    owner = own_method(trainer, "training_step")
    code = getattr(vars(owner)["training_step"], "__code__", None) if owner is not None else None
    return owner.__name__ if code is not None and "training_step" not in code.co_names else None


def first_batch(trainer, ds=None, collator=None) -> dict:
    """The script's first micro-batch as its Trainer makes it, on the device: from the dataset and collator its train
    dataloader holds, where the caller has them (sentence-transformers' own get_train_dataloader keeps the text
    columns transformers' would remove; rebuilt transformers' way, its batch held nothing its loss reads); else as
    transformers' Trainer makes it (unused columns removed, its collator)."""
    if ds is None or collator is None:
        ds, collator = trainer.train_dataset, trainer.data_collator
        if hasattr(trainer, "_remove_unused_columns") and hasattr(ds, "column_names"):
            ds = trainer._remove_unused_columns(ds, description="training")
        if hasattr(trainer, "_get_collator_with_removed_columns"):
            collator = trainer._get_collator_with_removed_columns(collator, description="training")
    # a dataset may draw per row, a collator too (masking): from the global generators or their own
    with rng_kept(*held_by(trainer)):
        items = [ds[i] for i in range(min(len(ds), trainer.args.per_device_train_batch_size))]
        return trainer._prepare_inputs(collator(items))


def probe(trainer, batch: dict) -> LossScale:
    """The script's loss scale on one of its own micro-batches (device tensors, as training_step gets them)."""
    ga = trainer.args.gradient_accumulation_steps
    own = own_step(trainer)
    if own is not None and ga > 1:
        return LossScale(ga, True, None, f"{own}.training_step is your own and never calls the Trainer's: it scales "
                                         "each micro-batch's loss itself", own_step=True)
    items = trainer._get_num_items_in_batch([batch], trainer.args.device)
    if ga == 1 or trainer_divides(trainer, items):
        return LossScale(ga, True, None, f"gradient_accumulation_steps {ga}; the Trainer divides each micro-batch's "
                                          "loss by it" if ga > 1 else "gradient_accumulation_steps 1")
    if items is None or int(items) == 0:
        return LossScale(ga, False, None, "no scored labels in the first micro-batch: not probed")
    model = trainer.model
    was_training = model.training
    losses = []
    try:
        with trainer_kept(trainer), torch.no_grad():
            model.eval()
            for n in (items, items * 2):
                with trainer.accelerator.autocast(), trainer.compute_loss_context_manager():
                    loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=n)  # a copy: it may pop labels
                losses.append(float(loss.detach().float()))
    finally:
        model.train(was_training)
    ratio = losses[1] / losses[0] if losses[0] else 1.0
    reads = True if abs(ratio - 0.5) < 0.05 else False if abs(ratio - 1) < 0.05 else None
    said = {True: "reads", False: "ignores", None: "reads something else than"}[reads]
    return LossScale(ga, False, reads, f"loss {losses[0]:.4g} with num_items_in_batch {int(items)}, {losses[1]:.4g} with "
                                       f"twice that: it {said} the item count")
