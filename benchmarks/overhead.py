"""What trainsweep's measurement costs. Two figures:

1. Host cost of our hooks per optimizer step (Measure's five hooks, the token counter, a log-window drain),
   timed in isolation over many simulated steps on a real batch: measurement adds no sync, so this host
   time is the most it can add to a step.
2. End to end: the same config trained with measurement on and off (`measure.enabled`), each in its own
   process, alternating A/B, comparing the Trainer's train time.

    python benchmarks/overhead.py hooks [overrides]     -> JSON: host microseconds per step
    python benchmarks/overhead.py ab N [overrides]       -> JSON: N pairs of train times
"""
import json
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import torch


def hooks(overrides: list[str], steps: int = 2000) -> dict:
    from src import data, models
    from src.config import compose
    from src.measure import Measure, TokenCounter

    cfg = compose(overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    conf = models.hf_config(cfg)
    rows = [r for r in data.synthetic(cfg, conf, cfg.batch.size, 0)]
    batch = {k: v.to(device) for k, v in data.build_collator(cfg, conf.pad_token_id)(rows).items()}
    counter = TokenCounter(cfg.task.name)
    meter = Measure(counter, device, warmup=10, max_steps=steps, profile_steps=0)
    state = SimpleNamespace(global_step=0)
    meter.on_train_begin(None, state, None)
    t0 = time.perf_counter()
    for i in range(1, steps + 1):
        meter.on_step_begin(None, state, None)
        for _ in range(cfg.batch.grad_accum):
            counter.add(batch)
        meter.on_pre_optimizer_step(None, state, None)
        meter.on_optimizer_step(None, state, None)
        state.global_step = i
        meter.on_step_end(None, state, None)
        if i % cfg.trainer.logging_steps == 0:
            meter.on_log(None, state, None)
    host = (time.perf_counter() - t0) / steps
    meter.on_train_end(None, state, None)
    return {"name": "hook_overhead", "host_us_per_step": host * 1e6, "steps": steps, "device": device,
            "overrides": overrides}


def ab(pairs: int, overrides: list[str]) -> dict:
    times = {"on": [], "off": []}
    for _ in range(pairs):
        for mode in ("on", "off"):
            with tempfile.TemporaryDirectory() as out:
                args = [sys.executable, "-m", "src.run", *overrides, f"measure.enabled={mode == 'on'}",
                        "measure.profile_steps=0", f"hydra.run.dir={out}"]
                subprocess.run(args, check=True, capture_output=True)
                times[mode].append(json.load(open(f"{out}/report.json"))["timing_s"]["train"])
    on, off = sum(times["on"]) / pairs, sum(times["off"]) / pairs
    return {"name": "overhead_ab", "train_s_on": times["on"], "train_s_off": times["off"],
            "overhead_fraction": on / off - 1, "overrides": overrides}


if __name__ == "__main__":
    if sys.argv[1] == "hooks":
        print(json.dumps(hooks(sys.argv[2:])), flush=True)
    else:
        print(json.dumps(ab(int(sys.argv[2]), sys.argv[3:])), flush=True)
