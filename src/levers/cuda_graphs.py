"""Whole-model CUDA graphs for `trainsweep.speedup`: where they pay for their compile, and applying them to a
user's Trainer (the model compiled with torch.compile's reduce-overhead, its LoRA linears fused, its batch copies
non-blocking, each micro-batch marked as a new graph step, evaluation eager) with a switch that puts each thing
back."""
from __future__ import annotations

import math

import torch

from ..model.fused_lora import fuse_lora, unfuse_lora
from .outcome import Speedup

# Where whole-model CUDA graphs pay off (experiments/speedup, Qwen3-4B classifier on an H100): at 1.7k-token packed
# micro-batches the step is launch-bound and graphs ran 20.6k real tok/s against regional compile's 9.6k in one
# call (17.3k on another machine), after 146 s more compile: ~1,600 micro-batches to break even in that call (calls
# 2-3's graphed compile and step against call 1's regional, across calls: ~1,300 and ~2,400). Both the compile and
# the launches it saves grow with depth, so the break-even is a number of micro-batches, not of seconds. Above 4k
# tokens the GPU is busy: graphs unmeasured there.
MAX_TOKENS = 4096
PAY_OFF = 2000  # micro-batches


def why_not_worth_it(trainer, packing: dict, task: str) -> str | None:
    """Why whole-model CUDA graphs would not pay for their compile in this run (None: they would). Measured on a
    sequence classifier only: a causal LM (TRL's SFTTrainer among them) gets them when it asks."""
    args = trainer.args
    if task != "classification":
        return "measured on sequence classifiers only so far: graphs=True to try them on a causal LM"
    if packing["tokens"] > MAX_TOKENS:
        return (f"{packing['tokens']:,}-token micro-batches keep the GPU busy: regional compile (graphs won at "
                f"1.7k-2k tokens; graphs=True to try)")
    if args.max_steps and args.max_steps > 0:
        micro = args.max_steps * packing["grad_accum"]
    else:
        micro = math.ceil(args.num_train_epochs * packing["micro_batches_per_epoch"])
    if micro < PAY_OFF:
        return (f"{micro:,} micro-batches: their minutes of whole-model compile pay off past ~{PAY_OFF:,} "
                "(graphs=True to force)")
    return None


def apply(trainer, model, inner, task: str, cuda: bool, compile: bool | None, graphs: bool | None,
          out: Speedup) -> bool:
    """The whole model compiled into CUDA graphs (torch.compile's reduce-overhead), which replay a micro-batch's
    forward and backward as a few launches where regional compile launches every kernel from Python: the lever for
    small, launch-bound micro-batches (the Qwen3-4B classifier at batch 8 on an H100: 4.5-5.6x the script as
    written, against 2.1x with regional compile, after ~2-3.5 minutes of compile at 36 layers: experiments/speedup).
    With it, the LoRA linears fused (a tie under regional compile, fewer kernels to capture here) and batch copies that
    don't wait for the GPU (the host runs ahead of the replay). Evaluation runs eager: its padded batches change
    shape, and each shape would be a new graph. graphs: None where it pays off (why_not_worth_it), True when asked.
    Returns whether it was applied (if not, regional compile is tried as usual)."""
    args = trainer.args
    if compile is False:
        why_not = "compile=False"
    elif getattr(args, "torch_compile", False):
        why_not = "your script compiles the whole model (torch_compile=True)"
    elif not cuda:
        why_not = "no GPU: CUDA graphs need one"
    else:  # asked for (graphs=True), or on where they pay off
        why_not = why_not_worth_it(trainer, out.packing, task) if graphs is None else None
    if why_not:
        out.add("CUDA graphs", False, why_not)
        return False
    fused = fuse_lora(model)["fused"]
    # inner: the model inside peft's wrapper. accelerate wraps the outer forward (autocast) when training starts,
    # and a compiled region holding that wrapper would compile again (minutes) at the first step
    inner.compile(mode="reduce-overhead")
    compiled = inner._compiled_call_impl
    config = trainer.accelerator.dataloader_config
    blocking = config.non_blocking
    step, predict = trainer.training_step, trainer.prediction_step
    own = {name: vars(trainer)[name] for name in ("training_step", "prediction_step") if name in vars(trainer)}

    def marked_step(*a, **kw):  # a new micro-batch: the last one's graph outputs may be overwritten now
        torch.compiler.cudagraph_mark_step_begin()
        return step(*a, **kw)

    def eager_prediction(*a, **kw):
        impl, inner._compiled_call_impl = inner._compiled_call_impl, None
        try:
            return predict(*a, **kw)
        finally:
            inner._compiled_call_impl = impl

    def toggle(on: bool) -> None:
        inner._compiled_call_impl = compiled if on else None
        if on:
            fuse_lora(model)
        else:
            unfuse_lora(model)
        config.non_blocking = bool(args.dataloader_pin_memory) if on else blocking
        if on:
            trainer.training_step, trainer.prediction_step = marked_step, eager_prediction
        else:  # the Trainer's own methods again, or whatever the script had put on the instance
            for name in ("training_step", "prediction_step"):
                vars(trainer).pop(name, None)
            vars(trainer).update(own)

    toggle(True)
    out.add("CUDA graphs", True, f"the whole model compiled into CUDA graphs (reduce-overhead), {fused} LoRA linears "
            f"fused, batch copies {'non-blocking' if config.non_blocking else 'blocking (no pinned memory)'}; "
            "evaluation eager; minutes of compile before the first step", toggle)
    out.add("regional compile", False, "the whole model is compiled (CUDA graphs)")
    return True
