"""What does a batch shape met for the first time cost a run? The predictor prices it with a synced reading on its
1-layer copy (speed_model.first_call_s: the first forward and backward at the shape less the second), and in call
10 on an H200 that price (0.144 s) was above what 9 of 11 runs paid (0.08-0.12 s a shape, 0.04-0.07 at micro-batch
32). Most of a first call is host work (cuDNN building its attention graph for the shape). A run does not sync
between micro-batches, so where the GPU is behind, that host work may overlap kernels already queued. In one
process, on a copy of LAYERS layers, this reads 6 new shapes (a shape is new once), the two ways in turn so that
the host's drift within the process falls on both:

  synced    first_call_s's reading, as the predictor takes it
  in_loop   a loop of LOOP micro-batches of the typical batch with the new shape in the middle, unsynced as a run
            is, less the same loop once the shape has been met (its steady cost taken out)

Dynamic padding (the default): a fixed width (max_length) has no new shapes.

    python experiments/planner/new_shape_cost.py OUT.jsonl LAYERS OVERRIDES...
    python experiments/planner/new_shape_cost.py out.jsonl 4 model=qwen3 model.arch.num_hidden_layers=4 batch=32
"""
import json
import sys
import time

from src.data.collate import to_device
from src.model import memory_model as mm
from src.plan import speed_model
from src.plan.predict import new_shape_batches

from typical import setup  # this folder: the script's own directory is on sys.path

LOOP = 9  # micro-batches in a loop: the new shape is the 5th, as deep into the queue as a run's step gets


def in_loop_s(model, batches: list[dict], amp: str, device: str) -> float:
    """`batches` trained back to back as a run launches them, synced only at the ends."""
    speed_model._sync(device)
    t = time.perf_counter()
    for batch in batches:
        model.train()
        speed_model._forward_backward(model, batch, amp, device)
    speed_model._sync(device)
    out = time.perf_counter() - t
    model.zero_grad(set_to_none=True)
    return out


def main(out: str, layers: int, overrides: list[str]) -> None:
    cfg, res, conf, prep, rows, typical = setup(overrides)
    typical_shape = list(typical["input_ids"].shape)
    seen = {tuple(typical_shape)}
    shapes = [to_device(b, res.device) for b in new_shape_batches(rows, prep.collator, seen, count=6)]
    model = mm.build_copy(cfg, res, conf, layers)
    speed_model.warm_up(model, typical, res.amp, res.device)
    in_loop_s(model, [typical] * LOOP, res.amp, res.device)  # the loop itself warm
    readings = []
    for i, batch in enumerate(shapes):
        shape = list(batch["input_ids"].shape)
        if i % 2 == 0:
            (synced,) = speed_model.first_call_s(model, [batch], res.amp, res.device)
            reading = {"shape": shape, "how": "synced", "cost_s": synced}
        else:
            loop = [typical] * (LOOP // 2) + [batch] + [typical] * (LOOP - LOOP // 2 - 1)
            new, met = (in_loop_s(model, loop, res.amp, res.device) for _ in range(2))
            reading = {"shape": shape, "how": "in_loop", "cost_s": new - met}
        readings.append(reading)
        print(f"shape {shape}: {reading['how']} {reading['cost_s'] * 1e3:.1f} ms", flush=True)
    row = {"overrides": overrides, "layers": layers, "batch": cfg.batch.size, "typical_shape": typical_shape,
           "loop": LOOP, "readings": readings}
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
