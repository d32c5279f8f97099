"""What a whole-model compile keeps per decoder layer with each layer one nested compile region
(trainer.compile_layers_once) or inlined: the bytes autograd saves in one forward of the default small model at
1-6 layers (the memory model's CPU probe; backend aot_eager: inductor's, tried once, came within 0.03 MB). CPU
only: it shows where the region's keeping departs from an inlined layer's (the GPU's peak under the region
departs further: experiments/speed).

    python experiments/speed/region_saved_bytes.py experiments/speed/results/cpu_region_saved_bytes.jsonl
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from src.data import collate  # noqa: E402
from src.machine import env  # noqa: E402
from src.model import build as models, memory_model, speed  # noqa: E402
from src.config.compose import compose  # noqa: E402

SETUP = ("trainer.torch_compile=true", "trainer.compile_scope=model", "trainer.compile_backend=aot_eager",
         "padding=packed", "batch.tokens=512")  # the default model: a small Qwen3 (conf/model/tiny.yaml)


def row(once: bool, layers: int) -> dict:
    cfg = compose([*SETUP, f"model.arch.num_hidden_layers={layers}", f"trainer.compile_layers_once={str(once).lower()}"])
    res, conf = env.resolve(cfg), models.hf_config(cfg)
    lengths = {"max": 100, "min": 40}
    batch = memory_model.widest_batch(cfg, conf, collate.collator_for(cfg, conf, lengths), lengths, "cpu")
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = models.build_model(cfg, res, conf).train()
    if once:
        speed.compile_layers_once(model)
    saved = memory_model._saved_bytes(torch.compile(model, backend="aot_eager"), batch, res.amp, "cpu")["peak"]
    torch._dynamo.reset()
    return {"label": f"{'once' if once else 'inlined'}_l{layers}", "layers": layers, "once": once,
            "saved_mb": saved / 2**20, "torch": torch.__version__}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.write_text("")
    for once in (False, True):
        for layers in range(1, 7):
            r = row(once, layers)
            print(r, flush=True)
            with out.open("a") as f:
                f.write(json.dumps(r) + "\n")
