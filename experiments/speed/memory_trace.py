"""Where a training step's peak GPU memory goes, beside what the memory model predicted.

One run, with the CUDA allocator's history recorded over its first 3 steps: at their peak, what is alive,
grouped by the line that allocated it (the first frame in our code, transformers, peft, Liger or torch's
optimizer), and the allocation that made the peak. Then the memory model's probe copies at 1-4 layers on the
same widest micro-batch, so the real run (at 4 layers) can be set beside a copy of the same depth
(MEMTRACE_PROBE_LAYERS="1 2" for fewer). Under torch.compile the alive tensors are named by the generated code's
line and the source nodes inductor wrote beside it.

    python experiments/speed/memory_trace.py OUT.jsonl LABEL model=qwen3 model.arch.num_hidden_layers=4 ...
"""
from __future__ import annotations

import collections
import gc
import json
import linecache
import os
import sys
import tempfile
from pathlib import Path

import torch
from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from src.data import collate, prepare
from src.machine import env
from src.model import build as models, memory_model  # noqa: E402
from src.config.compose import compose  # noqa: E402
from src.run import run  # noqa: E402

GB = 2**30
PROBE_LAYERS = [int(n) for n in os.environ.get("MEMTRACE_PROBE_LAYERS", "1 2 3 4").split()]
OURS = ("/src/", "transformers/", "peft/", "liger_kernel/", "torch/optim/", "accelerate/")
# compiled code: inductor's generated wrapper (its buffers), and torch's own CUDA-graph and autograd machinery
# (static input copies, a graph's outputs), named before the model code that called them
COMPILED = ("torchinductor", "torch/_inductor/", "torch/_functorch/", "torch/_dynamo/")


class RecordHistory(TrainerCallback):
    """The allocator's history over the first `steps` steps (costs time and host memory: diagnosis only)."""

    def __init__(self, steps: int = 3):
        self.steps, self.snapshot = steps, None

    def on_train_begin(self, args, state, control, **kw):
        self.base = torch.cuda.memory_allocated()
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.steps:
            torch.cuda.synchronize()
            self.snapshot = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)


def generated(frame: dict) -> str:
    """A line of inductor's generated code with the source nodes named just below it (the buffer's producer)."""
    lines = [linecache.getline(frame["filename"], frame["line"] + i).strip() for i in range(4)]
    nodes = next((ln for ln in lines[1:] if ln.startswith("# Topologically Sorted Source Nodes")), "")
    return f"{lines[0][:120]} {nodes[37:200]}".strip()


def is_generated(filename: str) -> bool:
    """inductor's generated code: under torch's default cache directory or one named inductor (the runner's)"""
    return "torchinductor" in filename or ("/inductor/" in filename and "site-packages" not in filename)


def site(frames: list[dict]) -> str:
    for f in frames:  # innermost first
        if is_generated(f["filename"]):
            return f"inductor {Path(f['filename']).name}:{f['line']} {generated(f)}"
        if any(k in f["filename"] for k in COMPILED):
            return f"{f['filename'].split('site-packages/')[-1]}:{f['line']} {f['name']}"
    for f in frames:
        if any(k in f["filename"] for k in OURS):
            name = f["filename"].split("site-packages/")[-1].split("/work/")[-1]
            return f"{name}:{f['line']} {f['name']}"
    return f"{frames[0]['filename'].split('/')[-1]}:{frames[0]['line']} {frames[0]['name']}" if frames else "?"


def at_peak(trace: list[dict], base: int) -> dict:
    """Replay allocations and frees; what was alive when the allocated total was highest."""
    live, total, peak, peak_i, peak_live = {}, base, base, -1, {}
    for i, ev in enumerate(trace):
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
            total += ev["size"]
            if total > peak:
                peak, peak_i, peak_live = total, i, dict(live)
        elif ev["action"] == "free_completed" and ev["addr"] in live:
            total -= live.pop(ev["addr"])["size"]
    sites = collections.Counter()
    counts = collections.Counter()
    for ev in peak_live.values():
        key = site(ev["frames"])
        sites[key] += ev["size"]
        counts[key] += 1
    top = [{"site": k, "gb": v / GB, "n": counts[k]} for k, v in sites.most_common(40)]
    made = trace[peak_i] if peak_i >= 0 else None
    return {"peak_gb": peak / GB, "base_gb": base / GB, "alive_at_peak_gb": sum(sites.values()) / GB, "top": top,
            "peak_made_by": [f"{f['filename'].split('site-packages/')[-1]}:{f['line']} {f['name']}"
                             for f in (made["frames"][:12] if made else [])]}


def main(out_path: str, label: str, *overrides: str) -> None:
    cfg = compose(["logger=none", *overrides])
    rec = RecordHistory()
    with tempfile.TemporaryDirectory() as tmp:
        rep = run(cfg, Path(tmp), callbacks=(rec,))
        row = {"label": label, "overrides": overrides, "status": rep["status"], "error": rep["error"],
               "measured_peak_gb": (rep.get("memory_gb") or {}).get("peak_allocated"),
               "predicted": rep.get("memory_predicted_gb")}
        if rec.snapshot:
            row["trace"] = at_peak(rec.snapshot["device_traces"][0], rec.base)
            row["trace"]["steps"] = rec.steps
        del rec
        gc.collect()
        torch.cuda.empty_cache()
        res = env.setup(cfg)
        conf = models.hf_config(cfg)
        lengths = prepare.prepare(cfg, conf, Path(tmp)).info["lengths"]
        collator = collate.collator_for(cfg, conf, lengths)
        batch = memory_model.widest_batch(cfg, conf, collator, lengths, res.device)
        row["probe_gb"] = {n: {k: v / GB for k, v in memory_model.probe_copy(cfg, res, conf, batch, n).items()}
                           for n in PROBE_LAYERS}
    with open(out_path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k != "trace"}, default=str))
    if "trace" in row:
        t = row["trace"]
        print(f"  peak {t['peak_gb']:.2f} GB (base {t['base_gb']:.2f}); made by {t['peak_made_by'][:4]}")
        for s in t["top"][:15]:
            print(f"    {s['gb']:7.3f} GB  x{s['n']:<5} {s['site']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
