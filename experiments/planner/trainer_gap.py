"""Where does a run's micro-batch spend the time the predictor's copies don't see? In one process, on one batch:
  copy       the copies' bare loop (speed_model.time_steps) on a copy of the real depth (memory_model.build_copy)
  run_model  the same loop on the model as the run builds it, checkpointing turned on as the Trainer turns it on
  step       the Trainer's own training_step on that model (its _prepare_inputs, compute_loss, backward)
  train      Trainer.train() for a few steps (the dataloader, the callbacks, the optimizer step): wall time per
             micro-batch over its last steps, synced at each step's end
Twice over in alternation, so the host's drift within the process shows beside the differences. No profiler runs
here (a profile slows every later launch: profiler_after.py).

    python experiments/planner/trainer_gap.py OUT.jsonl experiment=batch_vs_accum_saturation batch=8
"""
import json
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import torch
from transformers import TrainerCallback

from src.config.compose import compose
from src.data import prepare
from src.machine import env
from src.model import build as models
from src.model import memory_model as mm
from src.plan import speed_model
from src.plan.predict import typical_batch
from src.train import trainer as train


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class StepClock(TrainerCallback):
    """Each optimizer step's end, synced: an experiment's clock, not a run's."""

    def __init__(self):
        self.ends = []

    def on_step_end(self, args, state, control, **kwargs):
        sync()
        self.ends.append(time.perf_counter())


def main(out: str, overrides: list[str]) -> None:
    cfg = compose([*overrides, "trainer.max_steps=14", "trainer.save_final=false"])
    res = env.setup(cfg)
    conf = models.hf_config(cfg)
    tmp = Path(tempfile.mkdtemp())
    prep = prepare.prepare(cfg, conf, tmp)
    conf.update(prep.for_model)
    rows, _ = typical_batch(cfg, prep)
    batch = prep.collator(rows)
    layers = getattr(conf, mm.layers_key(conf))
    copy = mm.build_copy(cfg, res, conf, layers)
    model = models.build_model(cfg, res, conf)
    clock = StepClock()
    trainer = train.trainer_class(cfg.task.name)(model=model, args=train.training_args(cfg, res, tmp),
                                                 train_dataset=prep.for_trainer, data_collator=prep.collator,
                                                 callbacks=[clock])
    if cfg.trainer.gradient_checkpointing:  # as Trainer.train() turns it on
        trainer.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": cfg.trainer.checkpoint_reentrant})
    trainer.current_gradient_accumulation_steps = 1
    on_device = {k: v.to(res.device) if torch.is_tensor(v) else v for k, v in batch.items()}
    speed_model.warm_up(copy, on_device, res.amp, res.device)
    speed_model.warm_up(trainer.model, on_device, res.amp, res.device)

    def step_loop(n: int = 12) -> float:
        trainer.training_step(trainer.model, dict(batch))  # untimed: the first after the others
        sync()
        t = time.perf_counter()
        for _ in range(n):
            trainer.training_step(trainer.model, dict(batch))
        sync()
        trainer.model.zero_grad(set_to_none=True)
        return (time.perf_counter() - t) / n

    timings = []
    for round_ in range(2):
        row = {"round": round_}
        for name, m in (("copy", copy), ("run_model", trainer.model)):
            row[name] = median(b.micro_batch for b in speed_model.time_steps(m, batch, res.amp, res.device))
        row["step"] = step_loop()
        timings.append(row)
        print(", ".join(f"{k} {v * 1e3:.1f} ms" if k != "round" else f"round {v}" for k, v in row.items()), flush=True)
    del copy
    trainer.train()
    per_step = [b - a for a, b in zip(clock.ends[3:], clock.ends[4:])]  # after 4 steps' warm-up
    trained = median(per_step) / cfg.batch.grad_accum
    print(f"train: {trained * 1e3:.1f} ms a micro-batch ({len(per_step)} steps; "
          f"{min(per_step) * 1e3:.1f}-{max(per_step) * 1e3:.1f} ms a step)", flush=True)
    with open(out, "a") as f:
        f.write(json.dumps({"overrides": overrides, "layers": layers, "rounds": timings, "train_s": trained,
                            "train_steps_s": per_step}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
