"""Deliberate bad habits (the debug group), so what they cost can be measured on a real training step."""
from __future__ import annotations

import time


class SlowCollator:
    """Sleeps before collating each batch: a data-bound pipeline on purpose."""

    def __init__(self, collator, delay_ms: float):
        self.collator, self.delay_s = collator, delay_ms / 1e3

    def __call__(self, rows):
        time.sleep(self.delay_s)
        return self.collator(rows)


def wrap_collator(collator, debug_cfg):
    return SlowCollator(collator, debug_cfg.collate_delay_ms) if debug_cfg.collate_delay_ms else collator
