"""The memory model's gradients beside its activations (memory_model.peak_parts' gradient_overlap), held to the full
fine-tunes H100s ran with today's copies, from the figures each report stored:
- experiments/speed/results/h100_fullft_probe_call1.jsonl: 3-36 layers, fp32 and bf16, grad_accum 1-4, a classifier
  and a causal LM with its tied embedding, dynamic batches for 6 steps; the widest each drew is replayed on the CPU
  (cpu_fullft_probe_drawn.jsonl, experiments/speed/drawn_widths.py);
- h100_fullft_fixed_call1.jsonl: held out, the rule unchanged, every micro-batch the widest (padding=max_length);
- h100_g4fix_call1.jsonl: after the probe's fix, the controls and the lowest one-width row, which led to weighing the
  forward's end at grad_accum > 1 (h100_ft7trace_call1.jsonl: what was alive at its peak)."""
import json

import pytest

from src.model import memory_model as mm
from tests.conftest import ROOT

GB = 2**30
PROBE = ROOT / "experiments/speed/results/h100_fullft_probe_call1.jsonl"
FIXED = ROOT / "experiments/speed/results/h100_fullft_fixed_call1.jsonl"  # held out, every micro-batch the widest
DRAWN = ROOT / "experiments/speed/results/cpu_fullft_probe_drawn.jsonl"
REST = [ROOT / f"experiments/speed/results/h100_g4rest_call{i}.jsonl" for i in (1, 2)]  # fullft_fixed's other rows
G4FIX = ROOT / "experiments/speed/results/h100_g4fix_call1.jsonl"


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


ROWS = {r["label"]: r for r in _rows(PROBE)}
DRAWN_WIDTH = {r["label"]: r["widest_drawn"] for r in _rows(DRAWN)}


def _predicted(r: dict, tokens: int | None = None, forward_end: bool = True) -> float:
    """Today's rule on a run's stored figures, its activations scaled to `tokens` (default: the widest);
    forward_end=False: the rule each of these runs was predicted by (before the forward's end was weighed)."""
    from experiments.speed.tables_memory_fullft import rule_on

    return rule_on(r, tokens, forward_end)


@pytest.mark.parametrize("label", sorted(ROWS))
def test_the_stored_figures_give_the_prediction_the_run_made(label):
    r = ROWS[label]
    assert _predicted(r, forward_end=False) == pytest.approx(r["memory_predicted_gb"]["peak_allocated"], rel=1e-9)
    if r["config"]["batch"]["grad_accum"] == 1:  # the forward's end is weighed only under accumulation
        assert _predicted(r) == _predicted(r, forward_end=False)


@pytest.mark.parametrize("label", sorted(ROWS))
def test_full_fine_tunes_are_predicted_within_2_percent_of_the_batch_they_drew(label):
    r, measured = ROWS[label], ROWS[label]["memory_gb"]["peak_allocated"]
    drawn, widest = DRAWN_WIDTH[label], r["memory_predicted_gb"]["widest_tokens"]
    for rule in (False, True):  # the rule the run was predicted by, and today's
        assert abs(_predicted(r, drawn, rule) / measured - 1) < 0.02, (label, rule, _predicted(r, drawn, rule), measured)
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
    assert _predicted(r, forward_end=False) == pytest.approx(p["peak_allocated"], rel=1e-9)
    assert abs(p["peak_allocated"] / measured - 1) < 0.02, (r["label"], p["peak_allocated"], measured)
    assert abs(_predicted(r) / measured - 1) < 0.0125, (r["label"], _predicted(r), measured)  # today's rule


def test_after_the_probes_fix_the_controls_are_within_0_3_percent_and_the_forward_end_brings_the_7_layer_row_in():
    """One H100 after the probe's fix (commit 9d9cbaf): QLoRA, eager LoRA, FP8 + fused and whole-model graphs at full
    depth within 0.3% as predicted; the 7-layer bf16 full fine-tune at grad_accum 3 -2.03% as predicted, within 1%
    once the forward's end is weighed, where its trace held the copies' kept line of activations at the peak."""
    rows = {r["label"]: r for r in _rows(G4FIX)}
    for label in ("mc_qlora_packed8k", "mc_fp8_fused_8k", "fx_lora36_bs32", "gm4_2k_full"):
        r = rows[label]
        assert abs(r["memory_predicted_gb"]["peak_allocated"] / r["memory_gb"]["peak_allocated"] - 1) < 0.003, label
    ft7, measured = rows["fx_ft7_bf16_bs4_ga3"], rows["fx_ft7_bf16_bs4_ga3"]["memory_gb"]["peak_allocated"]
    assert _predicted(ft7, forward_end=False) == pytest.approx(ft7["memory_predicted_gb"]["peak_allocated"], rel=1e-9)
    assert ft7["memory_predicted_gb"]["peak_allocated"] / measured - 1 < -0.02
    assert abs(_predicted(ft7) / measured - 1) < 0.01
    (trace,) = [r for r in _rows(ROOT / "experiments/speed/results/h100_ft7trace_call1.jsonl") if r["label"] == "ft7_ga3"]
    alive = sum(t["gb"] for t in trace["trace"]["top"] if t["site"].startswith("transformers/"))
    one, two = (trace["predicted"]["copies_gb"][n]["kept"] for n in ("1", "2"))
    assert alive == pytest.approx(one + 6 * (two - one), rel=0.005)  # the kept line at 7 layers
    assert alive > trace["predicted"]["parts"]["activations"] * 1.05  # what the rule had


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


def test_accumulation_weighs_the_forwards_end_beside_every_gradient():
    """At grad_accum > 1 every gradient exists when the forward returns: all it saved (`kept`) may exceed the
    activations the copies read at the last layer's backward, less the gradients made by then."""
    fixed = {"weights": 2 * GB, "grads": 2 * GB, "optimizer": 4 * GB}
    args = dict(first_grads=0.2 * GB, largest_grad=0.7 * GB)
    kept = mm.peak_parts(fixed, 1.45 * GB, 0, grad_accum=3, kept=1.56 * GB, **args)
    assert sum(kept.values()) == pytest.approx(2 + 2 + 4 + 1.56)
    assert mm.peak_parts(fixed, 1.45 * GB, 0, grad_accum=1, kept=1.56 * GB, **args) == \
        mm.peak_parts(fixed, 1.45 * GB, 0, grad_accum=1, **args)  # at 1 the backward's start is the later moment
    below = mm.peak_parts(fixed, 1.45 * GB, 0, grad_accum=3, kept=1.0 * GB, **args)
    assert sum(below.values()) == pytest.approx(2 + 2 + 4 + 1.45)
    one, two = {"kept": 0.24 * GB, "first_grads": 0.19 * GB}, {"kept": 0.46 * GB, "first_grads": 0.19 * GB}
    assert mm.copy_gradients(one, two, 0.7 * GB, layers=7)["kept"] == pytest.approx((0.24 + 6 * 0.22) * GB)
    assert mm.copy_gradients({}, {}, 0.7 * GB, layers=7)["kept"] == 0  # copies that read no kept figure


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
