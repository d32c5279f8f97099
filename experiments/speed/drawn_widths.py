"""The widest micro-batch each run of a GPU call drew, replayed on the CPU: the same data, sampler, batch size,
grad_accum and steps, on a model of the same vocabulary but 1 small layer (the rows the Trainer draws do not depend
on the model's width or depth). The memory model predicts the peak of the widest micro-batch the data can make
(memory_model.widest_batch); a short run of dynamic padding may never draw it, and then peaks under the prediction
by the activations of the tokens it did not draw. Reports written since record this themselves
(`shapes.widest_tokens`); this covers a call that ran before.

    python experiments/speed/drawn_widths.py experiments/speed/results/h100_fullft_probe_call1.jsonl \\
        experiments/speed/results/cpu_fullft_probe_drawn.jsonl
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["model.arch.num_hidden_layers=1", "model.arch.hidden_size=64", "model.arch.intermediate_size=128",
         "model.arch.num_attention_heads=2", "model.arch.num_key_value_heads=1", "model.arch.head_dim=32",
         "precision=fp32", "dataloader.num_workers=0", "dataloader.prefetch_factor=null",
         "dataloader.persistent_workers=false", "measure.predict_memory=false"]


def replay(overrides: list[str]) -> int:
    """The widest micro-batch (tokens) a CPU run with the GPU run's overrides draws."""
    kept = [o for o in overrides if not o.startswith(("model.arch.", "precision="))]
    with tempfile.TemporaryDirectory() as run_dir:
        subprocess.run([sys.executable, "-m", "src.run", *kept, *SMALL, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                       check=True, capture_output=True)
        return json.loads((Path(run_dir) / "report.json").read_text())["shapes"]["widest_tokens"]


def main(reports: str, out: str) -> None:
    rows = [json.loads(line) for line in Path(reports).read_text().splitlines() if line.startswith("{")]
    seen: dict[tuple, int] = {}
    with open(out, "w") as f:
        for r in rows:
            key = tuple(o for o in r["overrides"] if not o.startswith(("model.arch.", "precision=")))
            if key not in seen:
                seen[key] = replay(r["overrides"])
            f.write(json.dumps({"label": r["label"], "call": r["call"], "widest_drawn": seen[key],
                                "widest_predicted": r["memory_predicted_gb"]["widest_tokens"]}) + "\n")
            f.flush()
            print(r["label"], seen[key], r["memory_predicted_gb"]["widest_tokens"])


if __name__ == "__main__":
    main(*sys.argv[1:3])
