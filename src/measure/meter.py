"""Honest step timing, token counts and memory, with no host sync inside the timed window.

Timestamps are CUDA events recorded on the stream at the Trainer's step hooks (read lazily: only events
the GPU has passed are read, once per log window; one synchronize at the end). On the CPU they are
perf_counter readings, which are exact there because CPU compute is synchronous.

Measure is the Trainer callback; its parts live in src/measure/timing.py: the step timer (data, compute,
optimizer and other phases of every step on the device's timeline), the timed window (a warm-up until a
step compiles nothing; tokens, allocator retries, GC time and wall clock between its edges), the
busy-GPU profiler (a few steps under torch.profiler after the window: the share of the step no kernel
ran is time the GPU waited for the host to launch work) and the rule that stops timing once the mean
step time is known well enough. src/measure/hooks.py calls the hooks in the Trainer's order without a
Trainer (tests, benchmarks).
"""
from __future__ import annotations

import logging
import resource
import statistics
import time
from collections.abc import Mapping

import torch
from transformers import TrainerCallback

from ..data.packing import PACK_STATS
from .stop import StopRule
from .compiled import compile_work_since, compiled_graphs
from .timing import PHASES, BusyProfiler, Clock, StepTimer, Window

log = logging.getLogger(__name__)
__all__ = ["PHASES", "Measure", "TokenCounter", "compiled_graphs", "memory", "window_tokens"]


class TokenCounter:
    """Samples and tokens of every micro-batch: what the host knows from shapes is counted on the host,
    the rest is summed on the device (no sync) and read once at the end.
    all = padded positions, real = attention_mask 1, loss = positions whose label is scored (without labels: the
    completion_mask's tokens, TRL's)."""

    KEYS = ("samples", "all", "real", "loss")

    def __init__(self, task: str, sequences_per_sample: int = 1, labels: str = "labels"):
        self.task, self.labels = task, labels  # labels: the batch's key for them (a Trainer's label_names)
        # sequences a row (TRL's preference pairs: chosen and rejected; multiple choice: the choices): a sample is
        # the row, as the Trainer's batch size counts it
        self.sequences_per_sample = sequences_per_sample
        self.host = dict.fromkeys(self.KEYS, 0)
        self.device: dict[str, torch.Tensor] = {}
        self.shapes: list[tuple] = []  # (optimizer step, shape) of every micro-batch
        self.widest: int | None = None  # the most input_ids a micro-batch held (where the memory peak comes)
        self.step = 0

    def _on_device(self, key: str, value: torch.Tensor) -> None:
        self.device[key] = value if key not in self.device else self.device[key] + value

    def add_batch(self, batch, pack_stats: dict | None = None) -> None:
        """A micro-batch as the Trainer fetched it: a dict, or a list or tuple of tensors (a TensorDataset's rows
        through default_collate, a script's compute_loss unpacking `x, y = inputs`), read as a dict keyed by
        place. Anything else holds nothing to count."""
        if isinstance(batch, (list, tuple)):
            batch = {str(i): value for i, value in enumerate(batch)}
        if isinstance(batch, Mapping):
            self.add({**batch, **({PACK_STATS: pack_stats} if pack_stats else {})})

    def add(self, inputs: dict) -> None:
        ids = inputs.get("input_ids")
        if ids is None and hasattr(inputs.get("chosen_input_ids"), "shape") and hasattr(inputs.get("rejected_input_ids"), "shape"):
            return self._add_pairs(inputs)
        if ids is None:
            return self._add_untokenised(inputs)
        self.host["all"] += ids.numel()
        self.shapes.append((self.step, tuple(ids.shape)))
        self.widest = max(self.widest or 0, ids.numel())
        packed = inputs.get(PACK_STATS)
        if packed is not None:  # padding-free: the collator counted on the host what it packed
            for key in ("samples", "real", "loss"):
                self.host[key] += packed[key]
            return
        mask = inputs.get("attention_mask")
        positions = inputs.get("position_ids")
        if mask is not None:
            self._on_device("real", mask.sum())
        else:  # no mask: the model attends every position (a user's collator may send none; trainsweep.attach)
            self.host["real"] += ids.numel()
        if mask is None and positions is not None and ids.shape[0] == 1:
            # one padding-free row of several sequences (DataCollatorWithFlattening, TRL's padding_free): each
            # sequence restarts its positions at 0
            self._on_device("samples", (positions == 0).sum())
        else:
            # stacked along the batch (TRL's pairs), or a dimension of their own (multiple choice: [rows, choices, len])
            self.host["samples"] += ids.shape[0] // self.sequences_per_sample if ids.dim() == 2 else ids.shape[0]
        labels = inputs.get(self.labels)
        completion = inputs.get("completion_mask")
        if labels is None and hasattr(completion, "sum"):
            # TRL's preference and completion batches (DPO, KTO) hold no labels: the completion tokens are what
            # their loss scores
            self._on_device("loss", completion.sum())
            return
        self._add_loss(labels)

    def _add_loss(self, labels) -> None:
        """The targets a batch's labels score: one a row (a class, a value, a label set), or every token not -100;
        a dict of them (a multi-task model's heads) scores each head's."""
        if isinstance(labels, Mapping):
            for head in labels.values():
                self._add_loss(head)
        elif not hasattr(labels, "dim"):
            return
        elif labels.dim() <= 1 or labels.is_floating_point():  # one class, value or label set per row
            self.host["loss"] += labels.shape[0] if labels.dim() else 1
        else:  # a causal LM predicts each token from the ones before: the first label is never scored
            scored = labels[..., 1:] if self.task == "causal_lm" else labels
            self._on_device("loss", (scored != -100).sum())

    def _add_pairs(self, inputs: dict) -> None:
        """TRL's older preference layout (DPODataCollatorWithPadding's, which ORPO and CPO train on): a row's chosen
        and rejected sequences under keys of their own, which the trainer pads to the wider of the two and stacks,
        so the model reads 2 x rows x that width. A sample is the row, as the Trainer's batch size counts it."""
        chosen, rejected = inputs["chosen_input_ids"], inputs["rejected_input_ids"]
        rows, width = chosen.shape[0], max(chosen.shape[-1], rejected.shape[-1])
        self.host["samples"] += rows
        self.host["all"] += 2 * rows * width
        self.shapes.append((self.step, (2 * rows, width)))
        self.widest = max(self.widest or 0, 2 * rows * width)
        for side in ("chosen", "rejected"):
            mask = inputs.get(f"{side}_attention_mask")
            if hasattr(mask, "sum"):
                self._on_device("real", mask.sum())
            else:
                self.host["real"] += inputs[f"{side}_input_ids"].numel()
            self._add_loss(inputs.get(f"{side}_labels"))

    def _add_untokenised(self, inputs: dict) -> None:
        """A batch of pixel_values, input_values or input_features: its rows are counted, and no token, since it
        has none (the report reads its token rates as unknown, not 0). A batch under keys of a script's own (a
        bi-encoder's q_input_ids and p_input_ids, a GRU's token_ids and targets): its rows where every tensor in it
        has the same first dimension, which then can only be the batch's."""
        rows = next((v for k in ("pixel_values", "input_values", "input_features", "inputs_embeds", "labels")
                     if hasattr(v := inputs.get(k), "shape") and len(v.shape)), None)
        if rows is None:
            tensors = [v for v in inputs.values() if hasattr(v, "shape") and len(v.shape)]
            rows = tensors[0] if tensors and len({v.shape[0] for v in tensors}) == 1 else None
        if rows is not None:
            self.shapes.append((self.step, tuple(rows.shape)))
            self.host["samples"] += rows.shape[0]

    def snapshot(self) -> dict:
        """Counts so far; device values are cloned (async) and read later."""
        return {"host": dict(self.host), "device": {k: v.clone() for k, v in self.device.items()}}


def window_tokens(start: dict, end: dict) -> dict:
    """Counts between two snapshots (reading device values syncs: call after training)."""
    def total(snap, key):
        dev = snap["device"].get(key)
        return snap["host"][key] + (int(dev.item()) if dev is not None else 0)
    return {k: total(end, k) - total(start, k) for k in TokenCounter.KEYS}


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p50": None, "p90": None, "stdev": None, "n": 0}
    ordered = sorted(values)
    return {"mean": statistics.fmean(values), "p50": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def timed_window(warmup: int, max_steps: int, profile_steps: int, cuda: bool) -> tuple[int, int]:
    """The optimizer steps a run times (its first and last are warmup+1 and last): after the warm-up, up to the
    profiled tail, which only a GPU run profiles. Measure opens this window; the predictor draws it before the
    run (src/plan/predict.py)."""
    return warmup, max_steps - (profile_steps if cuda else 0)


class Measure(TrainerCallback):
    """Times the steps after `warmup` up to the profiled tail, counts tokens, reads memory: the Trainer's
    hooks, handing each moment to the step timer, the window, the busy profiler and the stop rule."""

    def __init__(self, counter: TokenCounter, device: str, warmup: int, max_steps: int, profile_steps: int,
                 stop_rel_error: float | None = None, min_steps: int = 10, host_ops: bool = False):
        self.counter, self.cuda = counter, device == "cuda"
        self.profile_steps = profile_steps if self.cuda else 0
        self.timer = StepTimer(Clock(self.cuda))
        warmup, last = timed_window(warmup, max_steps, profile_steps, self.cuda)
        self.window = Window(counter, self.cuda, warmup, last=last)
        self.profiler = BusyProfiler(host_ops)
        self.stop = StopRule(stop_rel_error, min_steps) if stop_rel_error else None  # None: time until max_steps
        self.phase_times = {"train_begin": None, "train_end": None}
        self.first_step = 0
        self.first_step_s = None
        self.started = None  # perf_counter when the run began (build included): the cold start is measured from it
        self.compile_before: dict = {}  # compile_work() at the run's start
        self._graphs_begin = self._graphs_step = 0  # compiled graphs at train begin, at this step's begin
        self._evaluated = False
        self.stopped = False  # the stop rule ended the window once the mean step time was known well enough
        self.ended_training = False  # the stop rule ended training (after the window and its profile)

    @classmethod
    def from_config(cls, counter: TokenCounter, device: str, cfg, started: float | None = None,
                    compile_before: dict | None = None) -> "Measure":
        me = cfg.measure
        meter = cls(counter, device, me.warmup_steps, cfg.trainer.max_steps, me.profile_steps,
                    me.rel_error if me.stop_when_stable else None, me.min_steps, me.host_ops)
        meter.started, meter.compile_before = started, compile_before or {}
        return meter

    @property
    def step_times(self) -> list[float]:
        """Seconds of every timed step the device has finished so far (read by the W&B logger)."""
        return self.timer.step_times

    # -- hooks ---------------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kw):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        self.phase_times["train_begin"] = time.perf_counter()
        # Steps count from where this train() call starts: a resumed run starts at its checkpoint's step.
        self.first_step = state.global_step
        self.timer.start()
        self._graphs_begin = compiled_graphs()
        self.window.begin()

    def on_step_begin(self, args, state, control, **kw):
        self.counter.step = state.global_step + 1 - self.first_step
        self.timer.begin()
        self._graphs_step = compiled_graphs()

    def on_pre_optimizer_step(self, args, state, control, **kw):
        self.timer.mark("pre_opt")

    def on_optimizer_step(self, args, state, control, **kw):
        self.timer.mark("opt")

    def on_evaluate(self, args, state, control, **kw):
        # Evaluation ran between this step's end and the next step's begin: keep it out of step times.
        self._evaluated = True

    def on_save(self, args, state, control, **kw):
        # So did a checkpoint save (seconds on a real model): a step time measures from the last step's end
        self._evaluated = True

    def on_step_end(self, args, state, control, **kw):
        step, window = state.global_step - self.first_step, self.window
        self.timer.end()
        if step == 1:  # cold start: build, checks, step 1's compile
            self.first_step_s = time.perf_counter() - (self.started or self.phase_times["train_begin"])
        if window.step_end(step, compiled=compiled_graphs() > self._graphs_step) and not self._evaluated:
            self.timer.keep()
        self._evaluated = False
        if self.stop and window.warmup < step < window.last:
            self.timer.drain(wait=False)  # only steps the device has finished: no sync
            if self.stop.met(self.timer.step_times):
                window.last = step  # the mean is known well enough: end the window here
                self.stopped = True
                control.should_training_stop = self.ended_training = not self.profile_steps
        if step == window.last:
            window.close()
            if self.profile_steps:
                self.profiler.start()
        if self.profiler.running and step == window.last + self.profile_steps:
            self.profiler.stop(self.profile_steps)
            if self.stop:
                control.should_training_stop = self.ended_training = True

    def on_log(self, args, state, control, **kw):
        self.timer.drain(wait=False)

    def on_train_end(self, args, state, control, **kw):
        if self.profiler.running:  # training ended inside the profiled steps: host_ops per step over those that ran
            self.profiler.stop(max(1, state.global_step - self.window.last))
        self.window.finish()
        self.timer.drain(wait=True)
        self.phase_times["train_end"] = time.perf_counter()

    # -- results -------------------------------------------------------------------------------------
    def results(self) -> dict:
        t, window, w = self.timer, self.window, self.window.results()
        n = len(t.step_times)
        span = lambda a, b: b - a if a is not None and b is not None else None  # noqa: E731
        return {
            "window_steps": window.steps,
            "step_time_s": {**_stats(t.step_times), "warmup_steps": window.warmup,
                            "wall_mean": w["wall_s"] / n if w["wall_s"] and n else None,
                            "values": t.step_times},  # all of them: the interval is read from these, as the mean is
            "breakdown_s": {p: _mean(v) for p, v in t.durations.items()},
            "host_s": {"data": _mean(t.host_data), "launch": _mean(t.host_launch),
                       "gc": w["gc_s"] / n if n else None, "gc_collections": w["gc_collections"]},
            "gpu_busy_fraction": self.profiler.fraction,
            "gpu_kernels": self.profiler.kinds,
            "attention_kernels": self.profiler.attention,
            "top_kernels": self.profiler.top,
            **({"host_ops": self.profiler.host} if self.profiler.host_ops else {}),
            "window_s": sum(t.step_times),
            "tokens": window_tokens(window.opened["tokens"], window.closed["tokens"]) if window.closed else None,
            "shapes": w["shapes"],
            "alloc_retries_in_window": w["alloc_retries"],
            "machine": w.get("machine") or {},
            "phases_s": {"warmup": span(self.phase_times["train_begin"], w["open_at"]),
                         "measure": span(w["open_at"], w["close_at"]),
                         "profile_and_rest": span(w["close_at"], self.phase_times["train_end"])},
            # the rule itself ended the window (a timed step an evaluation or a save dropped is not "stable")
            "stopped_when_stable": self.stopped,
            "ended_training": self.ended_training,  # trainsweep's stop, not the script's (report: stopped_early)
            "not_measured": self._not_measured(w.get("machine") or {}),
            "compile": {"graphs": compiled_graphs() - self._graphs_begin, "graphs_in_window": w["graphs"],
                        "to_first_step_s": self.first_step_s, "work": compile_work_since(self.compile_before)},
        }


    def _not_measured(self, machine: dict) -> dict:
        """Each figure a check of this run could not give, by its report key, with why: "none" and "could not
        check" must not look alike (an absent GPU-busy figure reads as a GPU that never waited)."""
        out = {}
        if self.cuda and self.profiler.fraction is None:
            out["gpu_busy_fraction"] = self.profiler.not_measured or (
                "not measured: measure.profile_steps=0" if not self.profile_steps
                else "not measured: training ended before the profiled steps")
        if machine.get("not_measured"):
            out["flags.other_gpu_processes"] = machine["not_measured"]
        return out


def memory(device: str, cap_gb: float | None = None) -> dict:
    """Peaks since on_train_begin (GPU) or of the whole process (CPU: peak RSS). Under a memory cap the
    cap is the capacity that saturation is judged against."""
    if device != "cuda":
        return {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    stats = torch.cuda.memory_stats()
    alloc, reserved = torch.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_reserved() / 2**30
    card = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**30
    out = {"peak_allocated": alloc, "peak_reserved": reserved, "capacity": min(cap_gb or card, card),
           "card_capacity": card, "memory_cap_gb": cap_gb,
           "alloc_retries": stats.get("num_alloc_retries", 0),
           "fragmentation": reserved / alloc if alloc else None, "device_used": None}
    try:  # what the driver sees, including memory torch doesn't manage (CUDA context, NCCL, cuBLAS workspaces)
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        out["device_used"] = pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**30
    except Exception as exc:  # said in the report (analysis lifts it into not_measured), not only in the log
        log.warning("NVML unavailable (%s): device_used not reported", exc)
        out["not_measured"] = {"memory_gb.device_used": f"could not check: NVML: {type(exc).__name__}: {exc}"}
    return out
