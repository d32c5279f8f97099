"""The memory model's gradients against its activations (memory_model.peak_parts' gradient_overlap), held to the
full fine-tunes measured on an H200, from the parts those runs' reports stored:
- experiments/speed/results/h200_fullft_memory_call1.jsonl: 8 layers of Qwen3-4B width, fp32 and bf16, grad_accum
  1 and 2, where the plain sum was 14% high at grad_accum 1 and 7% low at 2;
- h200_fullft_check_call3.jsonl: 4, 12 and 16 layers, batches 4-16, grad_accum 1-4, where the first rule (the
  larger of the activations and the gradients with one largest gradient, at grad_accum 1) was 5.1% low and 12.1%
  high; the rule now was read off both calls' rows, so these are not held-out checks;
- experiments/scaling's full-depth fp32 run."""
import json

import pytest

from src.model import memory_model as mm
from tests.conftest import ROOT

GB = 2**30
SPEED = "experiments/speed/results/"
FIRST = [(SPEED + "h200_fullft_memory_call1.jsonl", label) for label in ("fp32_ga1", "fp32_ga2", "bf16_ga1", "bf16_ga2")] + \
        [("experiments/scaling/results/h200x2/scaling_reports.jsonl", "one_gpu_full_ft_fp32")]
CHECK = [(SPEED + "h200_fullft_check_call3.jsonl", label) for label in
         ("ft12_bf16_ga1", "ft12_bf16_ga4", "ft12_fp32_ga1", "ft12_fp32_ga3", "ft16_bf16_bs16_ga1", "ft16_bf16_bs16_ga2",
          "ft4_fp32_bs4_ga1", "ft4_fp32_bs4_ga2")]


def _report(path: str, label: str) -> dict:
    rows = [json.loads(line) for line in (ROOT / path).read_text().splitlines() if line.startswith("{")]
    return next(r for r in rows if r.get("label") == label)


def _predicted_now(r: dict) -> tuple[dict, dict]:
    """(today's parts from the run's stored ones, the stored ones)."""
    parts, cfg = r["memory_predicted_gb"]["parts"], r["config"]
    arch = cfg["model"]["arch"]
    embedding = arch["vocab_size"] * arch["hidden_size"] * (4 if cfg["precision"]["weights_dtype"] == "float32" else 2)
    fixed = {k: parts[k] * GB for k in ("weights", "grads", "optimizer")}
    return mm.peak_parts(fixed, parts["activations"] * GB, parts["workspace"] * GB, cfg["batch"]["grad_accum"],
                         embedding), parts


@pytest.mark.parametrize("path, label", FIRST + CHECK)
def test_full_fine_tunes_are_predicted_within_2_5_percent(path, label):
    r = _report(path, label)
    new, parts = _predicted_now(r)
    measured = r["memory_gb"]["peak_allocated"]
    assert abs(sum(new.values()) / measured - 1) < 0.025, (label, sum(new.values()), measured)
    assert sum(new.values()) == pytest.approx(parts["weights"] + parts["grads"] + parts["optimizer"]
                                              + parts["activations"] + parts["workspace"] + new["gradient_overlap"])


@pytest.mark.parametrize("path, label", FIRST)
def test_the_plain_sum_was_7_to_19_percent_off_there(path, label):
    r = _report(path, label)
    plain = sum(v for k, v in r["memory_predicted_gb"]["parts"].items() if k != "gradient_overlap")
    assert abs(plain / r["memory_gb"]["peak_allocated"] - 1) > 0.06


def test_a_short_batch_peaks_at_the_optimizer_step_with_every_gradient():
    fixed = {"weights": 3 * GB, "grads": 3 * GB, "optimizer": 6 * GB}
    parts = mm.peak_parts(fixed, 0.02 * GB, 0.06 * GB, grad_accum=1, largest_grad=1.4 * GB)
    assert sum(parts.values()) == pytest.approx(12.06)  # weights, grads, moments, workspace: no activation term


def test_lora_gradients_under_its_activations_add_only_the_largest():
    fixed = {"weights": 8 * GB, "grads": 0.06 * GB, "optimizer": 0.12 * GB}
    one = mm.peak_parts(fixed, 30 * GB, 0.06 * GB, grad_accum=1, largest_grad=0.01 * GB)
    assert one["gradient_overlap"] == pytest.approx(-0.05)  # activations plus the largest: the rest of the gradients off
    two = mm.peak_parts(fixed, 30 * GB, 0.06 * GB, grad_accum=2, largest_grad=0.01 * GB)
    assert two["gradient_overlap"] == pytest.approx(0.01)  # kept gradients under the next activations, plus the copy
    assert "gradient_overlap" not in mm.peak_parts({"weights_and_state": 8 * GB}, 30 * GB, 0)  # no gradients named
