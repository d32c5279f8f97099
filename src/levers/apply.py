"""`trainsweep.speedup(trainer)`: the levers that make trainsweep's runner fast, applied to a user's own Trainer
(or TRL's SFTTrainer) before `trainer.train()`, each one only where it fits the script and with one line saying
why where it doesn't; nothing that ran before fails.

- padding-free batches (src/levers/packing.py): the train rows regrouped into micro-batches of a fixed token budget,
  positions restarting per sequence; a classifier pools each sequence's last token (src/model/packed.py). The
  budget holds the script's rows per optimizer step (within 3%) in as few micro-batches as its largest padded
  micro-batch allows, so memory stays within what the script used; the loss keeps the script's scale.
- varlen attention: torch's flash kernel reads the sequence boundaries (a GPU; the CPU's sdpa reads them from
  position_ids, slowly);
- regional compile: every decoder layer compiled once at the fixed packed shape (a GPU); or, where it pays off
  (a classifier's small micro-batches in a long run) or with graphs=True, the whole model compiled into CUDA
  graphs, its LoRA linears fused and its batch copies non-blocking (src/levers/cuda_graphs.py);
- the Trainer's own per-step host work, as trainsweep's runner trims it (src/train/trainer.py): the parameters
  counted once for its FLOP estimate, gradient clipping over the weights that have gradients (both the same numbers),
  and no isnan() check of every micro-batch's loss for the logs (a host sync each time; a NaN loss is then
  logged as NaN rather than left out of the logged mean).

Not applied, and said: the fused LoRA linear (a tie under regional compile on an H100; CUDA graphs fuse them), FP8
(it changes the base matmuls' numerics: trainsweep's runner offers it as precision=fp8), bf16 adapters (a tie, and it
would change the precision of the script's trainable weights).
"""
from __future__ import annotations

import inspect
import types

import torch

from ..base.rng import held_by, rng_kept
from ..model.build import active_adapter, attention_is_causal, uncompiled
from ..train.trainer import own_method
from . import arguments, cuda_graphs, packing
from .outcome import Speedup
from .packing import plan_budget  # noqa: F401  (tests: the budget's rule)
from .rows import TrainRows, dropped_inputs

TASKS = {"ForSequenceClassification": "classification", "ForCausalLM": "causal_lm", "LMHeadModel": "causal_lm"}
NOT_APPLIED = {
    # each figure names its card and where it was measured: a user's own card may differ
    "fused LoRA": "a tie under regional compile on an H100 (0.996x, experiments/speed/README.md call 4); it wins "
                  "only under whole-model CUDA graphs",
    "FP8 base matmuls": "it changes the base matmuls' numerics: trainsweep's runner offers it (precision=fp8)",
    "bf16 adapters": "a tie on an H100 (1.05x (0.98-1.11), compiled on 4 layers: experiments/speed/README.md), and it "
                     "would change the precision of your trainable weights",
}


def speedup(trainer, tokens: int | None = None, compile: bool | None = None, verify: bool | None = None,
            graphs: bool | None = None, rounds: int = 5, quiet: bool = False, fix_loss_scale: bool = False,
            clock=None) -> Speedup:
    """Apply the levers that fit this Trainer (before trainer.train()); returns what was done. tokens: the packed
    micro-batch's budget (default: see the module); compile: regional compile (default: on a GPU); graphs: the whole
    model compiled into CUDA graphs in place of regional compile (default: where it pays off, see
    cuda_graphs.PAY_OFF; minutes of compile first); verify: time the script's own batches against the levers' for
    `rounds` interleaved rounds before training (default: on), keep the levers that win, and say so with both
    losses; verify=False applies them unmeasured, and the line says so. fix_loss_scale: where the script's
    accumulated loss is grad_accum times the batch mean (transformers#47688), make the packed loss the mean
    (default: keep the script's scale). clock: what the verification times with (tests pass a fake one)."""
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0):
        raise ValueError(f"speedup(tokens={tokens!r}): a packed micro-batch's token budget is a positive int")
    if getattr(trainer, "trainsweep_speedup", None) is not None:  # a second call would wrap what the first wrapped
        return trainer.trainsweep_speedup
    # the levers pin grad_accum and the logs' NaN filter on a view of the Trainer's own (src/levers/arguments.py):
    # arguments the script shares between Trainers (a k-fold loop) stay as it wrote them, and its later changes to
    # the rest (max_steps between two train() calls) still reach the Trainer
    trainer.args = arguments.view(trainer.args)
    model, args = trainer.model, trainer.args
    cuda = next(model.parameters()).device.type == "cuda"
    out = trainer.trainsweep_speedup = Speedup(device=torch.cuda.get_device_name() if cuda else "cpu")
    rows, why = None, None
    try:
        task, why = _fits(trainer, model)
        # reading every row (its length, its inputs) must not move what a dataset that draws per row draws next
        with rng_kept(*held_by(trainer)):
            if why is None:
                rows, why = TrainRows.read(trainer.train_dataset, trainer.data_collator, task, _pad_id(trainer, model))
            if why is None:
                why = dropped_inputs(trainer.train_dataset, _model_inputs(model))
        if why is None:
            packing.apply(trainer, model, rows, task, tokens, fix_loss_scale, out)
            _varlen(trainer, model, cuda, int(rows.lengths.max()), out)
            graphed = graphs is not False and cuda_graphs.apply(trainer, model, _base(model), task, cuda, compile, graphs,
                                                                out)
            if not graphed:
                _regional_compile(model, args, cuda, compile, out)
            _step_overheads(trainer, out)
    except packing.Refused as exc:  # the packs would change what a step means: nothing applied
        why = str(exc)
    except Exception as exc:  # rows or a model it misread: whatever it changed goes back, and it says why
        for lv in out.applied():
            lv.toggle(False)
        out.levers, why = [], f"could not be applied here ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"
    if why is not None:
        out.add("padding-free batches", False, why)
        out.add("varlen attention", False, "it reads padding-free batches")
        # it compiles over the packs (one shape); a script's own batches, fixed-width or not, are left as they are
        out.add("regional compile", False, "it compiles over padding-free batches" if cuda else "no GPU")
        out.add("Trainer step overheads", False, "a script speedup can't pack is left as it was")
    lora = bool(getattr(model, "peft_config", None))  # the adapter levers say nothing to a script without adapters
    for name, reason in NOT_APPLIED.items():
        if name in ("fused LoRA", "bf16 adapters") and not lora:
            continue
        if not (name == "fused LoRA" and out.on("CUDA graphs")):  # the graphs lever fuses them
            out.add(name, False, reason)
    if verify is not False and out.applied():
        from . import verify as verification

        try:
            verification.verify(trainer, out, rows, rounds=rounds, **({"clock": clock} if clock else {}))
        except Exception as exc:  # the verification's own error: nothing it could not show stays on
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            for lv in out.applied():
                out.turn_off(lv.name, f"turned back off: the verification failed ({why})")
            out.verified = {"line": f"verification failed ({why}): every lever is off"}
    elif out.applied():
        out.verified = {"line": f"unmeasured here: verify=False applied the levers without timing them on {out.device}"}
    arguments.restore(trainer)  # no lever left on: the script's own object again
    if not quiet and getattr(trainer.args, "process_index", 0) == 0:  # under torchrun every rank decides alike
        print(out.text(), flush=True)
    return out


def _base(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _fits(trainer, model) -> tuple[str | None, str | None]:
    """(task, why not): packed batches need one process, a decoder-only causal LM or classifier, and a Trainer
    whose loss reads the batch and whose sampler draws the rows the way transformers' and TRL's do, no NEFTune."""
    if trainer.args.world_size > 1:
        return None, "several processes (DDP/FSDP): speedup packs for one process for now"
    if uncompiled(model) is not model:
        # its graph is traced at the first call, over batches as the script made them; packs and the A/B's toggles
        # would each trace it again
        return None, ("your script compiled the model itself (torch.compile before the Trainer): batches stay as "
                      "they are")
    why = _adapter_misfit(model)
    if why is not None:
        return None, why
    base = _base(model)
    name = type(base).__name__
    task = next((t for suffix, t in TASKS.items() if name.endswith(suffix)), None)
    if task is None or getattr(base.config, "is_encoder_decoder", False):
        return None, f"{name}: padding-free batches are for decoder-only causal LMs and sequence classifiers"
    causal = attention_is_causal(base)
    if causal is None:  # a family whose attention layers don't say (BLOOM's alibi): not guessed at
        return None, (f"{name}'s attention layers don't say they are causal (no is_causal): packed sequences "
                      "could attend to each other")
    if not causal:
        return None, f"{name} is an encoder (bidirectional attention): packed sequences would attend to each other"
    if task == "classification" and not hasattr(base, "score"):
        return None, f"{name} has no `score` head to pool each sequence with"
    # a classifier's packs run speedup's pooling, not the subclass's forward; an LM's may not pass their boundaries on
    own_forward = own_method(base, "forward")
    if own_forward is not None:
        return None, f"{own_forward.__name__}.forward is your own: packed batches would not run it as you wrote it"
    for method in ("compute_loss", "training_step"):
        owner = own_method(trainer, method)
        if owner is not None:
            return None, f"{owner.__name__}.{method} is your own: it may read the padded batch, so batches stay as they are"
    for method in ("get_train_dataloader", "_get_train_sampler"):
        # the packs are drawn in speedup's own shuffled order: a curriculum or weighted sampler would be dropped
        owner = own_method(trainer, method)
        if owner is not None:
            return None, (f"{owner.__name__}.{method} is your own: it decides which rows a step holds and in what "
                          "order, and packs would be drawn in speedup's order instead; batches stay as they are")
        if method in vars(trainer):  # set on this Trainer by the script (trainer.get_train_dataloader = ...)
            return None, (f"your trainer.{method} is your own (set on the Trainer): it decides which rows a step "
                          "holds, and packs would be drawn in speedup's order instead; batches stay as they are")
    if getattr(trainer.args, "auto_find_batch_size", False):
        # after an out-of-memory error the Trainer retries with half the batch; packs hold speedup's token budget
        # whatever batch size it passes, so the retry would run out of memory again and end the training
        return None, ("auto_find_batch_size halves your batch after an out-of-memory error, and packs keep their "
                      "token budget whatever it halves: batches stay as they are")
    alpha = getattr(trainer, "neftune_noise_alpha", None)
    if alpha:
        # transformers' NEFTune hook scales its noise by 1/sqrt(batch width x hidden size): one wide packed row
        # a micro-batch would get a fraction of the noise your padded rows get
        return None, (f"NEFTune (neftune_noise_alpha={alpha}) scales its embedding noise by the batch's width: "
                      "packed rows are wider and would train with less noise than yours; batches stay as they are")
    if getattr(trainer, "model_init", None) is not None:
        # train() builds a new model from model_init, without this one's per-sequence pooling, varlen attention
        # or compiled layers: a classifier then met packed batches it can't read (a user's script crashed)
        return None, ("Trainer(model_init=...) builds the model again when training starts, without what speedup "
                      "would change on this one: batches stay as they are")
    return task, None


def _model_inputs(model) -> set[str]:
    """The model's forward's arguments (not the Trainer's kept columns: TRL keeps its own masks, which its collator
    turns into labels and the model never reads)."""
    try:
        return set(inspect.signature(_base(model).forward).parameters)
    except (TypeError, ValueError):  # a forward without a signature to read: nothing known to be dropped
        return set()


def _pad_id(trainer, model) -> int | None:
    """The pad id the script's collator pads with, and transformers' LM collator unscores: the collator's own
    tokenizer's first (a script sets pad = eos on it without telling the Trainer or the model's config, and its
    rows' eos tokens then go unscored), then the Trainer's tokenizer, then the model's config."""
    collator = getattr(trainer.data_collator, "data_collator", trainer.data_collator)  # the column-removing wrapper
    holders = (getattr(collator, "tokenizer", None), getattr(collator, "processing_class", None), collator,
               getattr(trainer, "processing_class", None))
    for holder in holders:
        pad = getattr(getattr(holder, "tokenizer", holder), "pad_token_id", None)  # a processor holds a tokenizer
        if isinstance(pad, int):
            return pad
    return getattr(_base(model).config, "pad_token_id", None)


def _adapter_misfit(model) -> str | None:
    """Why the active PEFT adapter can't read packed rows, or None. Prompt learning (prompt/prefix tuning, p-tuning,
    CPT) adds its virtual tokens once per batch row, as embeddings or past_key_values: a packed row's sequences would
    share one prompt, and PEFT drops position_ids (prompt tuning, p-tuning) or shifts them (prefix tuning), which is
    what keeps packed sequences apart on sdpa and eager. aLoRA looks for its invocation tokens' last occurrence in
    each batch row and adapts only from there: in a pack, only the last sequence would be adapted."""
    conf, method = active_adapter(model)
    if conf is None:
        return None
    if getattr(conf, "is_prompt_learning", False):
        return (f"PEFT {method} adds its virtual tokens once per batch row: the sequences of a packed row would "
                "share one prompt, and PEFT drops or shifts the position_ids that keep them apart; batches stay as "
                "they are")
    if getattr(conf, "alora_invocation_tokens", None):
        return ("PEFT aLoRA adapts each batch row from the last place its invocation tokens occur: in a packed row, "
                "only the last sequence would be adapted; batches stay as they are")
    return None


def _varlen(trainer, model, cuda: bool, longest: int, out: Speedup) -> None:
    base = _base(model)
    conf = base.config
    theirs = conf._attn_implementation
    if theirs and "flash" in theirs:
        out.add("varlen attention", False, f"your {theirs} reads the packed sequence boundaries already")
        return
    if not cuda:
        out.add("varlen attention", False, f"no GPU (under packing your {theirs} reads the sequence boundaries from "
                                           "position_ids)")
        return
    try:
        import torch.nn.attention.varlen  # noqa: F401
    except ImportError:
        out.add("varlen attention", False, f"torch {torch.__version__} has no varlen flash attention (2.10+)")
        return
    window = getattr(conf, "sliding_window", None)
    if window and getattr(conf, "use_sliding_window", True) and longest > window:
        out.add("varlen attention", False, f"sliding-window attention over rows longer than its {window} tokens")
        return
    from ..model.packed import VARLEN, register_varlen

    register_varlen()
    evaluate = trainer.evaluation_loop

    def with_theirs(*a, **kw):  # evaluation batches stay the script's padded ones: its own attention reads them
        base.set_attn_implementation(theirs)
        try:
            return evaluate(*a, **kw)
        finally:
            base.set_attn_implementation(VARLEN)

    def toggle(on: bool) -> None:
        base.set_attn_implementation(VARLEN if on else theirs)
        if on:
            trainer.evaluation_loop = with_theirs
        else:
            vars(trainer).pop("evaluation_loop", None)

    toggle(True)
    out.add("varlen attention", True, f"torch's varlen flash attention in place of {theirs}", toggle)


def _step_overheads(trainer, out: Speedup) -> None:
    from ..train.trainer import clip_trainable, flops_counted_once

    args = trainer.args
    if args.world_size > 1:
        out.add("Trainer step overheads", False, "several processes: the Trainer's own clipping path stays")
        return
    nan_filter = args.logging_nan_inf_filter

    def toggle(on: bool) -> None:
        if on:
            trainer.floating_point_ops = types.MethodType(flops_counted_once, trainer)
            trainer._clip_grad_norm = types.MethodType(clip_trainable, trainer)
        else:
            vars(trainer).pop("floating_point_ops", None), vars(trainer).pop("_clip_grad_norm", None)
        if on and nan_filter:
            arguments.pin(args, "logging_nan_inf_filter", False)
        else:
            arguments.release(args, "logging_nan_inf_filter")

    toggle(True)
    # max_grad_norm=0: the Trainer clips nothing, so there is no clipping to trim
    clipping = ", clipping over the weights with gradients" if args.max_grad_norm else ""
    out.add("Trainer step overheads", True, f"parameters counted once for total_flos{clipping} (same numbers); no host "
            "sync per micro-batch for the logs' NaN filter", toggle)


def _regional_compile(model, args, cuda: bool, asked: bool | None, out: Speedup) -> None:
    from ..model.speed import compile_regions, decoder_layers

    if asked is False:
        out.add("regional compile", False, "compile=False")
    elif getattr(args, "torch_compile", False):
        out.add("regional compile", False, "your script compiles the whole model (torch_compile=True)")
    elif not (cuda or asked):
        out.add("regional compile", False, "no GPU (compile=True compiles on the CPU too)")
    else:
        n = compile_regions(model, types.SimpleNamespace(compile_backend="inductor", compile_mode=None))
        compiled = {layer: layer._compiled_call_impl for layer in decoder_layers(model)}

        def toggle(on: bool) -> None:
            for layer, impl in compiled.items():
                layer._compiled_call_impl = impl if on else None

        out.add("regional compile", True, f"{n} decoder layers, compiled once at the packed shape", toggle)
