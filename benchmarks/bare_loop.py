"""The independent reference for the runner's numbers: a bare PyTorch loop (no Trainer, no callbacks)
over the same model build and the batches the runner's own Trainer dataloader yields (same data set,
sampler, seed and collator). Two passes over those batches: the first meets each batch shape for the
first time (as a fresh runner does), the second is warm. Prints one JSON line.

    python benchmarks/bare_loop.py model=qwen3 batch=8 trainer.max_steps=40 measure.warmup_steps=10
"""
import json
import sys
import time
from pathlib import Path

import torch

from src import data, env, models, train
from src.config import compose


def main(overrides: list[str]) -> dict:
    cfg = compose(overrides)
    res = env.resolve(cfg)
    env.set_allocator(cfg.env.alloc_conf)
    env.apply(cfg)
    conf = models.hf_config(cfg)
    train_ds, _ = data.build_datasets(cfg, conf)
    model = models.build_model(cfg, res, conf)
    trainer = train.trainer_class(cfg.task.name)(
        model=model, args=train.training_args(cfg, res, Path("/tmp/bare_loop")), train_dataset=train_ds,
        data_collator=data.build_collator(cfg, conf.pad_token_id))
    ga, steps, warm = cfg.batch.grad_accum, cfg.trainer.max_steps, cfg.measure.warmup_steps
    it = iter(trainer.get_train_dataloader())
    batches = [[{k: v.to(res.device) for k, v in next(it).items()} for _ in range(ga)] for _ in range(steps)]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.trainer.lr, fused=res.device == "cuda")
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(res.amp)
    sync = torch.cuda.synchronize if res.device == "cuda" else (lambda: None)
    model.train()

    def step(micro):
        for b in micro:
            with torch.autocast(res.device, dtype=amp or torch.float32, enabled=amp is not None):
                loss = model(**b).loss / ga
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.trainer.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def timed_pass() -> float:
        for micro in batches[:warm]:
            step(micro)
        sync()
        t0 = time.perf_counter()
        for micro in batches[warm:]:
            step(micro)
        sync()
        return (time.perf_counter() - t0) / (steps - warm)

    if res.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    cold, warm_s = timed_pass(), timed_pass()
    real = sum(int(b["attention_mask"].sum()) for micro in batches[warm:] for b in micro) / (steps - warm)
    out = {"name": "bare_loop", "overrides": overrides, "step_s_cold": cold, "step_s_warm": warm_s,
           "real_tokens_per_s_cold": real / cold, "real_tokens_per_s_warm": real / warm_s,
           "distinct_shapes": len({tuple(b["input_ids"].shape) for micro in batches for b in micro})}
    if res.device == "cuda":
        out.update(peak_allocated_gb=torch.cuda.max_memory_allocated() / 2**30,
                   device=torch.cuda.get_device_name())
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
