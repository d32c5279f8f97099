"""The Hugging Face Trainer, configured from our groups, with token counting on every micro-batch."""
from __future__ import annotations

import logging
import math
import os
import shutil
from pathlib import Path

import torch
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, Trainer, TrainerCallback, TrainingArguments

from ..base import ranks
from ..config.errors import ConfigError
from ..config.training import own_keys
from ..data.packing import PACK_STATS
from ..machine.env import Resolved
from ..measure.meter import TokenCounter
from ..model.speed import decoder_layers, liger_kernels
from . import keep
from .metrics import evaluate_every

log = logging.getLogger(__name__)
OWN_KEYS = own_keys()  # refused in trainer.args: trainsweep sets them (src/config/training.py)


def check_args(cfg) -> dict:
    """trainer.args as keyword arguments: each a TrainingArguments field (the closest one suggested otherwise),
    none of the fields trainsweep sets from its own keys."""
    import dataclasses
    import difflib

    args_class = Seq2SeqTrainingArguments if cfg.task.name == "seq2seq" else TrainingArguments
    known = {f.name for f in dataclasses.fields(args_class)}
    given = dict(cfg.trainer.args or {})
    for key, value in given.items():
        if key in OWN_KEYS:
            raise ConfigError(f"trainer.args.{key}", value, f"trainsweep sets it: use {OWN_KEYS[key]}")
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            raise ConfigError(f"trainer.args.{key}", value, f"not a {args_class.__name__} field"
                              + (f"; did you mean trainer.args.{near[0]}?" if near else ""))
    return given


def training_args(cfg, res: Resolved, out_dir: Path) -> TrainingArguments:
    tr, dl = cfg.trainer, cfg.dataloader
    cuda = res.device == "cuda"
    workers = min(dl.num_workers, os.cpu_count() or 1)
    args_class = Seq2SeqTrainingArguments if cfg.task.name == "seq2seq" else TrainingArguments
    whole_model_compile = tr.torch_compile and tr.compile_scope == "model"  # regional: compile_regions, before the Trainer
    ours = dict(
        output_dir=str(out_dir / "checkpoints"),
        per_device_train_batch_size=1 if cfg.batch.tokens else cfg.batch.size,  # a token budget: one pack per micro-batch
        per_device_eval_batch_size=cfg.batch.size,
        gradient_accumulation_steps=cfg.batch.grad_accum,
        max_steps=tr.max_steps,
        learning_rate=tr.lr,
        warmup_steps=tr.warmup_steps,
        lr_scheduler_type=tr.scheduler,
        weight_decay=tr.weight_decay,
        max_grad_norm=tr.max_grad_norm,
        optim=tr.optim,
        bf16=res.amp == "bf16",
        fp16=res.amp == "fp16",
        logging_steps=tr.logging_steps,
        logging_first_step=True,  # the step-1 loss is the one to compare with ln(num_labels)
        logging_nan_inf_filter=False,  # its isnan() check is a host sync on every micro-batch
        eval_strategy="steps" if evaluate_every(cfg) else "no",
        eval_steps=evaluate_every(cfg) or None,
        save_strategy="steps" if tr.save_steps else "no",
        save_steps=tr.save_steps or 500,
        save_total_limit=tr.save_total_limit,
        report_to=[],  # src/report/loggers.py logs to W&B under our own metric names
        run_name=cfg.model.name,
        seed=tr.seed,
        data_seed=cfg.data.seed,
        dataloader_num_workers=workers,
        dataloader_pin_memory=dl.pin_memory and cuda,
        dataloader_prefetch_factor=dl.prefetch_factor if workers else None,
        dataloader_persistent_workers=dl.persistent_workers and workers > 0,
        # Without non_blocking, accelerate's copy of each batch waits for the GPU to finish the step before: the
        # host could never launch ahead of the GPU, whatever pin_memory says.
        accelerator_config={"non_blocking": bool(dl.non_blocking and cuda)},  # the check: only with pin_memory
        train_sampling_strategy="group_by_length" if cfg.padding.strategy == "grouped" else "random",
        length_column_name="length",
        remove_unused_columns=False,  # our collator picks the columns; signature inspection is not needed
        use_cpu=not cuda,
        disable_tqdm=False,
        **checkpointing(tr.gradient_checkpointing, tr.checkpoint_reentrant),
        torch_compile=whole_model_compile,
        torch_compile_backend=tr.compile_backend if whole_model_compile else None,
        torch_compile_mode=tr.compile_mode if whole_model_compile else None,
        use_liger_kernel=tr.use_liger_kernel,
        liger_kernel_config=liger_kernels(cfg.task.name) if tr.use_liger_kernel else None,
        **parallel(cfg.distributed, cuda, res.world_size),
        **({"predict_with_generate": bool(evaluate_every(cfg)), "generation_max_length": tr.generation_max_length,
            "generation_num_beams": tr.generation_num_beams} if cfg.task.name == "seq2seq" else {}),
    )
    given = check_args(cfg)
    try:  # trainer.args last: the user's TrainingArguments names win over trainsweep's derived settings
        return args_class(**{**ours, **given})
    except ValueError as exc:  # TrainingArguments' own check of a value (an unknown scheduler name, ...)
        raise ConfigError("trainer.args", dict(cfg.trainer.args), str(exc).strip().splitlines()[0]) from None


def from_the_data(cfg, prep, world_size: int, say: bool = True) -> dict:
    """What the config leaves to the data, decided now that the rows exist, and set in cfg for the rest of the run
    (the checks, the meter, the report): task.num_labels left unset is the data's count of classes, and
    trainer.epochs becomes the optimizer steps that pass over the train rows that often."""
    from omegaconf import OmegaConf

    out = {}
    micro = 1 if cfg.batch.tokens else cfg.batch.size  # a token budget: one pack per micro-batch
    per_step, rows = micro * cfg.batch.grad_accum * world_size, len(prep.for_trainer)
    if per_step > rows:  # each step would see every row and report a batch it never had
        what = "packs" if cfg.batch.tokens else "rows"
        raise ConfigError("batch.size", cfg.batch.size, f"{per_step} {what} a step (batch.size x batch.grad_accum x "
                                                        f"{world_size} process(es)), but the training data has {rows}: "
                                                        f"at most {rows} a step")
    if cfg.task.name == "classification" and cfg.task.num_labels is None:
        OmegaConf.update(cfg, "task.num_labels", prep.info["num_labels"])
        out["num_labels"] = cfg.task.num_labels
        log.info("task.num_labels=%d: the classes in the data", cfg.task.num_labels)
    if cfg.trainer.epochs:
        # as the Trainer counts a pass: every rank's share of the rows in micro-batches, the last one short, and the
        # last step of a pass short of grad_accum micro-batches (epochs x rows / per_step left a pass's tail unseen)
        batches = math.ceil(math.ceil(rows / world_size) / micro)
        steps = max(1, math.ceil(cfg.trainer.epochs * math.ceil(batches / cfg.batch.grad_accum)))
        if say:  # not when batch.tokens=auto will repack and count again
            print(f"trainer.epochs={cfg.trainer.epochs:g}: {steps} optimizer steps ({len(prep.for_trainer)} "
                  f"{'packs' if cfg.batch.tokens else 'rows'}, {per_step} a step; trainer.max_steps={cfg.trainer.max_steps} unused)")
        OmegaConf.update(cfg, "trainer.max_steps", steps)
        out["max_steps"] = steps
    return out


def save_final(trainer, tokenizer, final: Path, kind: str, cfg=None) -> dict | None:
    """The trained result, the ecosystem's way: trainer.save_model writes the adapter (adapter_config.json and
    adapter_model.safetensors, which PeftModel.from_pretrained loads onto the base) or the whole model (which
    from_pretrained loads). Every rank calls it, as FSDP's gather of the full weights needs; the Trainer writes
    from the main process only. The tokenizer goes beside it, so the directory is all a user needs. Returns
    what the report says about it, on the main rank. An adapter on random weights (`cfg` given) gets its base
    beside it, or a rebuild recipe in the report (src/train/keep.py).

    Written into a fresh `.final.partial` beside final/ and renamed over it only when whole: saved into final/
    itself, a model kept an earlier run's adapter files beside it (peft=lora, then peft=none into the same run
    directory), and from_pretrained loaded the model and applied the stale adapter."""
    partial = final.with_name(".final.partial")
    if ranks.is_main():  # a save killed midway left one: never build on it
        shutil.rmtree(partial, ignore_errors=True)
    trainer.save_model(str(partial))
    # Under FSDP the save all-gathers the full weights onto rank 0, which copies each to the CPU (the host waits);
    # the other ranks only queue their side of each gather on the GPU and return. On two H200s rank 0 then waited
    # in that gather for minutes while rank 1's process was gone (no stack from it or its workers): a rank that
    # exits takes the gathers still queued with it. So every rank waits here until rank 0 has the whole state
    # dict (a barrier blocks the host; a no-op in one process).
    trainer.accelerator.wait_for_everyone()
    if not ranks.is_main():
        return None
    if tokenizer is not None:  # synthetic data is token ids: no tokenizer to keep
        tokenizer.save_pretrained(str(partial))
    base = keep.keep_base(cfg, trainer, partial, final) if cfg is not None and keep.random_base(cfg) else None
    replace_dir(partial, final)
    size = sum(p.stat().st_size for p in final.rglob("*") if p.is_file())
    return {"path": str(final), "kind": kind, "tokenizer": tokenizer is not None, "size_mb": size / 2**20,
            **({"base": base} if base else {})}


def replace_dir(new: Path, old: Path) -> None:
    """`new` renamed to `old`'s name, and `old`'s earlier content removed: a reader finds the earlier directory
    or the new one whole (two renames; a kill between them leaves the earlier one under `.NAME.old`)."""
    stale = old.with_name(f".{old.name}.old")
    shutil.rmtree(stale, ignore_errors=True)
    if old.exists():
        os.replace(old, stale)
    os.replace(new, old)
    shutil.rmtree(stale, ignore_errors=True)


def checkpointing(enabled: bool, reentrant: bool = False) -> dict:
    """transformers 5.2x renamed gradient_checkpointing to activation_checkpointing; 5.17 knows only the old name."""
    if not enabled:
        return {}
    new = "activation_checkpointing" in TrainingArguments.__dataclass_fields__
    prefix = "activation" if new else "gradient"
    # non-reentrant checkpointing needs no input grads, so it works under LoRA's frozen embeddings
    return {f"{prefix}_checkpointing": True, f"{prefix}_checkpointing_kwargs": {"use_reentrant": reentrant}}


def parallel(dd, cuda: bool, world_size: int) -> dict:
    """DDP/FSDP settings for the Trainer's accelerate integration, under torchrun only (a backend named in a
    single process makes accelerate look for a process group that isn't there)."""
    if world_size == 1:
        return {}
    out = {"ddp_backend": (("nccl" if cuda else "gloo") if dd.backend == "auto" else dd.backend),
           "ddp_find_unused_parameters": dd.find_unused_parameters, "ddp_bucket_cap_mb": dd.bucket_cap_mb}
    if dd.strategy == "fsdp":
        # FSDP2, wrapped per decoder layer (the policy falls back to the model's _no_split_modules);
        # mixed precision follows the Trainer's bf16/fp16 flags.
        fsdp_config = {"version": 2, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                       "reshard_after_forward": dd.fsdp_reshard_after_forward, "cpu_offload": dd.fsdp_cpu_offload,
                       "activation_checkpointing": dd.fsdp_activation_checkpointing}
        # transformers 5.2x takes fsdp=True with everything in fsdp_config; older ones the legacy string
        legacy = not hasattr(TrainingArguments, "_apply_legacy_fsdp_to_config")
        out.update(fsdp="full_shard auto_wrap" if legacy else True, fsdp_config=fsdp_config)
    return out


class PartialCheckpointing(TrainerCallback):
    """Gradient checkpointing on every k-th decoder layer only: the Trainer turns it on for all of them
    before training starts; this turns it off again for the rest. k=2 saves about half the activation
    memory that full checkpointing saves, for half its recompute."""

    def __init__(self, every: int):
        self.every = every

    def on_train_begin(self, args, state, control, model=None, **kw):
        for i, layer in enumerate(decoder_layers(model)):
            layer.gradient_checkpointing = layer.gradient_checkpointing and i % self.every == 0


class StampCheckpoints(TrainerCallback):
    """Each checkpoint records the config it was made under (src/train/checkpoints.py): a resume continues only
    a checkpoint of its own config, whatever the run directory's config.yaml says."""

    def __init__(self, config: dict):
        self.config = config

    def on_save(self, args, state, control, **kw):
        if state.is_world_process_zero:  # the Trainer has written the checkpoint whole by now
            from .checkpoints import stamp

            stamp(Path(args.output_dir) / f"checkpoint-{state.global_step}", self.config)


def callbacks(cfg) -> list:
    tr = cfg.trainer
    return [PartialCheckpointing(tr.checkpoint_every)] if tr.gradient_checkpointing and tr.checkpoint_every > 1 else []


def token_cross_entropy(outputs, labels, num_items_in_batch=None):
    """Seq2seq loss: summed over scored tokens, divided by the scored tokens of the whole accumulated batch,
    so grad_accum=2 gives the gradient of the batch twice the size (the model's own mean doesn't)."""
    logits = outputs["logits"].float()
    total = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
    count = num_items_in_batch if num_items_in_batch is not None else (labels != -100).sum()
    return total / count


def trainer_class(task: str, packed: bool = False, cuda_graphs: bool = False):
    base = Seq2SeqTrainer if task == "seq2seq" else Trainer

    class MeasuredTrainer(base):
        """The Trainer, counting the tokens of each micro-batch, with gradient accumulation that equals the
        larger batch, and without two per-step host costs of its own."""

        token_counter: TokenCounter | None = None

        def __init__(self, *args, **kwargs):
            if task == "seq2seq":
                kwargs.setdefault("compute_loss_func", token_cross_entropy)
            super().__init__(*args, **kwargs)
            if task == "classification":
                # The model accepts **kwargs, so the Trainer hands it num_items_in_batch and skips its own
                # division by grad_accum, but the classification loss ignores it (a per-micro-batch mean):
                # loss and gradients came out grad_accum times too large (transformers#47688). The packed
                # classifier (src/model/packed.py) sums its loss over num_items_in_batch.
                self.model_accepts_loss_kwargs = packed

        def _prepare_inputs(self, inputs):
            # the collator's host-side counts are for the token counter, not the model
            return super()._prepare_inputs({k: v for k, v in inputs.items() if k != PACK_STATS})

        def training_step(self, model, inputs, num_items_in_batch=None):
            if self.token_counter is not None:
                self.token_counter.add(inputs)
            if cuda_graphs:  # a new micro-batch: the graphs' outputs of the last one may be overwritten now
                torch.compiler.cudagraph_mark_step_begin()
            return super().training_step(model, inputs, num_items_in_batch)

        def prediction_step(self, model, inputs, *args, **kwargs):
            if cuda_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            return super().prediction_step(model, inputs, *args, **kwargs)

        floating_point_ops = flops_counted_once

        def _clip_grad_norm(self, model):
            if self.args.world_size > 1:  # distributed wrappers (FSDP) keep the Trainer's own path
                return super()._clip_grad_norm(model)
            return clip_trainable(self, model)

    return MeasuredTrainer


def flops_counted_once(trainer, inputs) -> int:
    """The Trainer's total_flos estimate with the parameters counted once: the Trainer recounts them (walking
    every module) on every micro-batch, milliseconds of host time per step on a 4B model. The same number."""
    if getattr(trainer, "_flop_params", None) is None:
        count = getattr(trainer.model, "num_parameters", None)
        trainer._flop_params = count(exclude_embeddings=True) if count else 0
    ids = inputs.get(getattr(trainer.model, "main_input_name", "input_ids"))
    return 6 * ids.numel() * trainer._flop_params if ids is not None else 0


def clip_trainable(trainer, model):
    """Gradient clipping over the weights that have gradients: the Trainer's norm, bit for bit (torch's clipping
    skips a weight without one), without its walk over every module each step (3.1 ms on a 36-layer LoRA model
    on a CPU core; the gradients read off a kept list, 0.07 ms). The list is taken once per train() call, since a
    script may unfreeze weights between two (a user-corpus script's second stage clipped by a stale list), and the
    gradients are read every step (a callback may unfreeze during one). One process only."""
    if getattr(trainer, "_params_of", None) is not trainer.state:
        trainer._params, trainer._params_of = list(model.parameters()), trainer.state
    with_grads = [p for p in trainer._params if p.grad is not None]
    return trainer.accelerator.clip_grad_norm_(with_grads, trainer.args.max_grad_norm)


LIBRARIES = ("transformers.", "trl.")  # the Trainer classes whose methods read batches as transformers' do


def own_method(trainer, name: str):
    """The class of the script's own that defines `name` for this Trainer (a subclass overriding compute_loss,
    _get_train_sampler, ...), or None where transformers' or TRL's own does."""
    owner = next((c for c in type(trainer).__mro__ if name in vars(c)), None)
    return owner if owner is not None and not owner.__module__.startswith(LIBRARIES) else None
