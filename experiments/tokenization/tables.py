"""The table of experiments/tokenization/README.md: bench.py's four variants on this CPU (one run each)."""
from __future__ import annotations

from experiments.figures import HERE, _records, markdown, quotient, row_call


def variants() -> str:
    path = "tokenization/results/cpu_2core_300k.jsonl"
    runs = {(r["num_proc"], r["tokenizer_threads"]): r for r in _records(path)}
    base = runs[1, False]
    rows = []
    for (procs, threads), said in (((1, False), "off (`TOKENIZERS_PARALLELISM=false`)"), ((1, True), "on (its default)"),
                                   ((2, False), "off"), ((2, True), "on")):
        r = runs[procs, threads]
        rows.append([str(procs), said, f"{r['cold_s']:.1f}", f"{r['rows'] / r['cold_s']:,.0f}",
                     f"{quotient(base['cold_s'], r['cold_s'], row_call(base), row_call(r)):.2f}x", f"{r['cached_s']:.2f}"])
    return markdown(["num_proc", "fast tokenizer's threads", "cold s", "rows/s", "vs 1 process, no threads",
                     "second run (cached) s"], rows)


TABLES = {"tokenization/variants": (HERE / "tokenization/README.md", variants)}
