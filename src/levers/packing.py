"""speedup's padding-free batches on a user's Trainer: the train rows regrouped into micro-batches of a fixed token
budget (src/data/packing.py), keeping what the script's training means:

- rows per optimizer step: the budget and grad_accum are chosen so that a step holds the script's rows within
  ROWS_TOLERANCE (the budget rounds down to a GEMM-friendly width only where that still holds); where no budget
  can (a step of one or two rows, packs that must hold the longest row), the lever stays off and says why;
- the loss scale: a classifier's packed loss is summed over the step's rows and divided by their count; where the
  script's own accumulated loss came out grad_accum times larger (transformers#47688, measured by
  src/levers/loss_scale.py), the packed loss is scaled the same way unless the caller asks for the fix, and the
  line says which;
- what each row is: read from the collator's kind (src/levers/rows.py); a collator of the script's own is packed
  only as the known kind it pads as on a few probed rows (src/levers/collator_probe.py), and the line says so;
- never a raise mid-training: a pack the collator cannot build is collated as a plain padded batch of its rows,
  with one line.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import torch

from ..data.packing import PackCollator, PackedDataset, first_fit, max_sequences
from ..model.build import loss_regulariser
from . import arguments, collator_probe, loss_scale, row_rate
from .outcome import Speedup
from .rows import OWN, TrainRows

ROWS_TOLERANCE = 0.03  # rows per optimizer step may differ from the script's by at most this share
SAMPLE = 20_000  # rows the budget search packs (first fit on every row of a large set would take seconds a try)


def _per_pack(lengths: np.ndarray, budget: int, seed: int) -> float:
    return len(lengths) / len(first_fit(lengths, budget, seed))


def _fit(lengths: np.ndarray, rows_per_step: int, micro_batch: int, seed: int) -> tuple[int, int] | None:
    """(budget, grad_accum) whose packs hold the script's rows per step within the tolerance, in as few micro-batches
    as the script's largest padded micro-batch (micro_batch x the longest row) allows; None if none does."""
    longest, mean = int(lengths.max()), float(lengths.mean())
    cap = micro_batch * longest  # no pack larger than the script's largest padded micro-batch: memory stays within it
    first = max(1, math.ceil(rows_per_step * mean / cap))
    best = None
    for accum in range(first, first + 4):
        budget = rows_per_step * mean / accum
        for _ in range(8):  # first fit leaves room in its packs: grow (or shrink) until they hold rows_per_step / accum
            if budget < longest:
                break
            budget *= (rows_per_step / accum) / _per_pack(lengths, int(budget), seed)
        for width in (int(budget) // 64 * 64, int(budget) // 8 * 8, int(budget)):  # GEMM-friendly widths first
            if longest <= width <= cap:
                change = abs(accum * _per_pack(lengths, width, seed) / rows_per_step - 1)
                if change <= ROWS_TOLERANCE:
                    return width, accum
                best = best if best and best[0] <= change else (change, width, accum)
    return None


def plan_budget(lengths, micro_batch: int, grad_accum: int, tokens: int | None, seed: int) -> dict:
    """The packed micro-batch's token budget and grad_accum keeping the script's rows per optimizer step. tokens
    (speedup(tokens=...)) forces the budget; then the rows per step may move, and `change` says by how much."""
    lengths = np.asarray(lengths)
    longest = int(lengths.max())
    # fewer rows than a step (3 rows at batch 8 x grad_accum 4): each of the script's steps holds all of them
    micro_batch, rows_per_step = min(micro_batch, len(lengths)), min(micro_batch * grad_accum, len(lengths))
    sample = lengths if len(lengths) <= SAMPLE else np.random.default_rng(seed).choice(lengths, SAMPLE, replace=False)
    why = None
    if tokens is not None:
        budget = max(int(tokens), longest)
        accum = max(1, round(rows_per_step / _per_pack(sample, budget, seed)))
    else:
        fit = _fit(sample, rows_per_step, micro_batch, seed)
        if fit is None:
            per = _per_pack(sample, longest, seed)
            why = (f"a pack must hold the longest row ({longest} tokens), which takes ~{per:.1f} rows: no budget keeps "
                   f"your {rows_per_step} rows a step within {ROWS_TOLERANCE:.0%} (speedup(tokens=...) forces one)")
            budget, accum = longest, 1
        else:
            budget, accum = fit
    packs = first_fit(lengths, budget, seed)
    per_pack = len(lengths) / len(packs)
    return {"tokens": budget, "packs": packs, "rows_per_pack": per_pack, "grad_accum": accum,
            "grad_accum_before": grad_accum, "rows_per_step": accum * per_pack, "rows_per_step_before": rows_per_step,
            "change": accum * per_pack / rows_per_step - 1, "refused": why}


class Batches:
    """The packing collator, its counts left on the batch for the Trainer's tap (src/measure/tap.py) to take off.
    padding_free tells the drop-in's report the batches are packed. A pack it cannot build becomes a plain padded
    batch of its rows (the model reads both), said once."""
    padding_free = True

    def __init__(self, collator: PackCollator):
        self.collator = collator
        self.failed = None

    def __call__(self, items):
        try:
            return self.collator(items)
        except Exception as exc:
            if self.failed is None:
                self.failed = f"{type(exc).__name__}: {exc}"
                print(f"trainsweep.speedup: a pack could not be built ({self.failed}); its rows go as a padded batch",
                      file=sys.stderr, flush=True)
            return self.padded([r for item in items for r in item.get("pack", [item])])

    def padded(self, rows: list[dict]) -> dict:
        c = self.collator
        width = max(len(r["input_ids"]) for r in rows)
        pad = lambda seq, value: list(seq)[:width] + [value] * (width - len(seq))  # noqa: E731
        batch = {"input_ids": torch.tensor([pad(r["input_ids"], c.pad_id) for r in rows]),
                 "attention_mask": torch.tensor([pad([1] * len(r["input_ids"]), 0) for r in rows])}
        if c.task == "classification":
            batch["labels"] = torch.tensor([int(r["labels"]) for r in rows])
        else:
            batch["labels"] = torch.tensor([pad(r["labels"], -100) for r in rows])
        return batch


def apply(trainer, model, rows: TrainRows, task: str, tokens: int | None, fix_loss_scale: bool, out: Speedup) -> None:
    """Turn the lever on (or say why not): the Trainer's train dataloader swapped for the packs, grad_accum set so a
    step holds the script's rows, a classifier taught to pool each sequence."""
    from ..measure.tap import tap
    from ..model.packed import pool_per_sequence

    said = ""
    if rows.kind == OWN:  # a collator of the script's own: packed only as the known kind it pads as
        reading, why = collator_probe.probe(trainer, rows)
        if reading is None:
            raise Refused(why)
        rows.kind, rows.pad_id, said = reading.kind, reading.pad_id, reading.line + "; "
    args = trainer.args
    seed = args.data_seed if args.data_seed is not None else args.seed
    plan = plan_budget(rows.lengths, args.per_device_train_batch_size, args.gradient_accumulation_steps, tokens, seed)
    if plan["refused"]:
        raise Refused(plan["refused"])
    weight = loss_regulariser(model)
    if weight and plan["grad_accum"] != plan["grad_accum_before"]:
        raise Refused(f"PEFT AdaLoRA adds its orthogonal regularisation (orth_reg_weight {weight}) to every "
                      f"micro-batch's loss: {plan['grad_accum']} micro-batches a step in place of your "
                      f"{plan['grad_accum_before']} would weigh it {plan['grad_accum'] / plan['grad_accum_before']:.2f}x")
    scale = loss_scale.probe(trainer, loss_scale.first_batch(trainer)) if task == "classification" else None
    factor = 1 if scale is None or fix_loss_scale else scale.factor
    longest, shortest = int(rows.lengths.max()), max(1, int(rows.lengths.min()))
    collator = PackCollator(task=task, pad_id=rows.pad_id or 0, max_length=longest, budget=plan["tokens"],
                            slots=max(max_sequences(plan["tokens"], shortest, longest), 3))
    packed = PackedDataset(rows, plan.pop("packs"))
    out.packing = {**plan, "micro_batches_per_epoch": len(packed), "loss_scale": factor}
    saved = {"batch": trainer._train_batch_size,
             "loss_kwargs": getattr(trainer, "model_accepts_loss_kwargs", None)}
    out.batches = (packed, collator)
    if hasattr(trainer, "_set_signature_columns_if_needed"):
        # the columns the script's own batches keep are read from the model's own forward, not the pooling one
        trainer._set_signature_columns_if_needed()
    taps = tap(trainer)  # takes the packs' counts off each batch before the model sees them
    rate = []  # the Trainer's samples/s corrected to rows while the lever is on (src/levers/row_rate.py)
    seen = []  # its non-padding num_input_tokens_seen counted from the packs' real tokens (the same module)

    def loader():
        generator = torch.Generator().manual_seed(seed)
        dl = torch.utils.data.DataLoader(
            packed, batch_size=1, sampler=torch.utils.data.RandomSampler(packed, generator=generator),
            collate_fn=Batches(collator), num_workers=args.dataloader_num_workers,
            pin_memory=args.dataloader_pin_memory, persistent_workers=args.dataloader_persistent_workers,
            prefetch_factor=args.dataloader_prefetch_factor)
        return trainer.accelerator.prepare(dl)

    pooling = []  # pool_per_sequence's switch, once it is installed

    def toggle(on: bool) -> None:
        if on:
            trainer.get_train_dataloader = loader
            arguments.pin(args, "gradient_accumulation_steps", plan["grad_accum"])
            trainer._train_batch_size = 1
            rate.append(row_rate.install(trainer, taps))
            seen.append(row_rate.install_tokens_seen(trainer, taps))
            if task == "classification":
                # the packed classifier sums its loss over num_items_in_batch: grad-accum equals the larger batch
                trainer.model_accepts_loss_kwargs = True
                if pooling:
                    pooling[0](True)
                else:
                    pooling.append(pool_per_sequence(model, scale=factor))
        else:
            vars(trainer).pop("get_train_dataloader", None)
            arguments.release(args, "gradient_accumulation_steps")
            trainer._train_batch_size = saved["batch"]
            while rate:
                row_rate.remove(trainer, taps, rate.pop())
            while seen:
                row_rate.remove_tokens_seen(trainer, taps, seen.pop())
            if task == "classification":
                trainer.model_accepts_loss_kwargs = saved["loss_kwargs"]
                if pooling:  # the model's own forward again, under what wrapped it since (accelerate's autocast)
                    pooling[0](False)

    toggle(True)
    accum = (f"grad_accum {plan['grad_accum_before']} -> {plan['grad_accum']}"
             if plan["grad_accum"] != plan["grad_accum_before"] else f"grad_accum {plan['grad_accum']} as yours")
    step = (f"{accum}: ~{plan['rows_per_step']:.1f} rows a step (yours {plan['rows_per_step_before']}, "
            f"{plan['change']:+.1%}; the Trainer's train_samples_per_second counts these rows, not packs)")
    if abs(plan["change"]) > ROWS_TOLERANCE:
        step += " - MORE THAN 3% OFF YOUR ROWS A STEP: your learning rate was tuned for yours"
    step += _short_run_line(args, plan["grad_accum"], len(packed))
    step += _tokens_seen_line(args) + _trl_tokens_line(trainer)
    # what changes however well the rest is kept: which rows share a step (a newcomer's classifier picked another
    # best checkpoint sped up, and nothing had said its steps held other rows)
    regrouped = (f"your rows regrouped into packs, drawn in speedup's own shuffled order (seed {seed}): a step holds "
                 "other rows than yours did, so step-by-step losses, and a checkpoint picked by evaluation, differ "
                 "from your plain run's")
    out.add("padding-free batches", True, f"{said}{plan['tokens']:,} tokens a micro-batch "
            f"(~{plan['rows_per_pack']:.1f} rows), {step}; {regrouped}; learning rate as it was; "
            f"{_scale_line(scale, factor)}", toggle)


def _short_run_line(args, accum: int, packs: int) -> str:
    """The rows a step above are an epoch's mean: packs hold more or fewer rows as their rows' lengths fall, so a run
    of a few steps may draw a mean of its own (a newcomer's short run drew fewer rows a step than the line said)."""
    steps = args.max_steps if args.max_steps and args.max_steps > 0 else None
    if steps is None or steps * accum >= packs:
        return ""
    return (f"; that is over an epoch: your {steps} steps draw {steps * accum:,} of its {packs:,} packs, whose rows a "
            "step may differ from that mean (the report counts the rows that trained)")


def _trl_tokens_line(trainer) -> str:
    """TRL's SFTTrainer logs num_tokens from the batch's attention mask, else its positions: a pack has no mask, so
    its padding is counted."""
    if not type(trainer).__module__.startswith("trl") or not hasattr(trainer, "_metrics"):
        return ""
    return "; TRL's logged num_tokens counts the packs' positions, their padding included"


def _tokens_seen_line(args) -> str:
    mode = getattr(args, "include_num_input_tokens_seen", "no")
    if mode == "all":
        return ("; num_input_tokens_seen counts the packs' positions, padding included as yours did (fewer: less "
                "padding)")
    if mode == "non_padding":
        return "; num_input_tokens_seen counts each pack's real tokens"
    return ""


def _scale_line(scale, factor: int) -> str:
    if scale is None or scale.factor == 1:
        return "loss scale as yours"
    if factor == 1:
        return (f"LOSS SCALE CHANGED: yours was {scale.factor}x the batch mean (transformers#47688), the packed loss is "
                "the mean (fix_loss_scale=True; the launcher's --fix-loss-scale)")
    return (f"loss scale as yours: {scale.factor}x the batch mean, as your Trainer computes it (transformers#47688; "
            "speedup(fix_loss_scale=True), or the launcher's --fix-loss-scale, makes it the mean)")


class Refused(Exception):
    """The lever does not fit this script; the message says why (not an error)."""
