"""Issue 53 G4 on whole-model CUDA graphs (`experiment=small_batch_fastest`: 2k packs, fused LoRA): the memory
model's prediction against the run's peak. Call 1 on an H200 (gpu.sh graphs_memory, commit 08ff699) traced copies
compiled whole, as the run is, since reverted; the H100 rows are the eager copies' (the planned path today)."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown, pct

S = "speed/results/"
ROWS = [("H200", "h200_graphs_memory_call1", "graphs_mem_l4", "compiled whole (reverted)"),
        ("H200", "h200_graphs_memory_call1", "graphs_mem_l8", "compiled whole (reverted)"),
        ("H100", "h100_graphs_4layer_call", "g2k_model_graphs_fused", "eager (today)"),
        ("H100", "h100_graphs_full_call", "f2k_model_graphs_fused", "eager (today)")]


def speed_memory_graphs() -> str:
    rows = []
    for card, name, label, copies in ROWS:
        f = Fig(S + name + ".jsonl", label)
        peak, pred = f.get("memory_gb.peak_allocated"), f.get("memory_predicted_gb.peak_allocated")
        rows.append([card, str(f.get("config.model.arch.num_hidden_layers")), copies, f"{peak:.2f}", f"{pred:.2f}",
                     pct(pred / peak - 1)])
    return markdown(["card", "layers", "the memory model's copies", "measured peak GB", "predicted GB", "error"], rows)


TABLES = {"speed/memory_graphs": (HERE / "speed/README.md", speed_memory_graphs)}
