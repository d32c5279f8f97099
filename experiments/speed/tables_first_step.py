"""Issue 53 item 3: where the time to step 1 goes (timing_s.build_parts, compile.work), from the full-depth runs
of the fp8full and fp8learn calls on one H200: each call's first run of a precision compiles cold, the second
(another seed) runs at the same shapes on a warm compile cache; in call 2 it also reuses the memory trace."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown

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


TABLES = {"speed/first_step": (HERE / "speed/README.md", speed_first_step)}
