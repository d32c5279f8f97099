"""What torch.compile did in this process, read from dynamo's own counters (dict reads: no sync, no import of
torch._dynamo where nothing compiled): the graphs compiled so far (the timed window opens once a step compiles
nothing), and the seconds spent compiling with the compile caches' hits and misses (a report's compile.work)."""
from __future__ import annotations

import sys


def compiled_graphs() -> int:
    """Graphs torch.compile has compiled in this process so far (a dict read: no sync)."""
    dynamo = sys.modules.get("torch._dynamo")
    return int(dynamo.utils.counters["stats"]["unique_graphs"]) if dynamo is not None else 0


def compile_work() -> dict:
    """torch.compile's work in this process so far: seconds compiling (dynamo with its backend, and each backward
    compiled at its first call) and the compile caches' hits and misses. Dict reads: no sync. A warm cache shows
    as hits; what the first step still costs beside them is tracing, guards and loading."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is None:
        return {}
    seconds, counts = dynamo.utils.compilation_time_metrics, dynamo.utils.counters
    return {"compile_s": sum(seconds.get("_compile.compile_inner", ())) + sum(seconds.get("backward._backward_impl", ())),
            # where compile_s goes: dynamo reading the model's Python (no cache skips it), the backend (AOTAutograd
            # and inductor, or reading their caches back; a backward compiled at its first call), the guards
            "tracing_s": sum(seconds.get("bytecode_tracing", ())),
            "backend_s": sum(seconds.get("OutputGraph.call_user_compiler", ())) + sum(seconds.get("backward._backward_impl", ())),
            "guards_s": sum(seconds.get("build_guards", ())),
            "fx_graph_cache_hits": counts["inductor"]["fxgraph_cache_hit"],
            "fx_graph_cache_misses": counts["inductor"]["fxgraph_cache_miss"],
            "autograd_cache_hits": counts["aot_autograd"]["autograd_cache_hit"],
            "autograd_cache_misses": counts["aot_autograd"]["autograd_cache_miss"],
            # a graph the AOTAutograd cache would not take: traced and partitioned again by every job
            "autograd_cache_bypasses": counts["aot_autograd"]["autograd_cache_bypass"]}


def compile_work_since(before: dict) -> dict:
    """compile_work() since `before` (taken at the run's start: the budget probe's compiles count, an earlier
    run's in the same process don't)."""
    now = compile_work()
    return {k: round(v - before.get(k, 0), 3) for k, v in now.items()} if now else {}
