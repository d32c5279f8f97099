"""The parts of src/measure/meter.py's Measure, each with one concern and no Trainer in sight:

  StepTimer     phase marks of every optimizer step on the device's timeline, read once the device passed them
  Window        the timed window: a warm-up that lasts until a step compiles nothing, then one reading of
                every counter (tokens, allocator retries, GC time, compiled graphs, wall clock) at each edge
  BusyProfiler  a few steps under torch.profiler after the window: the share of the time a kernel ran
                (what each kernel is, by its name: src/measure/kernels.py)
and, in src/measure/stop.py, the rule that stops timing once the mean step time is known to a relative error.
"""
from __future__ import annotations

import gc
import logging
import os
import time

import torch

from ..base import stats
from . import PHASES
from .compiled import compiled_graphs
from .kernels import kernel_kind, kernel_shares, top_kernels

log = logging.getLogger(__name__)


class Clock:
    """Timestamps on the device's own timeline, and the host's (`now`: perf_counter unless a test hands in a fake
    clock, so a timing test judges figures it set, not a loaded machine's sleeps)."""

    def __init__(self, cuda: bool, now=None):
        self.cuda, self._now = cuda, now

    def now(self) -> float:
        """The host's clock, in seconds."""
        return self._now() if self._now else time.perf_counter()

    def mark(self):
        if not self.cuda:
            return self.now()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def done(self, mark) -> bool:
        return not self.cuda or mark.query()

    def seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a


class StepTimer:
    """Per optimizer step, on the device's timeline:
      data      end(i-1) -> begin(i)     the device waited while the host fetched and collated batches
      compute   begin(i) -> pre_opt(i)   forward + backward of every micro-batch, and gradient clipping
      optimizer pre_opt(i) -> opt(i)     optimizer.step
      other     opt(i) -> end(i)         scheduler, zero_grad
    and on the host's clock, the host's wait for data and its time from step begin to step end. Only kept
    steps are read, by `drain`; every step's end starts the next one's data phase."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.durations = {p: [] for p in PHASES}
        self.step_times: list[float] = []
        self.host_data: list[float] = []
        self.host_launch: list[float] = []
        self.pending: list[dict] = []  # kept steps' marks, oldest first, not read yet
        self._cur: dict = {}
        self._end_prev = self._t_end_prev = None

    def start(self) -> None:
        self._t_end_prev = self.clock.now()
        self._end_prev = self.clock.mark()

    def begin(self) -> None:
        now = self.clock.now()
        self._cur = {"begin": self.clock.mark(), "t_begin": now, "host_data": now - self._t_end_prev}

    def mark(self, name: str) -> None:
        """`name`: pre_opt before optimizer.step, opt after it."""
        self._cur[name] = self.clock.mark()

    def end(self) -> None:
        cur = self._cur
        cur["end"], cur["end_prev"] = self.clock.mark(), self._end_prev
        now = self.clock.now()
        cur["host_launch"] = now - cur["t_begin"]
        self._end_prev, self._t_end_prev = cur["end"], now

    def keep(self) -> None:
        """Time the step that just ended."""
        self.pending.append(self._cur)

    def drain(self, wait: bool) -> None:
        """Reads the kept steps the device has finished; `wait` syncs first (once, after training)."""
        if wait and self.clock.cuda:
            torch.cuda.synchronize()
        s = self.clock.seconds
        while self.pending and self.clock.done(self.pending[0]["end"]):
            m = self.pending.pop(0)
            pre_opt, opt = m.get("pre_opt", m["begin"]), m.get("opt", m["begin"])
            self.durations["data"].append(s(m["end_prev"], m["begin"]))
            self.durations["compute"].append(s(m["begin"], pre_opt))
            self.durations["optimizer"].append(s(pre_opt, opt))
            self.durations["other"].append(s(opt, m["end"]))
            self.step_times.append(s(m["end_prev"], m["end"]))
            self.host_data.append(m["host_data"])
            self.host_launch.append(m["host_launch"])


class GcTimer:
    """Host time Python's garbage collector took: time the step can't use."""

    def __init__(self):
        self.seconds, self.count, self._t0 = 0.0, 0, 0.0

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._t0
            self.count += 1


class Window:
    """The timed steps: after the warm-up, up to `last` (which a stop rule may bring forward).

    A compile must not fall inside the window: the warm-up runs on past `warmup` until a step compiles
    nothing, up to `open_by` (half the steps it had to time), when the window opens anyway and the report
    counts the compiles. The window's figures are differences of two readings, taken at its edges."""

    def __init__(self, counter, cuda: bool, warmup: int, last: int):
        self.counter, self.cuda = counter, cuda
        self.warmup, self.last = warmup, last
        self.max_timed = last - warmup
        self.open_by = warmup + max(1, self.max_timed // 2)
        self.steps = 0  # trained in the window, timed or not: their tokens are in the window's count
        self.opened = self.closed = None  # the readings at the edges
        self.gc = GcTimer()

    def begin(self) -> None:
        """At train begin."""
        self.gc.start()
        if self.warmup == 0:
            self.open()

    def step_end(self, step: int, compiled: bool) -> bool:
        """After step `step` (`compiled`: it compiled a new graph). True if it trained inside the window."""
        inside = self.opened is not None and step <= self.last
        self.steps += inside
        if self.opened is None and step >= self.warmup and (not compiled or step >= self.open_by):
            self.warmup = step  # the warm-up lasted until here
            self.open()
        return inside

    def open(self) -> None:
        self.max_timed = self.last - self.warmup
        self.opened = self._reading()

    def close(self) -> None:
        if self.opened is not None:  # a run too short to time never opened its window
            self.closed = self._reading()

    def finish(self) -> None:
        """At train end: a window that training stopped inside ends here."""
        if self.opened is not None and self.closed is None:
            self.close()
        self.gc.stop()

    def _reading(self) -> dict:
        return {"graphs": compiled_graphs(), "tokens": self.counter.snapshot(), "machine": machine_load(self.cuda),
                # a host-side read of the allocator's counters: no device sync
                "retries": torch.cuda.memory_stats().get("num_alloc_retries", 0) if self.cuda else 0,
                "gc": (self.gc.seconds, self.gc.count), "wall": self._synced_now()}

    def _synced_now(self) -> float:
        # Two syncs a run, at the window's edges: a wall clock that checks the events' sum independently.
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def results(self) -> dict:
        """What happened between the edges (the tokens: src.measure.window_tokens of the two readings)."""
        a, b = self.opened, self.closed
        shapes_before = {s for step, s in self.counter.shapes if step <= self.warmup}
        shapes_window = {s for step, s in self.counter.shapes if self.warmup < step <= self.last}
        return {"alloc_retries": b["retries"] - a["retries"] if b else 0,
                "gc_s": b["gc"][0] - a["gc"][0] if b else 0.0,
                "gc_collections": b["gc"][1] - a["gc"][1] if b else 0,
                "graphs": b["graphs"] - a["graphs"] if b else None,
                "open_at": a["wall"] if a else None, "close_at": b["wall"] if b else None,
                "wall_s": b["wall"] - a["wall"] if b else None,
                "machine": {**{k: max((r["machine"][k] for r in (a, b) if r and r["machine"][k] is not None), default=None)
                               for k in ("load_per_cpu", "other_gpu_processes")},
                            "not_measured": next((r["machine"]["not_measured"] for r in (a, b)
                                                  if r and r["machine"].get("not_measured")), None)},
                "shapes": {"distinct_in_window": len(shapes_window), "new_in_window": len(shapes_window - shapes_before),
                           "widest_tokens": self.counter.widest}}


def machine_load(cuda: bool) -> dict:
    """Is anything else competing for this machine? The 1-minute load average per CPU (the run's own threads
    included) and, on a GPU, the other compute processes NVML lists on this device. Read at the window's
    edges only: /proc/loadavg and one NVML query cost microseconds, and never sync the device."""
    out = {"load_per_cpu": os.getloadavg()[0] / (os.cpu_count() or 1), "other_gpu_processes": None}
    if cuda:
        try:
            import pynvml

            pynvml.nvmlInit()
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device()))
            mine = sum(p.pid == os.getpid() for p in procs)
            out["other_gpu_processes"] = len(procs) - max(mine, 1 if procs else 0)  # a container may hide our pid
        except Exception as exc:  # no NVML: the flag is not raised rather than guessed, and the report says why
            out["not_measured"] = f"could not check: NVML: {type(exc).__name__}: {exc}"
    return out


class BusyProfiler:
    """How busy the GPU was over a few steps after the window: the share of the time no kernel ran is time
    the GPU waited for the host to launch work; and where the busy time went, by kind of kernel. Its syncs are
    outside the window."""

    def __init__(self, host_ops: bool = False):
        self.fraction = None
        self.kinds: dict[str, float] | None = None  # share of the profiled wall time each kind of kernel ran
        self.attention: dict[str, float] | None = None  # the same for each attention implementation that ran
        self.top: list[dict] | None = None  # the costliest kernels per profiled step
        self.host_ops = host_ops
        self.host: list[dict] | None = None  # host_ops: the host's costliest ops per profiled step
        self.not_measured: str | None = None  # why there is no busy figure although the profile ran
        self._prof = None
        self._t0 = 0.0

    @property
    def running(self) -> bool:
        return self._prof is not None

    def start(self) -> None:
        torch.cuda.synchronize()  # the profile starts on an idle GPU
        # Kernel tracing only (CUPTI) unless host_ops asks: recording CPU ops too slows the host and understates
        # GPU busy, so that is for finding what the host spends a launch-bound step on.
        acts = [torch.profiler.ProfilerActivity.CUDA] + ([torch.profiler.ProfilerActivity.CPU] if self.host_ops else [])
        self._prof = torch.profiler.profile(activities=acts, acc_events=True)
        self._prof.start()
        self._t0 = time.perf_counter()

    def stop(self, steps: int = 1) -> None:
        torch.cuda.synchronize()
        wall = time.perf_counter() - self._t0
        self._prof.stop()
        kernels = self._kernels()
        if self.host_ops:
            self.host = self._host_ops(steps)
        self._prof = None
        if kernels is None or wall <= 0:
            return
        self.fraction = min(1.0, stats.union_seconds([(s, e) for s, e, _, _ in kernels]) / wall)
        self.kinds, self.attention = kernel_shares(kernels, wall)
        self.top = top_kernels(kernels, steps)

    def _host_ops(self, steps: int, top: int = 25) -> list[dict] | None:
        """The host's ops and CUDA runtime calls by self time, per profiled step: what a launch-bound step's host
        is busy with (a cudaLaunchKernel count says how many kernels go out one by one, cudaGraphLaunch how many
        graphs replay)."""
        try:
            rows = [e for e in self._prof.key_averages() if e.self_cpu_time_total > 0]
        except Exception as exc:
            log.warning("could not read host ops from the profiler: %s", exc)
            return None
        rows.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
        return [{"op": e.key, "calls": round(e.count / steps, 1), "self_ms": round(e.self_cpu_time_total / 1e3 / steps, 3)}
                for e in rows[:top]]

    def _kernels(self) -> list[tuple[int, int, str, str]] | None:
        """(start ns, end ns, kind, name) of every GPU kernel profiled."""
        try:
            events = self._prof.profiler.kineto_results.events()
            return [(e.start_ns(), e.start_ns() + e.duration_ns(), kernel_kind(e.name()), e.name())
                    for e in events if e.device_type() == torch.autograd.DeviceType.CUDA]
        except Exception as exc:  # profiler APIs move between torch releases; a missing figure beats a crash
            log.warning("could not read kernel times from the profiler: %s", exc)
            self.not_measured = f"could not check: the profiler's kernel times: {type(exc).__name__}: {exc}"
            return None
