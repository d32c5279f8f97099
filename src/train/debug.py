"""Deliberate bad habits (the debug group), so what they cost can be measured on a real training step."""
from __future__ import annotations

import os
import time

import torch
from transformers import TrainerCallback


class SlowCollator:
    """Sleeps before collating each batch: a data-bound pipeline on purpose."""

    def __init__(self, collator, delay_ms: float):
        self.collator, self.delay_s = collator, delay_ms / 1e3

    def __call__(self, rows):
        time.sleep(self.delay_s)
        return self.collator(rows)


def wrap_collator(collator, debug_cfg):
    return SlowCollator(collator, debug_cfg.collate_delay_ms) if debug_cfg.collate_delay_ms else collator


class OomFromBatch(TrainerCallback):
    """Emulates a card where micro-batches from `size` up don't fit: the first step raises the same
    torch.OutOfMemoryError a real OOM does, so sweeps' OOM handling is testable on a CPU."""

    def __init__(self, batch_size: int, threshold: int):
        self.fails = threshold and batch_size >= threshold

    def on_step_begin(self, args, state, control, **kw):
        if self.fails:
            raise torch.OutOfMemoryError("CUDA out of memory (debug.oom_from_batch: micro-batch too large)")


class BadHabits(TrainerCallback):
    """What slow training loops do after every step, done here on purpose so their cost shows up in the
    measured step time. trainsweep's own callbacks do none of it (tests/test_debug.py checks)."""

    def __init__(self, dbg):
        self.dbg, self.frame, self.metric = dbg, None, None

    def on_train_begin(self, args, state, control, model=None, **kw):
        self.metric = next((p for p in model.parameters() if p.requires_grad), None)

    def on_step_end(self, args, state, control, **kw):
        if self.dbg.item_sync and self.metric is not None:
            state.debug_metric = self.metric.float().norm().item()  # the kind of "accuracy.item()" a loop logs
        if self.dbg.pandas_concat:
            import pandas as pd

            row = pd.DataFrame([{"step": state.global_step, "epoch": state.epoch, "time": time.time()}])
            self.frame = row if self.frame is None else pd.concat([self.frame, row], ignore_index=True)
        if self.dbg.empty_cache and torch.cuda.is_available():
            torch.cuda.empty_cache()


def crash_if_asked(cfg) -> None:
    """Test hook: a job whose process dies without a word, as a killed or crashed one does."""
    if cfg.debug.crash_from_batch and cfg.batch.size >= cfg.debug.crash_from_batch:
        os._exit(3)


def callbacks(cfg) -> list:
    d = cfg.debug
    out = [OomFromBatch(cfg.batch.size, d.oom_from_batch)] if d.oom_from_batch else []
    return out + ([BadHabits(d)] if d.empty_cache or d.item_sync or d.pandas_concat else [])
