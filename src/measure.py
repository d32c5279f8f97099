"""Honest step timing, token counts and memory, with no host sync inside the timed window.

Timestamps are CUDA events recorded on the stream at the Trainer's step hooks (read lazily: only events
the GPU has passed are read, once per log window; one synchronize at the end). On the CPU they are
perf_counter readings, which are exact there because CPU compute is synchronous.

Per optimizer step i, on the device's timeline:
  data      end(i-1) -> begin(i)     the device waited while the host fetched and collated batches
  compute   begin(i) -> pre_opt(i)   forward + backward of every micro-batch, and gradient clipping
  optimizer pre_opt(i) -> opt(i)     optimizer.step
  other     opt(i) -> end(i)         scheduler, zero_grad
After the timed window, a few steps run under torch.profiler to measure how busy the GPU was: the share
of the step no kernel ran is time the GPU waited for the host to launch work.
"""
from __future__ import annotations

import gc
import logging
import resource
import statistics
import sys
import time

import torch
from transformers import TrainerCallback

from src.packing import PACK_STATS

log = logging.getLogger(__name__)
PHASES = ("data", "compute", "optimizer", "other")


class TokenCounter:
    """Samples and tokens of every micro-batch: what the host knows from shapes is counted on the host,
    the rest is summed on the device (no sync) and read once at the end.
    all = padded positions, real = attention_mask 1, loss = positions whose label is scored."""

    KEYS = ("samples", "all", "real", "loss")

    def __init__(self, task: str):
        self.task = task
        self.host = dict.fromkeys(self.KEYS, 0)
        self.device: dict[str, torch.Tensor] = {}
        self.shapes: list[tuple] = []  # (optimizer step, shape) of every micro-batch
        self.step = 0

    def _on_device(self, key: str, value: torch.Tensor) -> None:
        self.device[key] = value if key not in self.device else self.device[key] + value

    def add(self, inputs: dict) -> None:
        ids = inputs["input_ids"]
        self.host["all"] += ids.numel()
        self.shapes.append((self.step, tuple(ids.shape)))
        packed = inputs.get(PACK_STATS)
        if packed is not None:  # padding-free: the collator counted on the host what it packed
            for key in ("samples", "real", "loss"):
                self.host[key] += packed[key]
            return
        self._on_device("real", inputs["attention_mask"].sum())
        self.host["samples"] += ids.shape[0]
        labels = inputs.get("labels")
        if labels is None:
            return
        if labels.dim() == 1:  # one class per row
            self.host["loss"] += labels.numel()
        else:  # a causal LM predicts each token from the ones before: the first label is never scored
            scored = labels[..., 1:] if self.task == "causal_lm" else labels
            self._on_device("loss", (scored != -100).sum())

    def snapshot(self) -> dict:
        """Counts so far; device values are cloned (async) and read later."""
        return {"host": dict(self.host), "device": {k: v.clone() for k, v in self.device.items()}}


def window_tokens(start: dict, end: dict) -> dict:
    """Counts between two snapshots (reading device values syncs: call after training)."""
    def total(snap, key):
        dev = snap["device"].get(key)
        return snap["host"][key] + (int(dev.item()) if dev is not None else 0)
    return {k: total(end, k) - total(start, k) for k in TokenCounter.KEYS}


def compiled_graphs() -> int:
    """Graphs torch.compile has compiled in this process so far (a dict read: no sync)."""
    dynamo = sys.modules.get("torch._dynamo")
    return int(dynamo.utils.counters["stats"]["unique_graphs"]) if dynamo is not None else 0


class Clock:
    """Timestamps on the device's own timeline."""

    def __init__(self, cuda: bool):
        self.cuda = cuda

    def mark(self):
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def done(self, mark) -> bool:
        return not self.cuda or mark.query()

    def seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p50": None, "p90": None, "stdev": None, "n": 0}
    ordered = sorted(values)
    return {"mean": statistics.fmean(values), "p50": ordered[len(ordered) // 2],
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}


def _busy_seconds(prof) -> float | None:
    """Union of GPU kernel intervals in a profile: overlapping kernels count once."""
    try:
        spans = sorted((e.start_ns(), e.start_ns() + e.duration_ns())
                       for e in prof.profiler.kineto_results.events() if e.device_type() == torch.autograd.DeviceType.CUDA)
    except Exception as exc:  # profiler APIs move between torch releases; a missing figure beats a crash
        log.warning("could not read kernel times from the profiler: %s", exc)
        return None
    busy, cur_start, cur_end = 0, None, None
    for start, end in spans:
        if cur_end is None or start > cur_end:
            busy += 0 if cur_end is None else cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += 0 if cur_end is None else cur_end - cur_start
    return busy / 1e9


class Measure(TrainerCallback):
    """Times the steps after `warmup` up to the profiled tail, counts tokens, reads memory."""

    def __init__(self, counter: TokenCounter, device: str, warmup: int, max_steps: int, profile_steps: int,
                 stop_rel_error: float | None = None, min_steps: int = 10):
        self.counter, self.cuda = counter, device == "cuda"
        self.stop_rel_error, self.min_steps = stop_rel_error, min_steps  # None: time until max_steps
        self.clock = Clock(self.cuda)
        self.warmup = warmup
        self.profile_steps = profile_steps if self.cuda else 0
        self.timed_end = max_steps - self.profile_steps  # last timed step (earlier if stopped when stable)
        self.max_timed = self.timed_end - warmup
        self.marks: dict[int, dict] = {}  # step -> marks not yet read
        self.durations = {p: [] for p in PHASES}
        self.step_times: list[float] = []
        self.host_data: list[float] = []
        self.host_launch: list[float] = []
        self.tokens_start = self.tokens_end = None
        self.retries_start = self.retries_end = 0
        self.gpu_busy_fraction = None
        self.window_wall_s = None
        self._wall_start = None
        self.gc_s, self.gc_count = 0.0, 0  # Python garbage collection: host time the step can't use
        self.phase_times = {"train_begin": None, "window_open": None, "window_close": None, "train_end": None}
        self._gc_t0 = 0.0
        self._gc_window = (0.0, 0)
        self._prof = None
        self._prof_t0 = 0.0
        self._t_end_prev = None
        self._cur: dict = {}
        self.first_step = 0
        self.window_steps = 0
        self._evaluated = False
        # A compile must not fall inside the window: the warm-up runs on until a step compiles nothing, for at
        # most half the steps it had to time (then the window opens anyway and the report counts the compiles).
        self.open_by = warmup + max(1, self.max_timed // 2)
        self.graphs = {"begin": 0, "window_open": None, "window_close": None}
        self.first_step_s = None
        self.started = None  # perf_counter when the run began (build included): the cold start is measured from it

    @classmethod
    def from_config(cls, counter: TokenCounter, device: str, cfg, started: float | None = None) -> "Measure":
        me = cfg.measure
        meter = cls(counter, device, me.warmup_steps, cfg.trainer.max_steps, me.profile_steps,
                    me.rel_error if me.stop_when_stable else None, me.min_steps)
        meter.started = started
        return meter

    # -- hooks ---------------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kw):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        gc.callbacks.append(self._on_gc)
        self.phase_times["train_begin"] = time.perf_counter()
        # Steps count from where this train() call starts: a resumed run starts at its checkpoint's step.
        self.first_step = state.global_step
        self._t_end_prev = time.perf_counter()
        self._end_prev = self.clock.mark()
        self.graphs["begin"] = compiled_graphs()
        if self.warmup == 0:
            self._open_window()

    def on_step_begin(self, args, state, control, **kw):
        now = time.perf_counter()
        self.counter.step = state.global_step + 1 - self.first_step
        self._cur = {"begin": self.clock.mark(), "t_begin": now, "host_data": now - self._t_end_prev,
                     "graphs": compiled_graphs()}

    def on_pre_optimizer_step(self, args, state, control, **kw):
        self._cur["pre_opt"] = self.clock.mark()

    def on_optimizer_step(self, args, state, control, **kw):
        self._cur["opt"] = self.clock.mark()

    def on_evaluate(self, args, state, control, **kw):
        # Evaluation ran between this step's end and the next step's begin: keep it out of step times.
        self._evaluated = True

    def on_step_end(self, args, state, control, **kw):
        step, cur = state.global_step - self.first_step, self._cur
        cur["end"], cur["end_prev"] = self.clock.mark(), self._end_prev
        now = time.perf_counter()
        cur["host_launch"] = now - cur["t_begin"]
        self._end_prev, self._t_end_prev = cur["end"], now
        if step == 1:
            self.first_step_s = now - (self.started or self.phase_times["train_begin"])  # cold start: build, checks, step 1's compile
        window_open = self.tokens_start is not None
        if window_open and step <= self.timed_end:
            self.window_steps += 1  # trained in the window, timed or not: its tokens are in the window's count
            if not self._evaluated:
                self.marks[step] = cur
        self._evaluated = False
        compiled = compiled_graphs() > cur["graphs"]
        if not window_open and step >= self.warmup and (not compiled or step >= self.open_by):
            self.warmup = step  # the warm-up lasted until here
            self._open_window()
        if self.stop_rel_error and self.warmup < step < self.timed_end and self._stable():
            self.timed_end = step  # the mean is known well enough: end the window here
            control.should_training_stop = not self.profile_steps
        if step == self.timed_end:
            self._close_window()
            if self.profile_steps:
                self._start_profile()
        if self._prof is not None and step == self.timed_end + self.profile_steps:
            self._stop_profile()
            control.should_training_stop = control.should_training_stop or bool(self.stop_rel_error)

    def on_log(self, args, state, control, **kw):
        self._drain(wait=False)

    def on_train_end(self, args, state, control, **kw):
        if self._prof is not None:
            self._stop_profile()
        if self.tokens_start is not None and self.tokens_end is None:  # stopped early: the window ends here
            self._close_window()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self._drain(wait=True)
        self.phase_times["train_end"] = time.perf_counter()

    # -- internals -----------------------------------------------------------------------------------
    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_t0 = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_t0
            self.gc_count += 1

    def _stable(self) -> bool:
        self._drain(wait=False)  # only steps the device has finished: no sync
        n = len(self.step_times)
        if n < max(self.min_steps, 2):
            return False
        return statistics.stdev(self.step_times) / n ** 0.5 < self.stop_rel_error * statistics.fmean(self.step_times)

    def _open_window(self) -> None:
        self.max_timed = self.timed_end - self.warmup
        self.graphs["window_open"] = compiled_graphs()
        self.tokens_start = self.counter.snapshot()
        self.retries_start = self._retries()
        self._gc_window = (self.gc_s, self.gc_count)
        self._wall_start = self._synced_now()
        self.phase_times["window_open"] = self._wall_start

    def _close_window(self) -> None:
        self.graphs["window_close"] = compiled_graphs()
        self.tokens_end = self.counter.snapshot()
        self.retries_end = self._retries()
        self._gc_window = (self.gc_s - self._gc_window[0], self.gc_count - self._gc_window[1])
        self.phase_times["window_close"] = self._synced_now()
        self.window_wall_s = self.phase_times["window_close"] - self._wall_start

    def _synced_now(self) -> float:
        # Two syncs a run, at the window's edges: a wall clock that checks the events' sum independently.
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def _retries(self) -> int:
        # A host-side read of the allocator's counters: no device sync.
        return torch.cuda.memory_stats().get("num_alloc_retries", 0) if self.cuda else 0

    def _drain(self, wait: bool) -> None:
        if wait and self.cuda:
            torch.cuda.synchronize()
        for step in sorted(self.marks):
            m = self.marks[step]
            if not self.clock.done(m["end"]):
                break
            s = self.clock.seconds
            self.durations["data"].append(s(m["end_prev"], m["begin"]))
            self.durations["compute"].append(s(m["begin"], m.get("pre_opt", m["begin"])))
            self.durations["optimizer"].append(s(m.get("pre_opt", m["begin"]), m.get("opt", m["begin"])))
            self.durations["other"].append(s(m.get("opt", m["begin"]), m["end"]))
            self.step_times.append(s(m["end_prev"], m["end"]))
            self.host_data.append(m["host_data"])
            self.host_launch.append(m["host_launch"])
            del self.marks[step]

    def _start_profile(self) -> None:
        torch.cuda.synchronize()  # outside the timed window: the profile starts on an idle GPU
        # Kernel tracing only (CUPTI): recording CPU ops too would slow the host and understate GPU busy.
        self._prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], acc_events=True)
        self._prof.start()
        self._prof_t0 = time.perf_counter()

    def _stop_profile(self) -> None:
        torch.cuda.synchronize()
        wall = time.perf_counter() - self._prof_t0
        self._prof.stop()
        busy = _busy_seconds(self._prof)
        self.gpu_busy_fraction = None if busy is None or wall <= 0 else min(1.0, busy / wall)
        self._prof = None

    # -- results -------------------------------------------------------------------------------------
    def results(self) -> dict:
        tokens = window_tokens(self.tokens_start, self.tokens_end) if self.tokens_start else None
        total = sum(self.step_times)
        shapes_before = {s for step, s in self.counter.shapes if step <= self.warmup}
        shapes_window = {s for step, s in self.counter.shapes if self.warmup < step <= self.timed_end}
        return {
            "window_steps": self.window_steps,
            "step_time_s": {**_stats(self.step_times), "warmup_steps": self.warmup,
                            "wall_mean": self.window_wall_s / len(self.step_times) if self.window_wall_s and self.step_times else None,
                            "values": self.step_times[:1000]},
            "breakdown_s": {p: (statistics.fmean(v) if v else None) for p, v in self.durations.items()},
            "host_s": {"data": statistics.fmean(self.host_data) if self.host_data else None,
                       "launch": statistics.fmean(self.host_launch) if self.host_launch else None,
                       "gc": self._gc_window[0] / len(self.step_times) if self.step_times else None,
                       "gc_collections": self._gc_window[1]},
            "gpu_busy_fraction": self.gpu_busy_fraction,
            "window_s": total,
            "tokens": tokens,
            "shapes": {"distinct_in_window": len(shapes_window), "new_in_window": len(shapes_window - shapes_before)},
            "alloc_retries_in_window": self.retries_end - self.retries_start,
            "phases_s": self._phases(),
            "stopped_when_stable": bool(self.stop_rel_error) and len(self.step_times) < self.max_timed,
            "compile": self._compile(),
        }

    def _compile(self) -> dict:
        g = self.graphs
        in_window = g["window_close"] - g["window_open"] if g["window_close"] is not None and g["window_open"] is not None else None
        return {"graphs": compiled_graphs() - g["begin"], "graphs_in_window": in_window, "to_first_step_s": self.first_step_s}

    def _phases(self) -> dict:
        t = self.phase_times
        span = lambda a, b: t[b] - t[a] if t[a] is not None and t[b] is not None else None  # noqa: E731
        return {"warmup": span("train_begin", "window_open"), "measure": span("window_open", "window_close"),
                "profile_and_rest": span("window_close", "train_end")}


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
    except Exception as exc:
        log.warning("NVML unavailable (%s): device_used not reported", exc)
    return out
