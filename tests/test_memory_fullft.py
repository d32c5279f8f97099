"""The memory model's gradients against its activations (memory_model.peak_parts' gradient_overlap), held to the
full fine-tunes measured on an H200 (experiments/speed/results/h200_fullft_memory_call1.jsonl: 8 layers of
Qwen3-4B width, fp32 and bf16, grad_accum 1 and 2) and experiments/scaling's full-depth fp32 run, from the
parts those runs' reports stored. The plain sum they were predicted with was 14% high at grad_accum 1 and 7% low
at 2, and +19% at full depth."""
import json

import pytest

from src.model import memory_model as mm
from tests.conftest import ROOT

GB = 2**30
RUNS = [("experiments/speed/results/h200_fullft_memory_call1.jsonl", label) for label in
        ("fp32_ga1", "fp32_ga2", "bf16_ga1", "bf16_ga2")] + \
       [("experiments/scaling/results/h200x2/scaling_reports.jsonl", "one_gpu_full_ft_fp32")]


def _report(path: str, label: str) -> dict:
    rows = [json.loads(line) for line in (ROOT / path).read_text().splitlines() if line.startswith("{")]
    return next(r for r in rows if r.get("label") == label)


@pytest.mark.parametrize("path, label", RUNS)
def test_full_fine_tunes_are_predicted_within_3_percent_where_the_sum_was_7_to_19_off(path, label):
    r = _report(path, label)
    parts, measured = r["memory_predicted_gb"]["parts"], r["memory_gb"]["peak_allocated"]
    arch, cfg = r["config"]["model"]["arch"], r["config"]
    embedding = arch["vocab_size"] * arch["hidden_size"] * (4 if cfg["precision"]["weights_dtype"] == "float32" else 2)
    fixed = {k: parts[k] * GB for k in ("weights", "grads", "optimizer")}
    new = mm.peak_parts(fixed, parts["activations"] * GB, parts["workspace"] * GB, cfg["batch"]["grad_accum"], embedding)
    old = sum(parts.values())
    assert abs(sum(new.values()) / measured - 1) < 0.03, (label, sum(new.values()), measured)
    assert abs(old / measured - 1) > 0.06  # what the rule fixes
    assert sum(new.values()) == pytest.approx(sum(fixed.values()) / GB + parts["activations"] + parts["workspace"]
                                              + new["gradient_overlap"])


def test_lora_gradients_under_its_activations_only_drop_out_of_the_peak():
    fixed = {"weights": 8 * GB, "grads": 0.06 * GB, "optimizer": 0.12 * GB}
    one = mm.peak_parts(fixed, 30 * GB, 0.06 * GB, grad_accum=1, largest_grad=0.01 * GB)
    assert one["gradient_overlap"] == pytest.approx(-0.06)  # activations cover the step's gradients
    two = mm.peak_parts(fixed, 30 * GB, 0.06 * GB, grad_accum=2, largest_grad=0.01 * GB)
    assert two["gradient_overlap"] == pytest.approx(0.01)  # kept gradients under the next activations, plus the copy
    assert "gradient_overlap" not in mm.peak_parts({"weights_and_state": 8 * GB}, 30 * GB, 0)  # no gradients named
