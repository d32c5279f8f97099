"""The independent reference for the runner's numbers: a bare PyTorch loop (no Trainer, no callbacks)
over the same model build and the batches the runner's own Trainer dataloader yields (same data set,
sampler, seed and collator). Two passes over those batches: the first meets each batch shape for the
first time (as a fresh runner does), the second is warm. Prints one JSON line.

    python -m benchmarks.bare_loop model=qwen3 batch=8 trainer.max_steps=40 measure.warmup_steps=10
"""
import json
import sys
import time
from pathlib import Path

import torch

from src.data import collate, prepare
from src.machine import env
from src.model import build as models
from src.train import trainer as train
from src.config.compose import compose
from src.measure.hooks import TrainerHooks


class BareLoop:
    """Model, optimizer and the runner's batches, preloaded on the device; `step` is one optimizer step.
    `hooks` (a TrainerHooks around a Measure, whose TokenCounter is `counter`) are called where the Trainer
    would call them."""

    def __init__(self, overrides: list[str]):
        cfg = self.cfg = compose(overrides)
        res = self.res = env.resolve(cfg)
        env.set_allocator(cfg.env.alloc_conf)
        env.apply(cfg)
        conf = models.hf_config(cfg)
        train_ds, _, _ = prepare.rows(cfg, conf)
        self.model = models.build_model(cfg, res, conf)
        trainer = train.trainer_class(cfg.task.name)(
            model=self.model, args=train.training_args(cfg, res, Path("/tmp/bare_loop")), train_dataset=train_ds,
            data_collator=collate.collator_for(cfg, conf))
        self.ga, self.steps, self.warm = cfg.batch.grad_accum, cfg.trainer.max_steps, cfg.measure.warmup_steps
        it = iter(trainer.get_train_dataloader())
        self.batches = [[{k: v.to(res.device) for k, v in next(it).items()} for _ in range(self.ga)]
                        for _ in range(self.steps)]
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=cfg.trainer.lr, fused=res.device == "cuda")
        self.amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(res.amp)
        self.model.train()
        self.no_hooks = TrainerHooks()

    def sync(self):
        if self.res.device == "cuda":
            torch.cuda.synchronize()

    def step(self, micro, hooks: TrainerHooks | None = None, counter=None):
        def forward_backward():
            for b in micro:
                if counter:
                    counter.add(b)
                with torch.autocast(self.res.device, dtype=self.amp or torch.float32, enabled=self.amp is not None):
                    loss = self.model(**b).loss / self.ga
                loss.backward()
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.trainer.max_grad_norm)

        # Both arms of benchmarks/overhead.py's A/B run this same code; only the hooks differ.
        (hooks or self.no_hooks).step(forward_backward, self.opt.step, lambda: self.opt.zero_grad(set_to_none=True))

    def timed_pass(self, batches=None, **hooks) -> float:
        """Seconds per step over `batches` (default: the steps after warm-up)."""
        batches = self.batches[self.warm:] if batches is None else batches
        self.sync()
        t0 = time.perf_counter()
        for micro in batches:
            self.step(micro, **hooks)
        self.sync()
        return (time.perf_counter() - t0) / len(batches)

    def real_tokens_per_step(self) -> float:
        return sum(int(b["attention_mask"].sum()) for micro in self.batches[self.warm:] for b in micro) / (self.steps - self.warm)


def main(overrides: list[str]) -> dict:
    loop = BareLoop(overrides)
    if loop.res.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    passes = []
    for _ in range(2):  # cold: first sight of each shape, as a fresh runner; then warm
        loop.timed_pass(loop.batches[:loop.warm])
        passes.append(loop.timed_pass())
    real = loop.real_tokens_per_step()
    out = {"name": "bare_loop", "overrides": overrides, "step_s_cold": passes[0], "step_s_warm": passes[1],
           "real_tokens_per_s_cold": real / passes[0], "real_tokens_per_s_warm": real / passes[1],
           "distinct_shapes": len({tuple(b["input_ids"].shape) for micro in loop.batches for b in micro})}
    if loop.res.device == "cuda":
        out.update(peak_allocated_gb=torch.cuda.max_memory_allocated() / 2**30, device=torch.cuda.get_device_name())
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
