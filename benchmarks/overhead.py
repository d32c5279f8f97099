"""What trainsweep's measurement costs on a real training step. Two figures:

1. hooks: host time of our hooks per optimizer step (Measure's five hooks, the token counter, the
   log-window drain, called through src/measure/hooks.py) over many simulated steps on a real batch. Measurement adds no sync, so this host
   time is the most it can add to a step.
2. ab: the same model and batches trained in one warm process (the bare loop, with our hooks called where
   the Trainer calls them), in pairs of short blocks, measurement off and on, on the same batches: the
   paired difference cancels the machine's drift (runner processes at bs 8 on an H100 differed by 8-13%).

    python -m benchmarks.overhead hooks [overrides]       -> JSON: host microseconds per step
    python -m benchmarks.overhead ab PAIRS [overrides]    -> JSON: paired on/off step time difference
"""
import json
import statistics
import sys
import time

import torch

from src.measure.meter import Measure, TokenCounter
from src.measure.hooks import TrainerHooks


def hooks(overrides: list[str], steps: int = 2000) -> dict:
    from src.data import collate, sources
    from src.model import build as models
    from src.config.compose import compose

    cfg = compose(overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    conf = models.hf_config(cfg)
    rows = list(sources.synthetic(cfg, conf, cfg.batch.size, 0))
    batch = {k: v.to(device) for k, v in collate.collator_for(cfg, conf)(rows).items()}
    counter = TokenCounter(cfg.task.name)
    meter_hooks = TrainerHooks(Measure(counter, device, warmup=10, max_steps=steps, profile_steps=0),
                               log_every=cfg.trainer.logging_steps)

    def work():
        for _ in range(cfg.batch.grad_accum):
            counter.add(batch)

    meter_hooks.train_begin()
    t0 = time.perf_counter()
    for _ in range(steps):
        meter_hooks.step(work)
    host = (time.perf_counter() - t0) / steps
    meter_hooks.train_end()
    return {"name": "hook_overhead", "host_us_per_step": host * 1e6, "steps": steps, "device": device,
            "overrides": overrides}


def ab(pairs: int, overrides: list[str], block: int = 4) -> dict:
    from benchmarks.bare_loop import BareLoop

    loop = BareLoop(overrides)
    loop.timed_pass(loop.batches)  # meet every shape first
    counter = TokenCounter(loop.cfg.task.name)
    meter = Measure(counter, loop.res.device, warmup=0, max_steps=10**9, profile_steps=0)
    meter_hooks = TrainerHooks(meter, log_every=loop.cfg.trainer.logging_steps)
    meter_hooks.train_begin()
    pool = loop.batches[loop.warm:]
    off, on = [], []
    for i in range(pairs):
        # Both arms of a pair train on the same batches, back to back, in alternating order: slow drifts of
        # the machine (seen: 0.23 -> 0.36 s/step within one run) fall on both arms alike.
        batches = [pool[(i * block + k) % len(pool)] for k in range(block)]
        for arm in (("off", "on") if i % 2 == 0 else ("on", "off")):
            if arm == "on":
                on.append(loop.timed_pass(batches, hooks=meter_hooks, counter=counter))
            else:
                off.append(loop.timed_pass(batches))
    meter_hooks.train_end()
    assert meter.results()["step_time_s"]["n"] == pairs * block  # the hooks really ran every step
    diffs = [a - b for a, b in zip(on, off)]
    mean_off = statistics.fmean(off)
    return {"name": "overhead_ab", "pairs": pairs, "block_steps": block, "step_s_off": mean_off,
            "step_s_on": statistics.fmean(on), "overhead_fraction": statistics.fmean(diffs) / mean_off,
            "overhead_fraction_stderr": statistics.stdev(diffs) / len(diffs) ** 0.5 / mean_off,
            "block_spread_off": statistics.stdev(off) / mean_off, "overrides": overrides}


def internals(overrides: list[str], repeat: int = 50) -> dict:
    """Host time of what the HF Trainer does to the whole model every step, besides the math: the two
    walks src/train/trainer.py removes (parameter count for total_flos, clipping over every weight) and the two
    that remain (model.train() and model.zero_grad() on every module and parameter)."""
    from src.machine import env
    from src.model import build as models
    from src.config.compose import compose

    cfg = compose(overrides)
    res = env.resolve(cfg)
    model = models.build_model(cfg, res, models.hf_config(cfg))
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    trainable = [p for p in model.parameters() if p.requires_grad]
    walks = {
        "num_parameters_excl_embeddings (removed)": lambda: model.num_parameters(exclude_embeddings=True),
        "clip_grad_norm_over_all_parameters (removed)": lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0),
        "clip_grad_norm_over_trainable (kept)": lambda: torch.nn.utils.clip_grad_norm_(trainable, 1.0),
        "model.train (remains)": lambda: model.train(),
        "model.zero_grad (remains)": lambda: model.zero_grad(set_to_none=False),
    }
    out = {"name": "trainer_internals", "modules": sum(1 for _ in model.modules()),
           "parameters": sum(1 for _ in model.parameters()), "overrides": overrides}
    for name, fn in walks.items():
        fn()
        if res.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        out[name + " ms"] = (time.perf_counter() - t0) / repeat * 1e3  # host time: what a host-bound step pays
    return out


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "hooks":
        print(json.dumps(hooks(rest)), flush=True)
    elif mode == "internals":
        print(json.dumps(internals(rest)), flush=True)
    else:
        print(json.dumps(ab(int(rest[0]), rest[1:])), flush=True)
