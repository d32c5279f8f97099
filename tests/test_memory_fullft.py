"""The memory model's gradients beside its activations (memory_model.peak_parts' gradient_overlap), held to the full
fine-tunes H100s ran with today's copies, from the figures each report stored:
- experiments/speed/results/h100_fullft_probe_call1.jsonl: 3-36 layers, fp32 and bf16, grad_accum 1-4, a classifier
  and a causal LM with its tied embedding, dynamic batches for 6 steps; the widest each drew is replayed on the CPU
  (cpu_fullft_probe_drawn.jsonl, experiments/speed/drawn_widths.py);
- h100_fullft_fixed_call1.jsonl: held out, the rule unchanged, every micro-batch the widest (padding=max_length)."""
import json

import pytest

from src.model import memory_model as mm
from tests.conftest import ROOT

GB = 2**30
PROBE = ROOT / "experiments/speed/results/h100_fullft_probe_call1.jsonl"
FIXED = ROOT / "experiments/speed/results/h100_fullft_fixed_call1.jsonl"  # held out, every micro-batch the widest
DRAWN = ROOT / "experiments/speed/results/cpu_fullft_probe_drawn.jsonl"
REST = [ROOT / f"experiments/speed/results/h100_g4rest_call{i}.jsonl" for i in (1, 2)]  # fullft_fixed's other rows


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


ROWS = {r["label"]: r for r in _rows(PROBE)}
DRAWN_WIDTH = {r["label"]: r["widest_drawn"] for r in _rows(DRAWN)}


def _predicted(r: dict, tokens: int | None = None) -> float:
    """Today's rule on a run's stored figures, its activations scaled to `tokens` (default: the widest)."""
    from experiments.speed.tables_memory_fullft import rule_on

    return rule_on(r, tokens)


@pytest.mark.parametrize("label", sorted(ROWS))
def test_the_stored_figures_give_the_prediction_the_run_made(label):
    r = ROWS[label]
    assert _predicted(r) == pytest.approx(r["memory_predicted_gb"]["peak_allocated"], rel=1e-9)


@pytest.mark.parametrize("label", sorted(ROWS))
def test_full_fine_tunes_are_predicted_within_2_percent_of_the_batch_they_drew(label):
    r, measured = ROWS[label], ROWS[label]["memory_gb"]["peak_allocated"]
    drawn, widest = DRAWN_WIDTH[label], r["memory_predicted_gb"]["widest_tokens"]
    assert abs(_predicted(r, drawn) / measured - 1) < 0.02, (label, _predicted(r, drawn), measured)
    error = r["memory_predicted_gb"]["peak_allocated"] / measured - 1
    if drawn == widest:  # the run met the batch the prediction is for
        assert abs(error) < 0.02, (label, error)
    else:  # a prediction for a wider batch than the run drew: high, never more than 1% low
        assert error > -0.01, (label, error)


@pytest.mark.parametrize("r", _rows(FIXED) + [r for f in REST for r in _rows(f) if r["config"]["peft"]["method"] == "none"],
                         ids=lambda r: f"{r['call']}-{r['label']}")
def test_held_out_full_fine_tunes_at_one_width_are_predicted_within_2_percent(r):
    """The rule unchanged, at shapes neither call had run, every micro-batch the one the prediction is for (the
    report's own widest_tokens says the run drew it)."""
    measured, p = r["memory_gb"]["peak_allocated"], r["memory_predicted_gb"]
    assert r["shapes"]["widest_tokens"] == p["widest_tokens"]
    assert _predicted(r) == pytest.approx(p["peak_allocated"], rel=1e-9)
    assert abs(p["peak_allocated"] / measured - 1) < 0.02, (r["label"], p["peak_allocated"], measured)


def test_the_widest_batch_explains_the_misses_the_6_step_runs_show():
    """At grad_accum 1 the 6-step runs of bs 8 drew 264-token rows (2,112 tokens) of data up to 288: predicted for
    the widest, 2.4-3.1% high; at the width they drew, within 0.2%."""
    for label in ("ft6_fp32_ga1", "ft8_bf16_ga1", "ft12_fp32_ga1"):
        r, measured = ROWS[label], ROWS[label]["memory_gb"]["peak_allocated"]
        assert DRAWN_WIDTH[label] == 2112 < r["memory_predicted_gb"]["widest_tokens"] == 2304
        assert 0.02 < r["memory_predicted_gb"]["peak_allocated"] / measured - 1 < 0.035
        assert abs(_predicted(r, 2112) / measured - 1) < 0.003


def test_a_short_batch_peaks_at_the_optimizer_step_with_every_gradient():
    fixed = {"weights": 3 * GB, "grads": 3 * GB, "optimizer": 6 * GB}
    parts = mm.peak_parts(fixed, 0.02 * GB, 0.06 * GB, grad_accum=1, first_grads=0.4 * GB, largest_grad=1.4 * GB)
    assert sum(parts.values()) == pytest.approx(12.06)  # weights, grads, moments, workspace: no activation term


def test_a_long_batch_peaks_at_the_backwards_start_with_the_gradients_made_by_then():
    fixed = {"weights": 3 * GB, "grads": 3 * GB, "optimizer": 6 * GB}
    parts = mm.peak_parts(fixed, 5 * GB, 0, grad_accum=1, first_grads=0.4 * GB, largest_grad=1.4 * GB)
    assert parts["gradient_overlap"] == pytest.approx(0.4 - 3)  # activations + the head's and last layer's gradients
    assert sum(parts.values()) == pytest.approx(3 + 6 + 5.4)


def test_a_tied_embeddings_two_halves_count_at_the_backwards_end():
    """A causal LM's tied embedding: the head's half of its gradient waits for the embedding's, both alive at the
    end of the backward (the copies' after_last_layer); with few activations that end is the peak."""
    fixed = {"weights": 3.7 * GB, "grads": 3.7 * GB, "optimizer": 7.4 * GB}
    tied = mm.peak_parts(fixed, 1 * GB, 0, grad_accum=1, first_grads=0.4 * GB, largest_grad=1.45 * GB,
                         after_last_layer=1.45 * GB)
    assert sum(tied.values()) == pytest.approx(3.7 + 7.4 + 3.7 + 1.45)
    untied = mm.peak_parts(fixed, 1 * GB, 0, grad_accum=1, first_grads=0.4 * GB, largest_grad=1.45 * GB)
    assert sum(untied.values()) == pytest.approx(3.7 + 7.4 + 3.7)


def test_accumulation_keeps_the_gradients_under_the_next_activations_or_the_largest_new_one():
    fixed = {"weights": 3 * GB, "grads": 3 * GB, "optimizer": 6 * GB}
    long = mm.peak_parts(fixed, 5 * GB, 0, grad_accum=2, first_grads=0.4 * GB, largest_grad=1.4 * GB)
    assert long["gradient_overlap"] == pytest.approx(0)  # every gradient + the activations
    short = mm.peak_parts(fixed, 0.1 * GB, 0, grad_accum=2, first_grads=0.4 * GB, largest_grad=1.4 * GB)
    assert sum(short.values()) == pytest.approx(3 + 6 + 3 + 1.4)  # the embedding's new gradient before it is added


def test_lora_gradients_under_its_activations_add_only_those_made_first():
    fixed = {"weights": 8 * GB, "grads": 0.06 * GB, "optimizer": 0.12 * GB}
    one = mm.peak_parts(fixed, 30 * GB, 0.06 * GB, grad_accum=1, first_grads=0.01 * GB, largest_grad=0.01 * GB)
    assert one["gradient_overlap"] == pytest.approx(-0.05)  # the rest of the gradients come after the peak
    assert "gradient_overlap" not in mm.peak_parts({"weights_and_state": 8 * GB}, 30 * GB, 0)  # no gradients named


def test_the_lora_controls_excess_is_the_probes_kept_layer_input():
    """Under the copies' fix the eager LoRA and QLoRA runs came out 2.6% and 2.9% high (one H100): by one
    [tokens, hidden] bf16 tensor a layer past the first, which the probe kept alive in the 2-layer copy only (fixed
    since: src/model/memory_model.py, tests/test_memory_model.py). Less that, each is within 0.3%; the compiled FP8
    run, whose copies had no hook, was within 0.3% as it stood."""
    from experiments.figures import Fig
    from experiments.speed.tables_memory_fullft import CONTROLS, hooked_input_excess

    for path, label, _ in CONTROLS:
        f = Fig(path, label)
        measured, predicted = f.get("memory_gb.peak_allocated"), f.get("memory_predicted_gb.peak_allocated")
        excess = hooked_input_excess(f)
        assert (excess > 0) == (not f.get("config")["trainer"]["torch_compile"]), label
        assert abs((predicted - excess) / measured - 1) < 0.003, (label, predicted, excess, measured)
        if excess:
            assert predicted / measured - 1 > 0.02, label  # what the controls showed before the fix
