"""Claims on experiments/seed_loss69's files: the preflight's values as its diagnose log printed them."""
from __future__ import annotations

import ast
import re

from experiments.claims import ROOT, Claim

CLAIMS: list = []


def _check(name: str) -> dict:
    """The value a check printed in results/h200_qwen3_diagnose.log (`status  name: {...} (expected ...)`)."""
    log = (ROOT / "experiments/seed_loss69/results/h200_qwen3_diagnose.log").read_text()
    return ast.literal_eval(re.search(rf"{re.escape(name)}: (\{{.*?\}}) \(expected", log)[1])


def _initial() -> str:
    c = _check("model.initial_loss")
    return (f"{c['loss']:.2f} on the first batch; logits std {c['logits_std']:.1f}; head weight std {c['head_weight_std']:.3f}; "
            f"hidden norm at the head {c['hidden_norm_at_head']:,.0f}")


def _grad() -> str:
    c = _check("train.grad_norm")
    return f"{c['grad_norm']:.1f}; {c['clipped_fraction']:.2%} clipped; {c['largest_share_of_norm2']:.0%} of the squared norm"


def _schedule() -> str:
    c = _check("train.schedule")
    return f"LR at step {c['lr_at_step']} = {c['fraction_of_target']:.2%} of target (warm-up {c['warmup_steps']} of {c['max_steps']} steps)"


def _product() -> str:
    c = _check("model.initial_loss")
    return (f"The measured logit std ({c['logits_std']:.1f}) is the product of the head's std and the hidden-state norm "
            f"({c['head_weight_std']:.3f} x {c['hidden_norm_at_head']:,.0f}\n= {c['head_weight_std'] * c['hidden_norm_at_head']:.1f})")


CLAIMS += [
    Claim("50.66 on the first batch; logits std 23.5; head weight std 0.020; hidden norm at the head 1,151", _initial),
    Claim("720.6; 99.86% clipped; 55% of the squared norm", _grad),
    Claim("LR at step 20 = 2.86% of target (warm-up 700 of 200 steps)", _schedule),
    Claim("The measured logit std (23.5) is the product of the head's std and the hidden-state norm (0.020 x 1,151\n= 23.0)", _product),
    Claim("logits std 23.5 = 0.020 x 1,151",
          lambda: (lambda c: f"logits std {c['logits_std']:.1f} = {c['head_weight_std']:.3f} x {c['hidden_norm_at_head']:,.0f}")(
              _check("model.initial_loss"))),
]
