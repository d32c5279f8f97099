"""Preflight checks: the loss-69 class of bugs, caught before the first step.

Each check is {check, status: pass|warn|fail|info, value, expected, hint}. The cheap ones run at the start of
every run (one forward and backward on the first training batch, arithmetic on lengths and the config);
`mode=diagnose` adds the expensive one (gradient-accumulation equivalence through the real Trainer) and
trains nothing. `info` is a value measured and shown but not judged: a check whose verdict would be about the
random init's scale rather than the weights a fine-tune starts from (random_weights).
"""
from __future__ import annotations

import contextlib

import torch

from ..data.collate import to_device
from .data import data_checks, tokenizer_checks
from .model import model_checks
from .results import result
from .training import device_facts, grad_accum_check, precision_checks, schedule_check


def preflight(cfg, res, model, trainer, collator, train_ds, tokenizer, conf, expensive: bool) -> list[dict]:
    # Eagerly, even under regional compile: the checks' no-grad forwards would compile graphs training never uses.
    stance = torch.compiler.set_stance("force_eager") if hasattr(torch.compiler, "set_stance") else contextlib.nullcontext()
    rows = [train_ds[i] for i in range(min(len(train_ds), cfg.batch.size))]
    groups = [("tokenizer", lambda: tokenizer_checks(tokenizer, conf, train_ds, cfg.task.name, cfg.data.get("layout"))),
              ("data", lambda: data_checks(cfg, train_ds)),
              ("model", lambda: model_checks(cfg, res, model, to_device(collator(rows), res.device), conf)),
              ("train.schedule", lambda: [schedule_check(cfg)]),
              ("precision", lambda: precision_checks(cfg, res, device_facts(res)))]
    if expensive:
        k = max(1, min(cfg.batch.size, 4))
        pairs = [train_ds[i] for i in range(min(len(train_ds), 2 * k))]
        tolerance = 1e-3 if res.amp == "none" else 3e-2
        groups.append(("train.grad_accum", lambda: [grad_accum_check(trainer, model, pairs, collator, res.device, tolerance)]))
    with stance:
        return each(groups)


def each(groups: list) -> list[dict]:
    """Run (name, checks) groups one by one: each stands alone, and one that can't run is listed as such (its
    error the value) while the rest still judge."""
    checks = []
    for name, run in groups:
        try:
            checks += run()
        except Exception as exc:
            checks.append(result(name, "not_run", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                                 "a check that runs", "this check could not run on this setup; the others did"))
    return checks
