"""Issue 53 item 3: where the time to step 1 goes (timing_s.build_parts, compile.work), from the full-depth runs
of the fp8full and fp8learn calls on one H200: each call's first run of a precision compiles cold, the second
(another seed) runs at the same shapes on a warm compile cache; in call 2 it also reuses the memory trace."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown, rate, ratio

S = "speed/results/"
RUNS = [("h200_fp8full_call1", "1", "full"), ("h200_fp8learn_call2", "2", "learn")]


def speed_first_step() -> str:
    rows = []
    for name, call, prefix in RUNS:
        for seed, state in ((0, "cold"), (1, "warm")):
            for dtype in ("bf16", "fp8"):
                f = Fig(S + name + ".jsonl", f"{prefix}_{dtype}_seed{seed}")
                parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
                rows.append([call, f"{'FP8 + fused' if dtype == 'fp8' else 'bf16'} seed {seed}", state,
                             f"{f.get('compile.to_first_step_s'):.1f}", f"{f.get('timing_s.build'):.1f}",
                             f"{parts['memory_model']:.1f}", f"{parts['data'] + parts['model']:.1f}",
                             f"{parts['trainer']:.1f}", f"{f.get('timing_s.diagnostics'):.1f}",
                             f"{work['compile_s']:.1f}",
                             f"{work['fx_graph_cache_hits']} / {work['fx_graph_cache_misses']}"])
    return markdown(["call", "run (full depth, 8k packs)", "compile cache", "to first step s", "build s",
                     "of it: memory trace", "data + model", "trainer (+ regions)", "checks s", "torch compiling s",
                     "graph cache hits / misses"], rows)


FIRSTSTEP = [f"h200_firststep_call{n}" for n in (1, 2, 3, 4)]


def _one_graph(f: Fig) -> bool:
    return "trainer.compile_one_graph=true" in (f.get("overrides") or [])


def _cache(f: Fig, n: int) -> str:
    """cold or warm, as the run's own graph cache counts it: call 1's second "cold" run found the first's layer
    graph in a cache that machine shared (0 misses), so it is not cold."""
    misses = f.get("compile.work")["fx_graph_cache_misses"]
    if f.label.startswith(("cold", "fp8_cold")):
        return "cold" if misses else "cold trace, warm graphs (shared cache)"
    return "warm"


def speed_first_step_one_graph() -> str:
    """Issue 53 G3, the firststep calls (experiments/speed/gpu.sh firststep..firststep4): the time to step 1 with
    one layer graph (trainer.compile_one_graph) or two, and with the bytecode cached (src/base/bytecode.py) or not;
    bf16 packed 8k at full depth unless the run says FP8. Bytecode is "cached" where the report's
    env.pycache_prefix is set: call 3's runs labelled so ran before the lever covered PYTHONDONTWRITEBYTECODE."""
    rows = []
    for n, name in enumerate(FIRSTSTEP, 1):
        for record in _labels(name):
            f = Fig(S + name + ".jsonl", record)
            if "profiled" in record:
                continue  # under cProfile: its times are the profiler's
            parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
            imports = f.get("timing_s.imports")
            rows.append([str(n), "FP8 + fused" if "fp8" in record else "bf16", "one" if _one_graph(f) else "two",
                         _cache(f, n), "yes" if f.get("env.pycache_prefix") else "no",
                         "" if imports is None else f"{imports:.1f}", f"{f.get('compile.to_first_step_s'):.1f}",
                         f"{parts['memory_model']:.1f}", f"{parts['trainer']:.1f}", f"{f.get('timing_s.diagnostics'):.1f}",
                         f"{work['compile_s']:.1f}", f"{work['fx_graph_cache_hits']} / {work['fx_graph_cache_misses']}",
                         rate(f)])
    return markdown(["call", "run", "layer graphs", "compile cache", "bytecode cached", "imports s", "to first step s",
                     "of it: memory trace", "trainer (+ regions)", "checks s", "torch compiling s",
                     "graph cache hits / misses", "real tok/s (95%)"], rows)


def _labels(name: str) -> list[str]:
    from experiments.figures import _records

    return [r["label"] for r in _records(S + name + ".jsonl")]


def speed_one_graph_step() -> str:
    """The step's own speed with one layer graph against two, the runs of calls 1 and 2 paired in their order
    (each pair one call, one machine)."""
    rows = []
    for n in (1, 2):
        path = S + FIRSTSTEP[n - 1] + ".jsonl"
        for run in ("cold", "warm1", "warm2"):
            one, two = Fig(path, f"{run}_one_graph_true"), Fig(path, f"{run}_one_graph_false")
            rows.append([str(n), run, rate(one), rate(two), ratio(one, two)])
    return markdown(["call", "runs", "one graph real tok/s", "two graphs real tok/s", "one / two (95%)"], rows)


def speed_bytecode_imports() -> str:
    """The imports a run makes, timed in fresh processes on the H200 machines of calls 3 and 4 (PYTHONDONTWRITEBYTECODE=1
    there, torch installed without bytecode): as Python does there, with a prefix but writing still off (call 3),
    and with src/base/bytecode.py's cache, the first process filling it (call 4)."""
    import re

    rows = []
    for n, what in ((3, {"''": "none: compiled in each process", "'/tmp/pyc_probe'": "a prefix, writing still off"}),
                    (4, {"cached": "trainsweep's cache", "off": "none (TRAINSWEEP_PYCACHE=off)"})):
        text = (HERE / f"{S}h200_firststep_call{n}_bytecode.txt").read_text()
        seen = set()
        for m in re.finditer(r"^imports(?:,)? (?:with prefix |bytecode )(\S+): ([\d.]+) s$", text, re.M):
            first = m[1] == "cached" and m[1] not in seen
            seen.add(m[1])
            rows.append([str(n), what[m[1]] + (", the first process: fills it" if first else ""), f"{float(m[2]):.1f}"])
    return markdown(["call", "bytecode", "imports s (a fresh process)"], rows)


# Calls 5 and 6 (gpu.sh firststep5, firststep6) and the whole-model graphs call (graphs_warm). Call 5 and the graphs
# call exported PYTHONPYCACHEPREFIX on a machine with PYTHONDONTWRITEBYTECODE=1: a prefix with writing off, so
# src/base/bytecode.py stood aside and nothing was cached (their reports' env.pycache_prefix is set all the same).
# Call 6 linked one written cache into every run's TRAINSWEEP_CACHE.
CACHES = [("h200_firststep_call5", "5", "no"), ("h200_firststep_call6", "6", "yes"), ("h200_graphs_warm_call1", "graphs 1", "no")]


def speed_first_step_caches() -> str:
    """Issue 53 G3 after one layer graph: torch's AOTAutograd cache taking our autograd Functions (src/machine/env.py)
    or bypassing them (TORCHINDUCTOR_AUTOGRAD_CACHE_ALLOW_CUSTOM_AUTOGRAD=0, torch's default), inductor's compile
    workers started at the run's start or at its first compile (trainer.compile_workers_early), on one H200."""
    rows = []
    for name, call, bytecode in CACHES:
        for record in _labels(name):
            f = Fig(S + name + ".jsonl", record)
            parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
            what = ("whole-model CUDA graphs + fused, 2k" if "graphs" in record
                    else "FP8 + fused, 8k" if "fp8" in record else "bf16, 8k")
            rows.append([call, what, "cold" if work["fx_graph_cache_misses"] else "warm",
                         "bypassed" if work["autograd_cache_bypasses"] else "taken",
                         "yes" if f.get("config.trainer.compile_workers_early") else "no",
                         "filled it" if bytecode == "yes" and record == "fp8_cold" else bytecode,  # call 6's first run
                         f"{f.get('timing_s.imports'):.1f}", f"**{f.get('compile.to_first_step_s'):.1f}**",
                         f"{parts['model']:.1f}", f"{parts['memory_model']:.1f}", f"{work['compile_s']:.1f}",
                         f"{work['autograd_cache_hits']} / {work['autograd_cache_misses']} / {work['autograd_cache_bypasses']}",
                         rate(f)])
    return markdown(["call", "run (full depth)", "compile cache", "autograd cache", "workers early", "bytecode cached",
                     "imports s", "to first step s", "of it: model build", "memory trace", "torch compiling s",
                     "autograd cache hits / misses / bypasses", "real tok/s (95%)"], rows)


def speed_first_step_warm_pool() -> str:
    """Issue 53 G3, call 7 (gpu.sh firststep7): inductor's compile workers started at the first compile (torch's
    default) or only when a kernel misses the cache (TORCH_WARM_POOL=0, said by the run's label), alternating on
    one H200; the early workers off throughout (their default). Each precision's first run compiles cold and fills
    the bytecode cache every later run reads."""
    name = "h200_firststep_call7"
    rows = []
    for record in _labels(name):
        f = Fig(S + name + ".jsonl", record)
        parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
        rows.append(["FP8 + fused, 8k" if "fp8" in record else "bf16, 8k",
                     "cold" if work["fx_graph_cache_misses"] else "warm",
                     "on a cache miss" if "no_warm_pool" in record else "at the first compile",
                     f"{f.get('timing_s.imports'):.1f}", f"**{f.get('compile.to_first_step_s'):.1f}**",
                     f"{parts['model']:.1f}", f"{parts['memory_model']:.1f}", f"{work['compile_s']:.1f}", rate(f)])
    return markdown(["run (full depth)", "compile cache", "compile workers start", "imports s", "to first step s",
                     "of it: model build", "memory trace", "torch compiling s", "real tok/s (95%)"], rows)


def speed_graphs_once(name: str) -> str:
    """Issue 53 G3, graphs call 2 (gpu.sh graphs_once): whole-model CUDA graphs at full depth (2k packs, the fused
    linear off), each decoder layer one nested compile region (trainer.compile_layers_once) or inlined, each
    setting on its own fresh caches, cold then warm; compile.work's split of torch's compiling."""
    rows = []
    for record in _labels(name):
        f = Fig(S + name + ".jsonl", record)
        parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
        once = bool(f.get("config.trainer.compile_layers_once"))
        rows.append(["each layer one region" if once else "inlined (torch's default)",
                     "cold" if work["fx_graph_cache_misses"] else "warm",
                     f"{f.get('timing_s.imports'):.1f}", f"**{f.get('compile.to_first_step_s'):.1f}**",
                     f"{parts['memory_model']:.1f}", f"{work['compile_s']:.1f}", f"{work['tracing_s']:.1f}",
                     f"{work['backend_s']:.1f}", f"{work['guards_s']:.1f}", rate(f),
                     f"{f.get('memory_predicted_gb.peak_allocated'):.1f} / {f.get('memory_gb.peak_allocated'):.1f}"])
    return markdown(["layers under the whole-model compile", "compile cache", "imports s", "to first step s",
                     "of it: memory trace", "torch compiling s", "of it: dynamo tracing", "backend", "guards",
                     "real tok/s (95%)", "memory GB predicted / peak"], rows)


def speed_graphs_fused(name: str) -> str:
    """Issue 53 G3, graphs call 3 (gpu.sh graphs_fused): experiment=small_batch_fastest at full depth (whole-model
    CUDA graphs, 2k packs) with its fused LoRA linear and without, each on its own fresh caches, cold then warm;
    the plain-Trainer anchor of the same call beside each rate. The 8-layer run under compile_layers_once is the
    once-memory table's."""
    anchor = Fig(S + name + "_anchors.jsonl", "bf16_sdpa_b8")
    rows = []
    for record in _labels(name):
        f = Fig(S + name + ".jsonl", record)
        if f.get("config.trainer.compile_layers_once"):
            continue
        parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
        rows.append(["fused (the preset)" if f.get("config.peft.fused") else "peft's own",
                     "cold" if work["fx_graph_cache_misses"] else "warm",
                     f"{f.get('timing_s.imports'):.1f}", f"**{f.get('compile.to_first_step_s'):.1f}**",
                     f"{parts['memory_model']:.1f}", f"{work['compile_s']:.1f}", f"{work['tracing_s']:.1f}",
                     f"{work['backend_s']:.1f}", rate(f), ratio(f, anchor),
                     f"{f.get('memory_predicted_gb.peak_allocated'):.2f} / {f.get('memory_gb.peak_allocated'):.2f}"])
    return markdown(["LoRA linear", "compile cache", "imports s", "to first step s", "of it: memory trace",
                     "torch compiling s", "of it: dynamo tracing", "backend", "real tok/s (95%)", "x plain bs 8",
                     "memory GB predicted / peak"], rows)


ONCE_MEMORY = [("h100_graphs_fused_call1", "graphs_once_l8"), ("h100_once_memory_call1", "m8_once_no_graphs"),
               ("h100_once_memory_call1", "m8_inlined_no_graphs")]


def speed_once_memory() -> str:
    """Issue 53 G4: the memory model's prediction beside the peak under a whole-model compile at 8 layers (2k packs,
    the fused linear off), each decoder layer one nested compile region (trainer.compile_layers_once) or inlined,
    with whole-model CUDA graphs (the preset's reduce-overhead) or without (compile_mode=null). These ran commit
    24dfdee, whose copies under the option compiled whole with the same regions, 3 and 4 layers deep (since
    reverted: copies compiled by layer, and the figure marked low); inlined layers' copies compile by layer."""
    rows = []
    for name, record in ONCE_MEMORY:
        f = Fig(S + name + ".jsonl", record)
        once = f.get("config.trainer.compile_layers_once")
        pred, peak = f.get("memory_predicted_gb.peak_allocated"), f.get("memory_gb.peak_allocated")
        rows.append([name.removeprefix("h100_").replace("_", " "), str(f.get("config.model.arch.num_hidden_layers")),
                     "each layer one region" if once else "inlined",
                     "yes" if f.get("config.trainer.compile_mode") == "reduce-overhead" else "no",
                     "compiled whole, 3 and 4 layers" if once else "compiled by layer, 1 and 2 layers",
                     f"{pred:.2f}", f"{peak:.2f}", f"{pred / peak - 1:+.1%}", f"{f.get('timing_s.build_parts')['memory_model']:.1f}",
                     rate(f)])
    return markdown(["call (H100)", "layers", "layers under the compile", "CUDA graphs", "the memory model's copies",
                     "predicted GB", "peak GB", "predicted vs peak", "memory trace s", "real tok/s (95%)"], rows)


def speed_adapters(name: str) -> str:
    """Issue 53 G3 (gpu.sh adapters): peft.adapters_on_device on the bf16 reference (packed 8k, regional compile)
    at full depth, one cold run, then warm runs alternating off and on; the anchor of the same call beside each."""
    anchor = Fig(S + name + "_anchors.jsonl", "bf16_sdpa_b8")
    rows = []
    for record in _labels(name):
        f = Fig(S + name + ".jsonl", record)
        parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
        rows.append(["on the GPU" if f.get("config.peft.adapters_on_device") else "CPU, then copied (peft's)",
                     "cold" if work["fx_graph_cache_misses"] else "warm", f"{f.get('timing_s.imports'):.1f}",
                     f"**{f.get('compile.to_first_step_s'):.1f}**", f"{parts['model']:.2f}", f"{parts['memory_model']:.1f}",
                     f"{work['compile_s']:.1f}", rate(f), ratio(f, anchor)])
    return markdown(["adapters created", "compile cache", "imports s", "to first step s", "of it: model build s",
                     "memory trace", "torch compiling s", "real tok/s (95%)", "x plain bs 8"], rows)


def speed_fp8_warm(name: str) -> str:
    """Issue 53 G3 (gpu.sh g3g4): FP8 + fused at 8k packs, full depth: one cold run on fresh caches, then three
    warm runs (other seeds) reading them back; the bytecode cache filled by the first; the anchor of the same call
    beside each."""
    anchor = Fig(S + name + "_anchors.jsonl", "bf16_sdpa_b8")
    rows = []
    for record in [r for r in _labels(name) if r.startswith("fp8_")]:
        f = Fig(S + name + ".jsonl", record)
        parts, work = f.get("timing_s.build_parts"), f.get("compile.work")
        rows.append(["cold" if work["fx_graph_cache_misses"] else "warm", str(f.get("config.trainer.seed")),
                     f"{f.get('timing_s.imports'):.1f}", f"**{f.get('compile.to_first_step_s'):.1f}**",
                     f"{parts['model']:.2f}", f"{parts['memory_model']:.1f}", f"{work['compile_s']:.1f}", rate(f),
                     ratio(f, anchor)])
    return markdown(["compile cache", "seed", "imports s", "to first step s", "of it: model build s", "memory trace s",
                     "torch compiling s", "real tok/s (95%)", "x plain bs 8"], rows)


def speed_graphs_warm(name: str) -> str:
    """Issue 53 G3 (gpu.sh graphs_warm, then graphs_preset in the same call): the graphs preset (2k packs, full
    depth, whole-model CUDA graphs, without the fused linear) cold on fresh caches, warm reading them back with
    inductor's autograd cache and without it (TORCHINDUCTOR_AUTOGRAD_CACHE_ALLOW_CUSTOM_AUTOGRAD=0), and cold again on
    other fresh caches without early compile workers; the anchor of the same call beside each."""
    anchor = Fig(S + name + "_anchors.jsonl", "bf16_sdpa_b8")
    rows = []
    for record in _labels(name):
        f = Fig(S + name + ".jsonl", record)
        work = f.get("compile.work")
        cache = "cold" if work["fx_graph_cache_misses"] else "warm"
        if cache == "warm":
            cache += ", autograd cache " + ("read" if work["autograd_cache_hits"] else "bypassed")
        rows.append([record.replace("_", " "), cache, "yes" if f.get("config.trainer.compile_workers_early") else "no",
                     f"**{f.get('compile.to_first_step_s'):.1f}**", f"{work['compile_s']:.1f}",
                     f"{f.get('memory_gb.peak_allocated'):.2f}", f"{f.get('memory_predicted_gb.peak_allocated'):.2f}",
                     rate(f), ratio(f, anchor)])
    return markdown(["run", "compile cache", "early compile workers", "to first step s", "torch compiling s",
                     "peak GB", "predicted GB", "real tok/s (95%)", "x plain bs 8"], rows)


TABLES = {"speed/first_step_caches": (HERE / "speed/README.md", speed_first_step_caches),
          "speed/first_step_warm_pool": (HERE / "speed/README.md", speed_first_step_warm_pool),
          "speed/first_step": (HERE / "speed/README.md", speed_first_step),
          "speed/bytecode_imports": (HERE / "speed/README.md", speed_bytecode_imports),
          "speed/first_step_one_graph": (HERE / "speed/README.md", speed_first_step_one_graph),
          "speed/one_graph_step": (HERE / "speed/README.md", speed_one_graph_step),
          "speed/graphs_once": (HERE / "speed/README.md", lambda: speed_graphs_once("h100_graphs_once_call1")),
          "speed/graphs_fused": (HERE / "speed/README.md", lambda: speed_graphs_fused("h100_graphs_fused_call1")),
          "speed/once_memory": (HERE / "speed/README.md", speed_once_memory),
          "speed/adapters": (HERE / "speed/README.md", lambda: speed_adapters("h100_adapters_call1")),
          "speed/fp8_warm": (HERE / "speed/README.md", lambda: speed_fp8_warm("h100_g3g4_call1")),
          "speed/graphs_warm_h100": (HERE / "speed/README.md", lambda: speed_graphs_warm("h100_graphs_warm_call1"))}
