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


def _txt_check(path: str, name: str, which: int = 0) -> dict:
    """A check's value in a committed report printout (results/<path>); `which`: the report's place in the file."""
    text = (ROOT / "experiments/seed_loss69/results" / path).read_text()
    return ast.literal_eval(re.findall(rf"{re.escape(name)}: (\{{.*?\}}) \(expected", text)[which])


def _txt_line(path: str, field: str) -> str:
    """A report line's text (`  throughput   ...`), the first in the file."""
    text = (ROOT / "experiments/seed_loss69/results" / path).read_text()
    return re.search(rf"^  {field}\s+(.*)$", text, re.M)[1]


def _reports(path: str, label: str) -> dict:
    import json

    rows = (ROOT / "experiments/seed_loss69/results" / path).read_text().splitlines()
    return next(r for r in map(json.loads, rows) if r.get("label") == label)


def _pre(path: str, label: str, check: str) -> dict:
    return next(c["value"] for c in _reports(path, label)["diagnostics"] if c["check"] == check)


def _default_row(path: str) -> str:
    """The default run's table row (before or after issue 17): step-1 loss, the grad-norm check, the rate."""
    g = _txt_check(path, "train.grad_norm")
    loss = re.match(r"([\d.]+) ->", _txt_line(path, "loss"))[1]
    rate = re.search(r"\| ([\d,]+ \([\d,]+-[\d,]+\)) real tok/s", _txt_line(path, "throughput"))[1]
    return f"{loss}|{g['grad_norm']:.1f}, {g['clipped_fraction']:.1%} clipped|{rate}"


def _head_step() -> str:
    c = _check_json("train.head_step")
    return f"lr x ‖h‖₁ = {c['lr']:.0e} x {c['hidden_l1_norm']:,.0f} = {c['lr'] * c['hidden_l1_norm']:.2f} logits per step".replace("e-05", "e-5")


def _check_json(name: str) -> dict:
    return _pre("h200_qwen3_reports.jsonl", "experiment=seed_loss69,model=qwen3", name)


def _scaled() -> str:
    """The first fix (a head at std 1/‖h‖): its preflight, its first logged loss, and that loss over ln 280."""
    r = _reports("h200_qwen3_reports.jsonl", "experiment=seed_loss69_fixed,model=qwen3")
    c = _pre("h200_qwen3_reports.jsonl", "experiment=seed_loss69_fixed,model=qwen3", "model.initial_loss")
    first = r["loss"]["curve"][0][1]
    return (f"(logits std {c['logits_std']:.2f}): its preflight\nbatch started at {c['loss']:.2f}, but the first logged "
            f"training batch at {first:.2f}, {first / r['loss']['expected_initial'] - 1:.0%} above ln 280")


def _product_rounded() -> str:
    c = _check("model.initial_loss")
    return (f"logits std ≈ {c['head_weight_std'] * c['hidden_norm_at_head']:.0f} = {c['head_weight_std']:.2f} x "
            f"{round(c['hidden_norm_at_head'], -1):,.0f}")


def _warmup() -> str:
    c = _check("train.schedule")
    return (f"{c['warmup_steps']} steps of linear warm-up put the LR at {c['fraction_of_target']:.2%} of target by\n"
            f"  step {c['lr_at_step']}")


def _padding() -> str:
    p = _txt_check("h200_qwen3_default_before.txt", "data.padding_waste")
    return f"(dynamic padding computes {p['dynamic']:.0%} padding, packed {p['packed']:.0%})"


def _still_failing() -> str:
    loss = _txt_check("h200_qwen3_default_after.txt", "model.initial_loss", 0)
    g = _txt_check("h200_qwen3_default_after.txt", "train.grad_norm", 1)
    return f"`model.initial_loss` ({loss['loss']:.1f}), `train.grad_norm` ({g['clipped_fraction']:.1%} clipped)"


def _versions() -> str:
    gpu = _reports("h200_qwen3_reports.jsonl", "experiment=seed_loss69,model=qwen3")["env"]["transformers"]
    cpu = _reports("cpu_tiny_reports.jsonl", "experiment=seed_loss69")["env"]["transformers"]
    return f"(transformers {gpu.rsplit('.', 1)[0]} on the GPU machine, {cpu.rsplit('.', 1)[0]} here)"


CLAIMS += [
    Claim("A freshly initialised classification head (std 0.02",
          lambda: f"A freshly initialised classification head (std {_check('model.initial_loss')['head_weight_std']:.2f}"),
    Claim("std ≈ 0.02 × ‖h‖", lambda: f"std ≈ {_check('model.initial_loss')['head_weight_std']:.2f} × ‖h‖"),
    Claim("lr x ‖h‖₁ = 1e-5 x 46,470 = 0.46 logits per step", _head_step),
    Claim("(logits std 1.02): its preflight\nbatch started at 5.70, but the first logged training batch at 6.61, 17% above ln 280", _scaled),
    Claim("logits std ≈ 23 = 0.02 x 1,150", _product_rounded),
    Claim("700 steps of linear warm-up put the LR at 2.86% of target by\n  step 20", _warmup),
    Claim("(dynamic padding computes 21% padding, packed 1%)", _padding),
    Claim("`model.initial_loss` (51.6), `train.grad_norm` (99.8% clipped)", _still_failing),
    Claim("(transformers 5.17 on the GPU machine, 5.24 here)", _versions),
    Claim("| before | 6.259 (logits std ~1 from the std-0.02 head) | 17.1, 94.2% clipped: **fail** | 7 pass, 1 warn, 1 fail | "
          "12,015 (11,516-12,559) |",
          lambda: (lambda a, b, c: f"| before | {a} (logits std ~1 from the std-0.02 head) | {b}: **fail** | 7 pass, 1 warn, 1 fail | {c} |")(
              *_default_row("h200_qwen3_default_before.txt").split("|"))),
    Claim("| after | 5.625 (ln 280 = 5.635: a zero head) | 12.7, 92.1% clipped: info | 7 pass, 1 warn, 0 fail, 1 info | "
          "12,042 (11,508-12,629) |",
          lambda: (lambda a, b, c: f"| after | {a} (ln 280 = 5.635: a zero head) | {b}: info | 7 pass, 1 warn, 0 fail, 1 info | {c} |")(
              *_default_row("h200_qwen3_default_after.txt").split("|"))),
]
