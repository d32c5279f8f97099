"""What the user-script GPU runs (dropin_gpu.py, dropin_sft_gpu.py, experiments/speedup/scripts.py) share: the
two added lines, the attached report's figures for their JSON line, and a clock of the script's own."""
import json
import time

import torch
from transformers import TrainerCallback


def attach(trainer) -> None:
    """The user's two added lines: `import trainsweep; trainsweep.attach(trainer)`."""
    try:
        import trainsweep
    except ImportError:  # a checkout (the device machine's PYTHONPATH) has the package as `src`
        import src as trainsweep
    trainsweep.attach(trainer)


def report_fields(out: str) -> dict:
    """The attached run's report, as the P/A table reads it."""
    rep = json.load(open(f"{out}/trainsweep/report.json"))
    th = rep["throughput"]
    return {"status": rep["status"], "real_tok_s": th["real_tokens_per_s"],
            "real_tok_s_95": [th.get("real_tokens_per_s_low"), th.get("real_tokens_per_s_high")],
            "mfu": (rep.get("flops") or {}).get("mfu"), "step_s": rep["step_time_s"].get("mean"),
            "timed_steps": rep["step_time_s"]["n"], "loss_initial": rep["loss"]["initial"],
            "padding": rep["config"]["padding"]["strategy"], "bottleneck": rep["verdict"]["bottleneck"],
            "checks": {c["check"]: c["status"] for c in rep["diagnostics"]}}


class ScriptClock(TrainerCallback):
    """The script's own clock, no part of trainsweep: the GPU synced at the end of step `warm` and at the end of
    training. `step` is the last finished step; `training` turns on at the first step (work before it, such as the
    drop-in's checks, runs forwards of its own)."""
    t_warm = t_end = None
    training = False
    step = 0

    def __init__(self, warm: int):
        self.warm = warm

    def on_step_begin(self, args, state, control, **kw):
        self.training = True

    def on_step_end(self, args, state, control, **kw):
        self.step = state.global_step
        if state.global_step == self.warm:
            torch.cuda.synchronize()
            self.t_warm = time.perf_counter()

    def on_train_end(self, args, state, control, **kw):
        torch.cuda.synchronize()
        self.t_end = time.perf_counter()
