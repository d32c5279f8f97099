"""Issue 53 G4 on whole-model CUDA graphs (`experiment=small_batch_fastest`: 2k packs, fused LoRA, unless a row
says otherwise): the memory model's prediction against the run's peak. The first two H100 rows are eager copies' (the
path until calls 2-3); call 1 on an H200 (gpu.sh graphs_memory, commit 08ff699) traced copies compiled whole, since
reverted; calls 2 and 3 (gpu.sh graphs_memory2, graphs_memory3) trace copies compiled by layer (today's layers), and
call 2 runs the same 8 layers compiled by layer too, the peak those copies stand for. Call 3 ran commit e293e6d,
which also counted the first step's workspace twice under CUDA graphs (a rule read off call 2, dropped after call
3): its rows are predicted without it, from their stored parts with the workspace once. The H100's graphs8k call (gpu.sh
graphs8k) asks whether call 3's 8k shortfall stays fixed as depth grows, as the 2k one did. The H100's
graphs_memory4 call (gpu.sh graphs_memory4, commit e3f5cdb) runs today's rule: the by-layer copies, and the part
outside the layers checked against a 2-layer copy compiled whole; its call 2 (ONLY_FULL=1, another H100) the same at full
depth."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown, pct

S = "speed/results/"
WHOLE = "by layer + a 2-layer copy compiled whole (today)"
WORKSPACE_TWICE = "h200_graphs_memory_call3"  # predicted with the workspace counted twice (see above)
ROWS = [("H100", "h100_graphs_4layer_call", "g2k_model_graphs_fused", "eager (until calls 2-3)", "graphs"),
        ("H100", "h100_graphs_full_call", "f2k_model_graphs_fused", "eager (until calls 2-3)", "graphs"),
        ("H200", "h200_graphs_memory_call1", "graphs_mem_l4", "compiled whole (reverted)", "graphs"),
        ("H200", "h200_graphs_memory_call1", "graphs_mem_l8", "compiled whole (reverted)", "graphs"),
        ("H200", "h200_graphs_memory_call2", "graphs_mem2_l4", "compiled by layer", "graphs"),
        ("H200", "h200_graphs_memory_call2", "graphs_mem2_l8", "compiled by layer", "graphs"),
        ("H200", "h200_graphs_memory_call2", "graphs_mem2_full", "compiled by layer", "graphs"),
        ("H200", "h200_graphs_memory_call2", "regional_mem2_l8", "compiled by layer", "regional compile, no graphs"),
        ("H200", "h200_graphs_memory_call3", "graphs_mem3_8k_l4", "compiled by layer", "graphs, 8k packs"),
        ("H200", "h200_graphs_memory_call3", "graphs_mem3_fp8_8k_l4", "compiled by layer",
         "graphs, 8k packs, FP8 + fused"),
        ("H100", "h100_graphs8k_call1", "graphs8k_l8", "compiled by layer", "graphs, 8k packs"),
        ("H100", "h100_graphs8k_call1", "graphs8k_fp8_l8", "compiled by layer", "graphs, 8k packs, FP8 + fused"),
        ("H100", "h100_graphs8k_call1", "graphs8k_full", "compiled by layer", "graphs, 8k packs"),
        ("H100", "h100_graphs_memory4_call1", "gm4_2k_l4", WHOLE, "graphs"),
        ("H100", "h100_graphs_memory4_call1", "gm4_8k_l4", WHOLE, "graphs, 8k packs"),
        ("H100", "h100_graphs_memory4_call1", "gm4_8k_l8", WHOLE, "graphs, 8k packs"),
        ("H100", "h100_graphs_memory4_call1", "gm4_8k_fp8_l8", WHOLE, "graphs, 8k packs, FP8 + fused"),
        ("H100", "h100_graphs_memory4_call1", "gm4_8k_nographs_l8", WHOLE, "compiled whole, no graphs, 8k packs"),
        ("H100", "h100_graphs_memory4_call2", "gm4_8k_full", WHOLE, "graphs, 8k packs")]


def speed_memory_graphs() -> str:
    rows = []
    for card, name, label, copies, run in ROWS:
        f = Fig(S + name + ".jsonl", label)
        peak, pred = f.get("memory_gb.peak_allocated"), f.get("memory_predicted_gb.peak_allocated")
        if name == WORKSPACE_TWICE:
            pred -= f.get("memory_predicted_gb.parts.workspace") / 2
        short = (peak - pred) * 2**30 / f.get("config.batch.tokens") / 1e3
        rows.append([card, name.removeprefix("h200_").removeprefix("h100_").replace("_", " "), run,
                     str(f.get("config.model.arch.num_hidden_layers")), copies, f"{peak:.2f}", f"{pred:.2f}",
                     pct(pred / peak - 1), f"{short:.1f}" if pred < peak else ""])
    return markdown(["card", "call", "run", "layers", "the memory model's copies", "measured peak GB", "predicted GB",
                     "error", "short by, KB a token"], rows)


MEMTRACE = (("graphs8k_l1", "1", "CUDA graphs"), ("graphs8k_l2", "2", "CUDA graphs"),
            ("whole8k_l2", "2", "no CUDA graphs (compile_mode=null)"))


def speed_memtrace_graphs() -> str:
    """The H100's memtrace graphs call (gpu.sh memtrace graphs, memory_trace.py): the whole model compiled at 8k
    packs, with CUDA graphs and without, the memory model of that commit (copies compiled by layer) beside the
    peak, and what was alive at the peak of the first 3 steps (the allocator's history) in the largest groups."""
    rows = []
    for label, layers, run in MEMTRACE:
        f = Fig(S + "h100_memtrace_graphs_call1.jsonl", label)
        peak, pred = f.get("measured_peak_gb"), f.get("predicted.peak_allocated")
        short = (peak - pred) * 2**30 / f.get("predicted.widest_tokens") / 1e3
        rows.append([layers, run, f"{peak:.3f}", f"{pred:.3f}", pct(pred / peak - 1),
                     f"{short:.1f}" if pred < peak else "", f"{f.get('trace.peak_gb'):.3f}"])
    return markdown(["layers", "whole model compiled, 8k packs", "measured peak GB", "predicted GB (by-layer copies)",
                     "error", "short by, KB a token", "peak in the traced steps GB"], rows)


def speed_region_saved_bytes() -> str:
    """CPU (experiments/speed/region_saved_bytes.py): the bytes autograd saves in one forward of the default small
    model compiled whole, its layers inlined or each one nested compile region, at 1-6 layers."""
    rows = []
    for once in (False, True):
        last = None
        for layers in range(1, 7):
            f = Fig(S + "cpu_region_saved_bytes.jsonl", f"{'once' if once else 'inlined'}_l{layers}")
            saved = f.get("saved_mb")
            rows.append(["each layer one region" if once else "inlined", str(layers), f"{saved:.2f}",
                         f"{saved - last:.2f}" if last is not None else ""])
            last = saved
    return markdown(["layers under the whole-model compile", "layers", "saved MB", "this layer's MB"], rows)


TABLES = {"speed/memory_graphs": (HERE / "speed/README.md", speed_memory_graphs),
          "speed/memtrace_graphs": (HERE / "speed/README.md", speed_memtrace_graphs),
          "speed/region_saved_bytes": (HERE / "speed/README.md", speed_region_saved_bytes)}
