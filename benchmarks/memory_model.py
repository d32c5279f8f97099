"""The memory model against measured peaks: for every finished job of a sweep's reports (JSONL, as
scripts/collect.py writes them), predict the peak from the job's own config and data lengths, and compare
with the peak the job measured.

    python -m benchmarks.memory_model experiments/batch_vs_accum/results/sweep_reports.jsonl

On a machine without the job's GPU the trace runs on the CPU under CPU autocast in the job's resolved
dtypes, and counts only what autograd saves (no backward transients: a lower bound). Weights and optimizer state come from the full model built on the meta device (no memory)."""
import json
import sys

import torch
from omegaconf import OmegaConf

from src.data import collate
from src.machine import env
from src.model import build as models, memory_model
from src.config.compose import compose


def full_model_on_meta(cfg, res, conf):
    meta = OmegaConf.merge(cfg, {"model": {"pretrained": False}})
    with torch.device("meta"):
        return models.build_model(meta, res, conf)


def main(path: str) -> None:
    rows = []
    for line in open(path):
        rep = json.loads(line)
        if rep["status"] != "ok" or "peak_allocated" not in rep.get("memory_gb", {}):
            continue
        # the job's stored config over today's defaults (keys added since it ran take their defaults)
        cfg = OmegaConf.merge(compose(rep["overrides"]), rep["config"])
        res = env.resolve(OmegaConf.merge(cfg, {"device": "cpu"}))
        res.weights_dtype = getattr(torch, rep["resolved"]["weights_dtype"])
        res.amp, res.attention = rep["resolved"]["amp"], rep["resolved"]["attention"]
        conf = models.hf_config(cfg)
        collator = collate.collator_for(cfg, conf, rep["data"]["lengths"])
        batch = memory_model.widest_batch(cfg, conf, collator, rep["data"]["lengths"], "cpu")
        pred = memory_model.predict(cfg, res, conf, full_model_on_meta(cfg, res, conf), batch)
        widest = pred["widest_tokens"]
        measured = rep["memory_gb"]["peak_allocated"]
        rows.append({"job": rep.get("label", "")[:60], "batch": cfg.batch.size, "widest_tokens": widest,
                     "predicted_gb": round(pred["peak_allocated"], 2), "measured_gb": round(measured, 2),
                     "error": round(pred["peak_allocated"] / measured - 1, 4), "device": rep["env"]["device_name"],
                     "parts_gb": {k: round(v, 2) for k, v in pred["parts"].items()}})
        print(json.dumps(rows[-1]), flush=True)
    worst = max(rows, key=lambda r: abs(r["error"]))
    print(f"{len(rows)} jobs; worst error {worst['error']:+.1%} ({worst['job']})")


if __name__ == "__main__":
    main(sys.argv[1])
