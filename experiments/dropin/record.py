"""Run a training script as written, with a clock of its own and nothing of trainsweep's:
    python3 experiments/dropin/record.py SCRIPT [ARGS...]                            # the script as written (P)
    python3 -m src.run speedup -- python3 experiments/dropin/record.py SCRIPT ARGS   # the same, sped up (S)
Every Trainer the script trains gets, around its train(): the GPU synced at the end of step WARM and at the end of
training, and a forward pre-hook adding each training forward's real tokens on the device (attention_mask ones,
or ids other than the pad id in a padding-free batch). One JSON line per Trainer to $RECORD (default: stdout): the
script's own tok/s over steps WARM+1..N, the Trainer's train_runtime, the logged losses, peak memory, and what
speedup did (when the launcher applied it: its lines, its own A/B, the rows a step).

The recorder wraps Trainer.train from outside whatever the launcher wrapped, so the seconds speedup() spends
before training (reading rows, compiling, its A/B) are counted apart: `speedup_s`.
"""
import json
import os
import runpy
import sys
import time
from pathlib import Path

import torch
import transformers
from transformers import TrainerCallback

WARM = int(os.environ.get("RECORD_WARM", "10"))
CUDA = torch.cuda.is_available()  # a CPU dry run (tiny configs) reads the same clock, unsynced


def sync():
    if CUDA:
        torch.cuda.synchronize()


class Clock(TrainerCallback):
    def __init__(self):
        self.step, self.t_warm, self.t_end, self.t_begin = 0, None, None, None

    def on_train_begin(self, args, state, control, **kw):
        self.t_begin = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.step = state.global_step
        if state.global_step == WARM:
            sync()
            self.t_warm = time.perf_counter()

    def on_train_end(self, args, state, control, **kw):
        sync()
        self.t_end = time.perf_counter()


def wrap(train):
    def recorded(self, *args, **kwargs):
        clock, made = Clock(), torch.zeros((), dtype=torch.long, device=self.args.device)
        pad = self.model.config.pad_token_id if self.model.config.pad_token_id is not None else -1

        def count(module, a, kw):
            if module.training and torch.is_grad_enabled() and clock.step >= WARM and clock.t_begin and "input_ids" in kw:
                mask = kw.get("attention_mask")
                made.add_(mask.sum() if mask is not None else (kw["input_ids"] != pad).sum())

        self.add_callback(clock)
        hook = self.model.register_forward_pre_hook(count, with_kwargs=True)
        if CUDA:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        result = train(self, *args, **kwargs)
        hook.remove()
        said = getattr(self, "trainsweep_speedup", None)
        line = {"script": Path(sys.argv[0]).stem, "seed": self.args.seed, "trainer": type(self).__name__, "gpu": torch.cuda.get_device_name() if CUDA else "cpu",
                "mode": "sped" if said else "plain", "wall_s": round(time.perf_counter() - t0, 2),
                "speedup_s": round(clock.t_begin - t0, 2), "train_runtime": result.metrics["train_runtime"],
                "own_clock_tok_s": round(int(made) / (clock.t_end - clock.t_warm), 1) if clock.t_warm else None,
                "rows_per_step": (said.packing["rows_per_step"] if said and said.on("padding-free batches")
                                  else self.args.per_device_train_batch_size * self.args.gradient_accumulation_steps),
                "losses": [e["loss"] for e in self.state.log_history if "loss" in e],
                "peak_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2) if CUDA else None}
        if said:
            line |= {"levers": {lv.name: lv.on for lv in said.levers}, "verified": said.verified, "said": said.text()}
        text = json.dumps(line)
        if os.environ.get("RECORD"):
            with open(os.environ["RECORD"], "a") as f:
                f.write(text + "\n")
        else:
            print(text, flush=True)
        return result
    return recorded


transformers.Trainer.train = wrap(transformers.Trainer.train)
script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path.insert(0, str(Path(script).resolve().parent))
runpy.run_path(script, run_name="__main__")
