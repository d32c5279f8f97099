"""Do the 1- and 2-layer copies predict the real depth's micro-batch? The copies are timed as the predictor
times them (src/model/speed_model.py), and a copy of the real depth is timed the same way in the same bare
loop: what the line through the copies predicts at the real depth against what it measures there. The bare
loop leaves the Trainer out, so this checks the depth scaling alone. Each copy also times the first call of 3
batch shapes it has not met (src/model/speed_model.first_call_s): the predictor takes that cost to be the same at
any depth, and this shows whether it is.

    python experiments/planner/copies_check.py OUT.jsonl padding=dynamic batch=4,8,16,32 model=qwen3 model.arch.num_hidden_layers=4
"""
import json
import sys
import tempfile
from pathlib import Path

from src.config.compose import compose
from src.data import prepare
from src.data.collate import to_device
from src.machine import env
from src.model import build as models
from src.model import memory_model as mm
from src.model import speed_model
from src.predict import new_shape_batches, typical_batch


def main(out: str, overrides: list[str]) -> None:
    sizes = next(o for o in overrides if o.startswith("batch=")).split("=")[1].split(",")
    rest = [o for o in overrides if not o.startswith("batch=")]
    cfgs = [compose([*rest, f"batch={b}"]) for b in sizes]
    res = env.setup(cfgs[0])
    conf = models.hf_config(cfgs[0])
    with tempfile.TemporaryDirectory() as tmp:  # labels.json lands here
        preps = [prepare.prepare(cfg, conf, Path(tmp)) for cfg in cfgs]
    conf.update(preps[0].for_model)
    layers = getattr(conf, mm.layers_key(conf))
    batches = [typical_batch(cfg, prep) for cfg, prep in zip(cfgs, preps)]
    timed, first_calls, seen = {}, {}, set()
    for n in (1, 2, layers):
        model = mm.build_copy(cfgs[0], res, conf, n)
        for b, cfg, prep, (rows, real) in zip(sizes, cfgs, preps, batches):
            batch = prep.collator(rows)
            seen.add(tuple(batch["input_ids"].shape))
            timed[n, b] = speed_model.time_steps(model, to_device(batch, res.device), res.amp, res.device)
            new = [to_device(x, res.device) for x in new_shape_batches(rows, prep.collator, seen)]
            first_calls[n, b] = speed_model.first_call_s(model, new, res.amp, res.device)
            print(f"{n} layers, micro-batch {b}: a new shape's first call {[round(x * 1e3, 1) for x in first_calls[n, b]]} ms",
                  flush=True)
        del model
    with open(out, "a") as f:
        for b, (rows, real) in zip(sizes, batches):
            pred = speed_model.at_depth(timed[1, b], timed[2, b], layers, 1)
            meas = speed_model.at_depth(timed[layers, b], timed[layers, b], layers, 1)  # the real depth's own line
            row = {"overrides": rest, "batch": int(b), "real_tokens": real, "layers": layers, "predicted_s": pred.step_s,
                   "low": pred.low, "high": pred.high, "measured_s": meas.step_s, "measured_low": meas.low,
                   "measured_high": meas.high, "blocks": {n: [vars(x) for x in timed[n, b]] for n in (1, 2, layers)},
                   "first_call_s": {n: first_calls[n, b] for n in (1, 2, layers)}}
            f.write(json.dumps(row) + "\n")
            print(b, f"predicted {pred.step_s * 1e3:.1f} ms ({pred.low * 1e3:.1f}-{pred.high * 1e3:.1f}), measured "
                  f"{meas.step_s * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
