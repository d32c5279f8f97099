"""Do the copies predict the real depth's micro-batch? The copies are timed as the predictor times them
(src/plan/speed_model.py), and a copy of the real depth is timed the same way in the same bare loop: what each
way of reading the copies predicts at the real depth against what that copy measures. The bare loop leaves the
Trainer out, so this checks the depth scaling alone. Three readings, per cell:
  line_1_2   the cell's own line through the 1- and 2-layer copies (the predictor before 2026-11-28)
  own        the cell's own line through the speed copies (speed_model.copy_depths: 2 and 4 layers, 4 and 8
             for a model of 16 layers or more)
  predicted  what the predictor takes now: on the speed copies, the longer of the family's pooled host line and
             the cell's kernels' line where the cell is host-bound (speed_model.at_depth with host and gpu)
  lines      both readings (own, predicted) on each pair of copies the model is deep enough for: 2-4 and 4-8
Each copy also times the first call of 3 batch shapes it has not met (src/plan/speed_model.first_call_s): the
predictor takes that cost to be the same at any depth, and this shows whether it is. Kernels are profiled after
every depth is timed (a profile slows every later launch: profiler_after.py); the checks before call 9's third
profiled each cell right after timing it.

    python experiments/planner/copies_check.py OUT.jsonl padding=dynamic batch=4,8,16,32 model=qwen3 model.arch.num_hidden_layers=8
    python experiments/planner/copies_check.py OUT.jsonl experiment=batch_vs_accum_saturation batch=8,16  # 28 layers
"""
import json
import sys
import tempfile
from pathlib import Path
from statistics import median

from src.config.compose import compose
from src.data import prepare
from src.data.collate import to_device
from src.machine import env
from src.model import build as models
from src.model import memory_model as mm
from src.plan import speed_model
from src.plan.predict import new_shape_batches, typical_batch


def prep_batch(prep, rows: list, device: str) -> dict:
    return to_device(prep.collator(rows), device)


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
    speed_depths = speed_model.copy_depths(layers)
    batches = [typical_batch(cfg, prep) for cfg, prep in zip(cfgs, preps)]
    timed, gpu, first_calls, seen = {}, {}, {}, set()
    pairs = [(a, b) for a, b in ((2, 4), (4, 8)) if b <= layers]
    depths = sorted({1, 2, *speed_depths, *(n for pair in pairs for n in pair), layers})
    for n in depths:  # every depth timed before any kernel is profiled, as the predictor does (src/plan/predict.py)
        model = mm.build_copy(cfgs[0], res, conf, n)
        speed_model.warm_up(model, prep_batch(preps[0], batches[0][0], res.device), res.amp, res.device)
        for b, prep, (rows, real) in zip(sizes, preps, batches):
            batch = prep_batch(prep, rows, res.device)
            seen.add(tuple(batch["input_ids"].shape))
            timed[n, b] = speed_model.time_steps(model, batch, res.amp, res.device)
            new = [to_device(x, res.device) for x in new_shape_batches(rows, prep.collator, seen)]
            first_calls[n, b] = speed_model.first_call_s(model, new, res.amp, res.device)
        del model
    for n in depths:
        model = mm.build_copy(cfgs[0], res, conf, n)
        speed_model.warm_up(model, prep_batch(preps[0], batches[0][0], res.device), res.amp, res.device)
        for b, prep, (rows, real) in zip(sizes, preps, batches):
            gpu[n, b] = speed_model.gpu_busy_s(model, prep_batch(prep, rows, res.device), res.amp, res.device)
            wall = median(x.micro_batch for x in timed[n, b])
            print(f"{n} layers, micro-batch {b}: {wall * 1e3:.1f} ms a micro-batch, kernels "
                  f"{(gpu[n, b] or 0) * 1e3:.1f} ms; a new shape's first call "
                  f"{[round(x * 1e3, 1) for x in first_calls[n, b]]} ms", flush=True)
        del model
    host = {n: speed_model.host_time([(timed[n, b], gpu[n, b]) for b in sizes]) for n in depths}
    shallow, deep = speed_depths
    with open(out, "a") as f:
        for b, (rows, real) in zip(sizes, batches):
            line_1_2 = speed_model.at_depth(timed[1, b], timed[2, b], layers, 1)
            own = speed_model.at_depth(timed[shallow, b], timed[deep, b], layers, 1, depths=speed_depths)
            pred = speed_model.at_depth(timed[shallow, b], timed[deep, b], layers, 1, host=(host[shallow], host[deep]),
                                        gpu=(gpu[shallow, b], gpu[deep, b]), depths=speed_depths)
            lines = {f"{x}-{y}": {
                "own_s": speed_model.at_depth(timed[x, b], timed[y, b], layers, 1, depths=(x, y)).step_s,
                "predicted_s": speed_model.at_depth(timed[x, b], timed[y, b], layers, 1, host=(host[x], host[y]),
                                                    gpu=(gpu[x, b], gpu[y, b]), depths=(x, y)).step_s}
                for x, y in pairs}
            meas = speed_model.at_depth(timed[layers, b], timed[layers, b], layers, 1, depths=(layers, layers))
            row = {"overrides": rest, "batch": int(b), "real_tokens": real, "layers": layers, "speed_depths": speed_depths,
                   "line_1_2_s": line_1_2.step_s, "own_s": own.step_s, "predicted_s": pred.step_s, "low": pred.low,
                   "high": pred.high, "bound": pred.bound, "measured_s": meas.step_s, "measured_low": meas.low,
                   "measured_high": meas.high, "blocks": {n: [vars(x) for x in timed[n, b]] for n in depths},
                   "gpu_s": {n: gpu[n, b] for n in depths}, "first_call_s": {n: first_calls[n, b] for n in depths},
                   "host_s": {n: vars(h) if h else None for n, h in host.items()}, "lines": lines}
            f.write(json.dumps(row) + "\n")
            print(b, f"at {layers} layers: predicted {pred.step_s * 1e3:.1f} ms ({pred.low * 1e3:.1f}-"
                  f"{pred.high * 1e3:.1f}, {pred.bound}), its own line {own.step_s * 1e3:.1f}, the 1-2 line "
                  f"{line_1_2.step_s * 1e3:.1f}; "
                  + ", ".join(f"{k} line {v['own_s'] * 1e3:.1f}, pooled {v['predicted_s'] * 1e3:.1f}" for k, v in lines.items())
                  + f"; measured {meas.step_s * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
