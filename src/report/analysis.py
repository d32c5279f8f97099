"""The derived numbers of a report, from the meter's raw results: throughput, MFU/HFU, the host's share of
the step, the verdict, and (under torchrun) the cross-rank view. Read once, after training."""
from __future__ import annotations

import math
import os

from ..base import stats
from .document import Report
from .sections import (Breakdown, Compile, CpuMemory, Flags, Flops, GpuMemory, HostTime, Loss, Shapes, StepTime,
                        Throughput, Tokens, Verdict, memory_section)

DATA_BOUND_SHARE = 0.15  # the device waited this share of the step for batches
HOST_BOUND_BUSY = 0.80  # kernels ran less than this share of the step
RESERVED_SATURATED = 0.92  # reserved memory above this share of capacity: one new shape from a retry
BUSY_LOAD_PER_CPU = 1.25  # more runnable threads than CPUs by a quarter: something else competes for the host
# A timed step this many times the median and at least this many seconds longer: the process stood still (SIGSTOP,
# a suspended machine, a host swapping), not a slow config. A SIGSTOPped CPU run read ok at a third of its speed.
STALL_TIMES, STALL_MIN_S = 10, 3.0  # 3 s: a loaded CI host's hiccups stay ranked (they read "busy host")


def throughput(tokens: dict | None, steps: int, step_s: float | None) -> Throughput:
    """Per second = per step / seconds per step. Tokens come from every step of the window, times from the
    steps that were timed (a step with an evaluation inside is not), so a dropped step biases neither."""
    if not tokens or not tokens.get("samples") or not steps or not step_s:  # no rows counted: rates unknown, not 0
        return Throughput()
    rate = lambda key: tokens[key] / steps / step_s if tokens[key] else None  # noqa: E731
    # none counted: batches without input_ids (pixel_values, input_values) have no tokens; batches without labels
    # (TRL's DPO, KTO: the trainer picks what it scores) none scored that we can see
    return Throughput(samples_per_s=rate("samples"), tokens_per_s=rate("all"), real_tokens_per_s=rate("real"),
                      loss_tokens_per_s=rate("loss"),
                      pad_fraction=1 - tokens["real"] / tokens["all"] if tokens["all"] else None)


def tokens_section(tokens: dict | None) -> Tokens | None:
    """The window's counts; batches whose rows hold no input_ids (images, audio) have samples and no tokens to
    count: unknown, not 0."""
    if tokens and tokens.get("samples") and not tokens.get("all"):
        tokens = {**tokens, "all": None, "real": None, "loss": None}
    return Tokens.from_dict(tokens)


def with_interval(step: StepTime, th: Throughput) -> None:
    """The step time's 95% batch-means interval, and the throughput's (the same tokens over it)."""
    ci = stats.batch_means(step.values)
    if ci is None or not step.mean:
        return
    # a mean step can't be shorter than the shortest step seen: the floor keeps a noisy interval's far end finite
    step.ci_low, step.ci_high, step.ci_batches = max(ci.low, min(step.values)), ci.high, ci.batches
    ci = stats.Interval(ci.mean, step.ci_low, ci.high, ci.batches)
    if th.real_tokens_per_s:
        rate = ci.inverse(th.real_tokens_per_s * step.mean)
        th.real_tokens_per_s_low, th.real_tokens_per_s_high = rate.low, rate.high


# On an H200 the same host-bound job (bs 8, GPU busy 44-63%) ran 6,994 and 8,412 real tok/s as the first and last
# of twelve processes in one call, 1.20x (1.01-1.43); in another call a host-bound job ran 1.12x (1.08-1.16) apart
# as first and last process: both past stats.MIN_EFFECT (experiments/twelve_x_slowdown). GPU-bound jobs of the
# first call agreed to 1%.
HOST_DRIFT = "1.12x (1.08-1.16) and 1.20x (1.01-1.43)"
HOST_DRIFT_SOURCE = "on an H200 (experiments/twelve_x_slowdown/README.md)"  # printed with it: not this run's card


def stall(values: list[float]) -> tuple[int, float, float] | None:
    """(which timed step, its seconds, the median step) for the longest timed step where it is a stall (STALL_TIMES
    the median and STALL_MIN_S longer), else None."""
    if len(values) < 3:
        return None
    median = sorted(values)[len(values) // 2]
    longest = max(range(len(values)), key=values.__getitem__)
    took = values[longest]
    return (longest, took, median) if took >= STALL_TIMES * median and took - median >= STALL_MIN_S else None


def flags(step: StepTime, shapes: Shapes, compile_: Compile, machine: dict, stop_rule: bool,
          stopped_when_stable: bool, gpu_busy: float | None = None, shapes_matter: bool = True) -> Flags:
    """Each reason this job's figure may not settle a close call; a stall first, as it makes the figure no
    measurement of the config at all (the sweep's table leaves it unranked)."""
    reasons = []
    stalled = stall(step.values)
    if stalled:
        i, took, median = stalled
        reasons.append(f"stalled: timed step {i + 1} took {took:.3g} s, {took / median:.0f}x the median {median:.3g} s "
                       "(the process stood still: paused, suspended or starved); not a clean measurement: run it again with "
                       "rerun=true (a plain rerun skips it as finished)")
    if step.ci_low is None:
        reasons.append(f"no interval: {step.n} timed steps (needs {stats.MIN_BATCHES**2})")
    elif stats.Interval(step.mean, step.ci_low, step.ci_high, step.ci_batches).half_width > stats.WIDE:
        reasons.append(f"wide interval: the mean step is somewhere in {step.ci_low:.4g}-{step.ci_high:.4g} s "
                       f"(more than {stats.WIDE:.0%} either side of {step.mean:.4g})")
    if stop_rule and not stopped_when_stable:
        reasons.append("ran out of steps before the mean was stable")
    if shapes.new_in_window and shapes_matter:  # on a CPU without compile a new shape costs nothing extra
        reasons.append(f"{shapes.new_in_window} new batch shapes inside the timed window")
    if compile_.graphs_in_window:
        reasons.append(f"{compile_.graphs_in_window} compiles inside the timed window")
    load, others = machine.get("load_per_cpu"), machine.get("other_gpu_processes")
    if load is not None and load > BUSY_LOAD_PER_CPU:
        reasons.append(f"busy host: load {load:.1f} per CPU")
    if others:
        reasons.append(f"{others} other processes on the GPU")
    if gpu_busy is not None and gpu_busy < HOST_BOUND_BUSY:
        reasons.append(f"host-bound (GPU busy {gpu_busy:.0%}): the same such step moved {HOST_DRIFT} "
                       f"between processes of one call {HOST_DRIFT_SOURCE}; compare with sweep.repeats=3")
    return Flags(reasons=reasons, load_per_cpu=load, other_gpu_processes=others,
                 stalled_s=round(stalled[1], 3) if stalled else None)


def verdict(step: StepTime, breakdown: Breakdown, gpu_busy: float | None, mem: GpuMemory | CpuMemory,
            retries_in_window: int, mfu: float | None, of_ceiling: float | None = None, amp: str | None = None,
            loader: dict | None = None) -> Verdict:
    """What limits the step, with the numbers behind it. `loader`: the run's {"workers", "pin_memory", "cores"}
    where known, so a data-bound step is not told to add what it has."""
    reasons = []
    capacity = getattr(mem, "capacity", None)
    reserved_share = mem.peak_reserved / capacity if capacity else None
    saturated = bool(retries_in_window) or (reserved_share is not None and reserved_share > RESERVED_SATURATED)
    if retries_in_window:
        reasons.append(f"{retries_in_window} allocator retries while timed: each one frees the cache and "
                       "waits for the GPU; a smaller micro-batch, gradient checkpointing or fixed shapes help")
    if reserved_share is not None:
        reasons.append(f"peak reserved {mem.peak_reserved:.1f} of {capacity:.1f} GB ({reserved_share:.0%})")
    data_share = breakdown.data / step.mean if step.mean and breakdown.data is not None else None
    if data_share is not None:
        reasons.append(f"device waited for data {data_share:.0%} of the step")
    if gpu_busy is not None:
        reasons.append(f"GPU busy {gpu_busy:.0%} of the step")
    if mfu is not None:
        reasons.append(f"MFU {mfu:.1%}")
        if mfu > 1:  # a bug in the peak or the FLOP count, never a fast run
            reasons.append("MFU above 100% is impossible: the peak used is below what the matmuls ran at "
                           "(TF32 or another card?) or the FLOP count is too high; set measure.peak_tflops")
    if of_ceiling is not None and of_ceiling > 1:  # the step does every base GEMM: it can't beat them alone
        reasons.append(f"{of_ceiling:.0%} of the card's GEMM ceiling is impossible: the token count or the ceiling's "
                       "shapes are wrong")
    if retries_in_window:
        bottleneck = "memory"
    elif data_share is not None and data_share > DATA_BOUND_SHARE:
        bottleneck = "data"
        reasons.append(_data_bound_help(loader or {}, gpu=capacity is not None))
    elif gpu_busy is not None and gpu_busy < HOST_BOUND_BUSY:
        bottleneck = "host"
        reasons.append("the GPU waits for Python to launch kernels: a larger micro-batch, fixed shapes, "
                       "torch.compile or CUDA graphs help")
    else:
        bottleneck = "compute"
        if capacity is None:  # a CPU: its bf16 is emulated on most (one newcomer's bf16 ran 33 s a step), no flash kernels
            reasons.append("on a CPU, less work helps (fewer or narrower layers, less padding, a smaller batch); "
                           "fp32 is usually the fastest precision there")
        else:
            if gpu_busy is None:  # nothing measured the idle GPU: host-bound is not ruled out, and the verdict says so
                reasons.append("not checked for host-bound: no GPU-busy figure (measure.profile_steps=0, or the "
                               "profiler's read failed); a step that waits for Python to launch kernels reads as compute")
            faster = "flash attention, fused ops" if amp in ("bf16", "fp16") else "bf16, flash attention, fused ops"
            reasons.append(f"faster kernels ({faster}) or less work (less padding) help")
    return Verdict(bottleneck=bottleneck, saturated=saturated, reasons=reasons)


def _data_bound_help(loader: dict, gpu: bool) -> str:
    """What helps a step that waits for its data, less what the run already does: workers it has as many of as
    the cores allow (one core stays with the training process), pinned memory on a CPU (nothing to copy to)."""
    workers, cores, pinned = loader.get("workers"), loader.get("cores"), loader.get("pin_memory")
    helps = []
    if workers is None or cores is None or workers < cores - 1:
        helps.append("more dataloader workers" + (f" (you run {workers} on {cores} cores)" if workers is not None
                                                   and cores else ""))
    if gpu and not pinned:
        helps.append("pinned memory")
    if not loader.get("prepared"):  # trainsweep's runner tokenises every row once, ahead, and caches it
        # "pre-tokenised" alone tells an image or audio script nothing: its per-batch work is a transform
        helps.append("data prepared ahead (tokenised, transformed once, not per batch)")
    if not helps:  # what is left is the collating of each batch
        return ("what remains is each batch's collating (padding it, copying it): fewer, larger micro-batches or "
                f"padding=packed do less of it; your {workers} dataloader workers already use this machine's {cores} cores")
    said = ", ".join(helps[:-1]) + (" and " if len(helps) > 1 else "") + helps[-1] + " help"
    if workers is not None and cores and workers >= cores - 1:
        said += f"; your {workers} dataloader workers already use this machine's {cores} cores"
    return said


def loss_summary(log_history: list[dict], expected_initial: float | None) -> Loss:
    losses = [e["loss"] for e in log_history if "loss" in e]
    if not losses:  # logging_steps past the run's end: the Trainer's mean over the run is all there is
        mean = next((e["train_loss"] for e in reversed(log_history) if "train_loss" in e), None)
        return Loss(final=mean, mean_over_run=mean, expected_initial=expected_initial)
    curve = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    # step 1's loss alone (logging_steps past the run's end): its "final" is step 1's, and the mean says more; not
    # where step 1 was the run (max_steps=1, a callback stopping it)
    ran = max((e.get("step", 0) for e in log_history), default=0)
    mean = next((e["train_loss"] for e in reversed(log_history) if "train_loss" in e), None) \
        if len(curve) == 1 and ran > curve[0][0] else None
    return Loss(initial=losses[0], final=losses[-1], expected_initial=expected_initial, curve=curve, mean_over_run=mean)


def expected_initial_loss(task: str, num_labels: int | None, vocab: int | None) -> float | None:
    """Cross-entropy of a uniform guess: where a well-initialised model starts; None where the loss is no
    cross-entropy over a width the config names (a regression's MSE, CTC, multiple choice over the batch's
    choices, a span's start and end over the row's length, a model class the report doesn't know)."""
    if task in ("classification", "token_classification"):
        width = num_labels
    elif task == "multi_label":
        width = 2  # each label's own 50/50 guess
    elif task in ("causal_lm", "seq2seq") or task.endswith("ForMaskedLM"):
        width = vocab
    else:
        width = None
    return math.log(width) if width and width > 1 else None


def worst_memory(per_rank: list[dict]) -> dict:
    """Rank 0's memory record with every peak and counter replaced by its maximum over the ranks: the
    rank closest to running out decides whether the job fits."""
    out = dict(per_rank[0])
    for key, value in out.items():
        values = [r.get(key) for r in per_rank if isinstance(r.get(key), (int, float))]
        if isinstance(value, (int, float)) and values and key not in ("capacity", "card_capacity", "memory_cap_gb"):
            out[key] = max(values)
    return out


def mfu(flops: Flops, rate: float | None) -> tuple[float | None, float | None]:
    """Model and hardware FLOP utilisation of one GPU at `rate` real tokens/s."""
    if not flops.peak_tflops or not rate:
        return None, None
    peak = flops.peak_tflops * 1e12
    return rate * flops.per_token / peak, rate * flops.per_token_hardware / peak


def analyse(cfg, rep: Report, meter, trainer, device: str) -> None:
    """Fill the report's measured sections, read once after training (under torchrun, on every rank)."""
    from ..base import ranks as distributed
    from ..measure.meter import memory
    from ..model.flops import peak_tflops

    conf = getattr(trainer.model, "config", None)  # a model of the script's own (an nn.Module) has none
    evals = [e for e in trainer.state.log_history if any(k.startswith("eval_") for k in e)]
    mem = memory(device, cfg.gpu.memory_cap_gb)
    pred = rep.get("memory_predicted_gb") or {}
    missing = {**({"memory_predicted_gb": pred["not_measured"]} if "not_measured" in pred else {}),
               **mem.pop("not_measured", {})}  # rank 0's: its own reads
    m = meter.results() if cfg.measure.enabled else {}
    missing.update(m.get("not_measured") or {})
    world = distributed.world_size()
    if world > 1:
        missing.update(distributed.NOT_MEASURED)  # the run directory's shared stamp, if it could not be read
    if missing:
        rep.not_measured = missing
    if world > 1:  # one gather after training: global tokens, every rank's peak
        ranks = distributed.combine(distributed.gather(
            {"tokens": m.get("tokens"), "step_mean": (m.get("step_time_s") or {}).get("mean"), "memory": mem}))
        m["tokens"] = ranks.pop("tokens")
        mem = worst_memory(ranks["memory_per_rank"])
    rep.memory_gb = memory_section(mem)
    # every set of the last evaluation: eval_dataset={"a": ..., "b": ...} logs one entry a set at the same step
    last = [e for e in evals if e.get("step") == evals[-1].get("step")] if evals else []
    rep.eval = {"final": {k[5:]: v for e in last for k, v in e.items() if k.startswith("eval_")},
                "step": evals[-1]["step"], "history": evals} if evals else None
    expected = None if getattr(trainer, "own_objective", False) else \
        expected_initial_loss(cfg.task.name, cfg.task.num_labels or getattr(conf, "num_labels", None),
                              getattr(conf, "vocab_size", None))
    rep.loss = loss_summary(trainer.state.log_history, expected)
    if isinstance(sets := getattr(trainer, "train_dataset", None), dict) and len(sets) > 1:  # sentence-transformers'
        rep.loss.datasets = [str(name) for name in sets]  # batches drawn from each in turn, a loss each or one for all
    # the Trainer's own plan (epochs counted in steps); the drop-in's config holds it as max_steps
    last, planned = getattr(trainer.state, "global_step", 0) or 0, \
        getattr(trainer.state, "max_steps", None) or cfg.trainer.get("max_steps") or 0
    if 0 < last < planned and not m.get("ended_training"):  # early stopping, a SIGTERM's checkpoint-and-stop
        rep.stopped_early = {"step": last, "max_steps": planned}
    if world > 1:
        rep.distributed = {"world_size": world, "strategy": rep.resolved.get("distributed"), **ranks}
    if not cfg.measure.enabled:
        return
    step = StepTime.from_dict(m["step_time_s"])
    if not step.n:  # a short run is a run: it trained, and says it can't be timed rather than guess a verdict
        me = cfg.measure
        profiled = f" + {me.profile_steps} profiled" if device == "cuda" else ""
        start = cfg.trainer.get("first_step")  # the drop-in's: a Trainer script sets TrainingArguments' max_steps
        key, last = ("trainer.max_steps" if start is None else "max_steps"), getattr(trainer.state, "global_step", None)
        last = cfg.trainer.max_steps if last is None else last
        resumed = f" from step {start} (resumed: {last - start} steps)" if start else ""
        stopped = f", stopped at step {last}" if last < cfg.trainer.max_steps else ""  # a callback, early stopping
        rep.flags = Flags(reasons=[f"too few steps to measure: {key}={cfg.trainer.max_steps}{resumed}{stopped} "
                                   f"leaves no timed step after {me.warmup_steps} warm-up{profiled}"])
        return
    th = throughput(m["tokens"], m["window_steps"], step.mean)
    th.world_size = world  # tokens and samples above are summed over every rank: the job's throughput
    th.real_tokens_per_s_per_gpu = th.real_tokens_per_s / world if th.real_tokens_per_s else None
    fl = rep.get("flops")
    if fl is not None:  # none where no row or batch shows its tokens (TRL's GRPO: prompts, generated completions)
        fl.peak_tflops = peak_tflops(rep.env["device_name"], rep.resolved["amp"], cfg.measure.peak_tflops,
                                     tf32=bool(rep.env.get("tf32_matmul")))
        fl.mfu, fl.hfu = mfu(fl, th.real_tokens_per_s_per_gpu)  # per GPU: each one's share against its own peak
        if fl.ceiling_tokens_per_s and th.real_tokens_per_s_per_gpu:
            fl.of_ceiling = th.real_tokens_per_s_per_gpu / fl.ceiling_tokens_per_s
    bd, busy = Breakdown.from_dict(m["breakdown_s"]), m["gpu_busy_fraction"]
    # The GPU's idle time that the data wait doesn't explain: it waited for Python to launch kernels.
    # Overlaps compute/other (it happens inside them), so it is not part of their sum.
    bd.host = max(0.0, step.mean * (1 - busy) - (bd.data or 0.0)) if busy is not None and step.mean else None
    rep.throughput, rep.step_time_s, rep.breakdown_s, rep.host_s = th, step, bd, HostTime.from_dict(m["host_s"])
    rep.gpu_busy_fraction, rep.gpu_kernels, rep.tokens = busy, m.get("gpu_kernels"), tokens_section(m["tokens"])
    rep.attention_kernels, rep.top_kernels = m.get("attention_kernels"), m.get("top_kernels")
    if "host_ops" in m:
        rep.host_ops = m["host_ops"]
    rep.shapes, rep.stopped_when_stable, rep.compile = Shapes.from_dict(m["shapes"]), m["stopped_when_stable"], \
        Compile.from_dict(m["compile"])
    rep.timing_s.update({k: v for k, v in m["phases_s"].items() if v is not None})
    rep.memory_gb.alloc_retries_in_window = m["alloc_retries_in_window"]
    dl = cfg.get("dataloader") or {}
    loader = {"workers": dl.get("num_workers"), "pin_memory": dl.get("pin_memory"),
              "prepared": dl.get("rows_prepared", True),  # the drop-in's cfg says False: a script's own rows
              "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}
    rep.verdict = verdict(step, bd, busy, rep.memory_gb, m["alloc_retries_in_window"], fl and fl.mfu,
                          fl and fl.of_ceiling, amp=rep.resolved.get("amp"), loader=loader)
    with_interval(step, th)
    rep.flags = flags(step, rep.shapes, rep.compile, m.get("machine") or {}, cfg.measure.stop_when_stable,
                      m["stopped_when_stable"], busy, shapes_matter=device == "cuda" or bool(cfg.trainer.torch_compile))
