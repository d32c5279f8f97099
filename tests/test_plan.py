"""plan=predict: which cells run first, how measurements calibrate the predictions, and when the winner stands."""
import math
import subprocess
import sys
from pathlib import Path

import pytest

from src.plan.decisions import decisions, not_run
from src.plan.waves import Measured, Prediction, calibration, first_wave, largest_fits, next_wave, prediction_error

ROOT = Path(__file__).resolve().parents[1]


def P(cell, family, tok_s, low=None, high=None, memory_gb=10.0, why_not=None):
    return Prediction(cell, family, memory_gb, tok_s, low, high, why_not)


def ok(cell, tok_s, low=None, high=None):
    return Measured(cell, "ok", tok_s, low, high)


SWEEP = [
    P("a", "A", 10_000, 9_800, 10_200),   # the predicted leader
    P("b", "A", 9_900, 9_700, 10_100),
    P("c", "A", 9_000, 8_900, 9_100),     # third: in the top 3 only
    P("d", "A", 8_000, 7_900, 8_100),     # neither top, nor first of its family, nor overlapping: waits
    P("e", "B", 7_000, 6_800, 7_200),     # the fastest of family B: calibrates it
    P("f", "B", 6_000, 5_900, 6_100),
    P("g", "A", 12_000, 11_000, 13_000, memory_gb=27.2),  # fastest of all, but won't fit
    P("h", "C", None, memory_gb=None, why_not="no GPU"),  # can't be ranked
    P("i", "A", 5_000, 4_000, 9_900),     # slow on paper, but its interval reaches the leader's
]


def test_the_first_wave_runs_leaders_one_per_family_overlapping_and_unpredictable_cells():
    assert first_wave(SWEEP, 24.0) == ["a", "b", "c", "e", "i", "h"]
    assert first_wave(SWEEP, 24.0, top=1) == ["a", "b", "e", "i", "h"]  # b still overlaps the leader


def test_a_cell_predicted_out_of_memory_is_skipped_with_the_figures():
    assert not_run(SWEEP, 24.0) == {"g": "predicted out of memory: 27.2 GB > 24.0 GB"}
    assert not_run(SWEEP, None) == {}  # no capacity known: nothing is skipped
    assert first_wave(SWEEP, None)[0] == "g"
    assert first_wave([P("x", "A", 1.0, memory_gb=24.0)], 24.0) == ["x"]  # exactly at capacity still fits


def test_calibration_is_per_family_and_falls_back_to_all_ok_cells():
    preds = [P("a", "A", 10_000), P("b", "A", 8_000), P("e", "B", 5_000), P("x", "C", 1_000), P("o", "C", 2_000)]
    measured = [ok("a", 8_000), ok("b", 10_000), ok("e", 5_500), Measured("o", "oom")]
    factors = calibration(preds, measured)
    assert factors["A"] == pytest.approx(1.0)  # 0.8 and 1.25: their geometric mean
    assert factors["B"] == pytest.approx(1.1)
    assert factors["C"] == pytest.approx((0.8 * 1.25 * 1.1) ** (1 / 3))  # an oom calibrates nothing
    assert calibration(preds, [Measured("a", "oom"), Measured("b", "error")]) == {}


def test_a_leader_far_below_its_prediction_opens_the_next_wave_until_the_winner_stands():
    preds = [
        P("a", "A", 10_000, 9_500, 10_500),
        P("e", "B", 5_000, 4_800, 5_200),
        P("b", "A", 9_800, 9_300, 10_300),   # calibrated by 0.6: 5,880 (5,580-6,180) reaches 5,900
        P("c", "B", 6_200, 5_900, 6_500),    # calibrated by 1.0: reaches it too, and ranks above b now
        P("d", "A", 9_000, 8_700, 9_300),    # calibrated high 5,580 < 5,900: can't win
        P("f", "B", 4_000, 3_800, 4_200),
        P("g", "B", 20_000, memory_gb=30.0),  # never, whatever the measurements say
    ]
    first = [ok("a", 6_000, 5_900, 6_100), ok("e", 5_000, 4_950, 5_050)]
    assert next_wave(preds, first, 24.0) == ["c", "b"]
    second = first + [ok("c", 6_400, 6_300, 6_500), ok("b", 5_800, 5_700, 5_900)]
    assert next_wave(preds, second, 24.0) == []  # 6,300 is above every calibrated high left


def test_a_winner_without_an_interval_is_its_own_bounds():
    preds = [P("b", "A", 6_000, 5_000, 7_000), P("c", "A", 5_000, 4_000, 5_999), P("w", "A", None, memory_gb=None)]
    assert next_wave(preds, [ok("w", 7_000)], None) == ["b"]  # nothing predicted ran ok: calibrated by 1
    assert next_wave(preds, [ok("w", 7_000, 5_990, 7_100)], None) == ["b", "c"]  # the winner's low decides
    unranked = preds + [P("n", "A", None, memory_gb=None, why_not="no GPU")]
    assert next_wave(unranked, [ok("w", 7_000)], None) == ["b", "n"]  # it can't be ruled out, so it runs


def test_an_all_oom_first_wave_keeps_going_and_never_reruns_a_cell():
    preds = [P(c, "A", t) for c, t in zip("abcdefh", (10_000, 9_000, 8_000, 7_000, 6_000, 5_000, 4_000))]
    preds.append(P("g", "A", 20_000, memory_gb=30.0))
    measured = [Measured("a", "oom"), Measured("b", "oom"), Measured("c", "error")]  # a, b were predicted to fit
    assert next_wave(preds, measured, 24.0) == ["d", "e", "f"]
    assert next_wave(preds, measured, 24.0, top=10) == ["d", "e", "f", "h"]


def test_decisions_say_why_each_cell_ran_or_not():
    preds = [
        P("a", "A", 10_000, 9_800, 10_200),
        P("d", "A", 8_000, 7_800, 8_200),
        P("b", "B", 9_500, 9_000, 10_000),    # family B ran nothing ok: calibrated by all ok cells (0.9)
        P("g", "A", 12_000, memory_gb=27.2),
        P("o", "A", 9_000, memory_gb=20.0),   # ran out of memory although predicted to fit
        P("u", "C", None, memory_gb=None, why_not="no GPU"),
        P("h", "C", None, memory_gb=None, why_not="no GPU"),
    ]
    measured = [ok("a", 9_000, 8_900, 9_100), Measured("o", "oom"), ok("h", 7_000), ok("x", 100)]
    assert decisions(preds, measured, 24.0) == {
        "a": "ran: measured 0.90x its prediction",
        "d": "not run: predicted 8,000 (7,800-8,200) real tok/s, calibrated 7,200 (7,020-7,380) "
             "< the winner's 9,000 (8,900-9,100)",
        "b": "not run: predicted 9,500 (9,000-10,000) real tok/s, calibrated 8,550 (8,100-9,000) "
             "could still reach the winner's 9,000 (8,900-9,100)",
        "g": "predicted out of memory: 27.2 GB > 24.0 GB",
        "o": "ran: oom (predicted 20.0 GB)",
        "u": "not run: no prediction (no GPU)",
        "h": "ran",  # no prediction to compare with
        "x": "ran",  # measured, though nothing predicted it
    }
    nothing_ok = decisions(preds, [Measured("a", "error")], 24.0)
    assert nothing_ok["a"] == "ran: error"
    assert nothing_ok["d"] == "not run: predicted 8,000 (7,800-8,200) real tok/s; nothing ran ok to compare it with"


def test_prediction_error_needs_an_ok_cell_with_both_figures():
    assert prediction_error(P("a", "A", 8_000), ok("a", 8_320)) == pytest.approx(0.04)
    assert prediction_error(P("a", "A", 8_000), Measured("a", "oom")) is None
    assert prediction_error(P("a", "A", None), ok("a", 8_000)) is None
    with pytest.raises(ValueError, match="'a' compared with a measurement of 'b'"):
        prediction_error(P("a", "A", 8_000), ok("b", 8_000))


@pytest.mark.parametrize("make, message", [
    (lambda: P("a", "A", -5.0), "cell 'a': tok/s must be positive, got -5.0"),
    (lambda: P("a", "A", math.nan), "tok/s must be positive, got nan"),
    (lambda: P("a", "A", 8_500, 9_000, 8_000), "interval low 9000 > high 8000"),
    (lambda: P("a", "A", 9_500, 8_000, 9_000), "tok/s 9500 lies outside its own interval"),
    (lambda: P("a", "A", None, 8_000, 9_000), "an interval needs tok/s and both bounds"),
    (lambda: P("a", "A", 8_500, 8_000, None), "an interval needs tok/s and both bounds"),
    (lambda: P("a", "A", 8_000, memory_gb=-1.0), "predicted memory must be >= 0 GB, got -1.0"),
    (lambda: ok("a", -1.0), "cell 'a': tok/s must be positive"),
    (lambda: first_wave([P("a", "A", 1.0), P("a", "B", 2.0)], None), "cell 'a' appears twice"),
])
def test_an_impossible_input_is_refused_with_what_is_wrong(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_planner_imports_no_torch_and_no_hydra():
    code = ("import sys, src.plan.waves, src.plan.decisions; "
            "print(sorted(m for m in ('torch', 'hydra', 'omegaconf') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_largest_micro_batch_predicted_to_fit_runs_and_an_oom_hands_it_down():
    sized = [Prediction(f"bs{n}", "A", 5.0 * n, 1000.0 * n, 900.0 * n, 1100.0 * n, size=n) for n in (1, 2, 4, 8)]
    # 8 is predicted at 40 GB, over the 24 GB cap; 4 (20 GB) is the largest predicted to fit
    assert largest_fits(sized, [], 24.0) == {"A": "bs4"}
    assert "bs4" in first_wave(sized, 24.0, top=1)
    # it ran out of memory after all: 2 is the largest that fits now, and the next wave runs it
    measured = [Measured("bs4", "oom")]
    assert largest_fits(sized, measured, 24.0) == {"A": "bs2"}
    assert "bs2" in next_wave(sized, measured, 24.0)
    # once 2 ran, nothing is left to confirm or to win
    done = measured + [ok("bs2", 2000.0, 1900.0, 2100.0), ok("bs1", 1000.0, 950.0, 1050.0)]
    assert next_wave(sized, done, 24.0) == []


def test_one_question_runs_only_its_own_cells():
    """sweep.question=largest runs each family's largest predicted fit (and the next down where it ran out of
    memory), nothing for speed; =fastest runs the leaders but never a cell only to confirm that it fits."""
    sized = [Prediction(f"bs{n}", "A", 5.0 * n, 1000.0 * n, 900.0 * n, 1100.0 * n, size=n) for n in (1, 2, 4, 8)]
    slow_big = [Prediction("b1", "B", 2.0, 9000.0, 8900.0, 9100.0, size=1),
                Prediction("b4", "B", 8.0, 3000.0, 2900.0, 3100.0, size=4)]  # the largest of B is slow
    memory_only = [Prediction(f"m{n}", "A", 5.0 * n, None, size=n) for n in (1, 2, 4, 8)]  # no speed timed
    unpredicted = [Prediction("u", "C", None, None, why_not="a whole-model compile")]
    assert first_wave(sized + slow_big, 24.0, question="largest") == ["bs4", "b4"]
    assert first_wave(memory_only + unpredicted, 24.0, question="largest") == ["m4", "u"]  # never skipped unsaid
    assert next_wave(memory_only, [Measured("m4", "oom")], 24.0, question="largest") == ["m2"]
    assert next_wave(memory_only, [Measured("m4", "oom"), ok("m2", 1.0)], 24.0, question="largest") == []
    said = decisions(memory_only, [ok("m4", 1.0)], 24.0, question="largest")
    assert said["m2"] == "not run: predicted to fit (10.0 GB), below the largest that does"
    assert said["m8"] == "predicted out of memory: 40.0 GB > 24.0 GB"
    assert "b4" in first_wave(sized + slow_big, 24.0, top=1)  # both questions: the largest of B confirmed
    assert "b4" not in first_wave(sized + slow_big, 24.0, top=1, question="fastest")
    assert next_wave(sized, [Measured("bs4", "oom"), ok("bs8", 1.0)], 24.0, question="fastest") == []


def test_fastest_asked_alone_runs_the_leader_and_what_overlaps_it_not_the_top_3():
    """Llama-3.2-3B on an H200 (call 8): bs 16 predicted 5,998 (4,695-6,483), bs 8 x ga 2 3,002 (2,353-3,243). Both
    ran under the top 3 of a 2-cell grid; asked for the fastest alone, bs 8 x ga 2 can't reach the leader's low."""
    llama = [Prediction("b16", "A", 5.9, 5998.0, 4695.0, 6483.0, size=16),
             Prediction("b8x2", "A", 4.6, 3002.0, 2353.0, 3243.0, size=8)]
    assert first_wave(llama, 24.0, question="fastest") == ["b16"]
    assert first_wave(llama, 24.0) == ["b16", "b8x2"]  # both questions: the top 3
    # bs 16 measured 1.10x its prediction: bs 8 x ga 2 calibrated the same reaches 3,567, under 6,081
    assert next_wave(llama, [ok("b16", 6597.0, 6081.0, 7207.0)], 24.0, question="fastest") == []
    close = llama[:1] + [Prediction("b8x2", "A", 4.6, 5500.0, 4800.0, 6000.0, size=8)]  # overlaps the leader: runs
    assert first_wave(close, 24.0, question="fastest") == ["b16", "b8x2"]
    assert first_wave(llama, 24.0, top=3, question="fastest") == ["b16", "b8x2"]  # hydra.launcher.top overrides


def test_the_plugin_imports_the_way_hydras_plugin_scan_does():
    """Hydra runs each plugin module before putting it in sys.modules: a dataclass with string annotations
    (from __future__ import annotations) fails there. The planner is the package's (src/plan/), so the plugin
    left to scan is the launcher, a thin adapter, and its SLURM executor's adapter."""
    assert sorted(p.name for p in (ROOT / "hydra_plugins" / "trainsweep").glob("*.py")) == ["__init__.py", "launcher.py",
                                                                                              "slurm.py"]
    code = ("import importlib.util as u; s = u.spec_from_file_location('scanned', 'hydra_plugins/trainsweep/launcher.py'); "
            "m = u.module_from_spec(s); s.loader.exec_module(m); print(m.IsolatedLauncherConf().plan)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "all", out.stderr


# Call 10 on an H200 (sweep=batch_vs_accum, 4-layer Qwen3-4B under a 10 GB cap): the predictions of the 8 cells
# that fit, and the first wave's measurements. Micro-batch 32 saturated memory (10.0 of 10 GB reserved).
PRESET = [P(f"{bs}x{ga}", "F", tok, low, high, memory_gb=gb) for bs, ga, tok, low, high, gb in (
    (4, 1, 11_829, 11_336, 12_697, 2.29), (4, 2, 17_866, 16_814, 19_292, 2.29),
    (8, 1, 30_883, 29_320, 33_264, 3.06), (8, 2, 39_038, 36_626, 42_219, 3.06),
    (16, 1, 54_900, 52_399, 57_120, 4.60), (16, 2, 78_873, 70_933, 81_199, 4.60),
    (32, 1, 89_524, 88_514, 90_844, 7.68), (32, 2, 104_737, 104_557, 105_155, 7.68))]
PRESET_FIRST = [Measured("32x2", "ok", 109_111, 96_163, 123_605, saturated=True),
                Measured("32x1", "ok", 109_708, 94_947, 125_945, saturated=True),
                Measured("16x2", "ok", 78_575, 52_941, 112_963)]


def test_a_winner_that_saturated_memory_has_the_fastest_unsaturated_cell_confirmed_too():
    """The summary names the fastest cell that did not saturate memory where the fastest did: 16 x 1's calibrated
    interval (up to ~61.9k) reaches 16 x 2's measured low (52.9k), so it runs; under plan=all the two tied."""
    assert first_wave(PRESET, 10.0) == ["32x2", "32x1", "16x2"]
    assert next_wave(PRESET, PRESET_FIRST, 10.0) == ["16x1"]
    unsaturated = [Measured(m.cell, m.status, m.tok_s, m.low, m.high) for m in PRESET_FIRST]
    assert next_wave(PRESET, unsaturated, 10.0) == []  # the rule only where the winner saturated
    said = decisions(PRESET, PRESET_FIRST, 10.0)
    assert "the fastest unsaturated one's 78,575 (52,941-112,963)" in said["8x2"] and "< the winner's" in said["8x2"]
    # 16 x 1 measured as plan=all measured it: no other cell can reach 16 x 2's low, and the sweep stops
    assert next_wave(PRESET, PRESET_FIRST + [Measured("16x1", "ok", 60_286, 36_639, 124_540)], 10.0) == []


def test_with_every_measured_cell_saturated_the_fastest_predicted_below_their_memory_runs_next():
    first = [m for m in PRESET_FIRST if m.saturated]
    assert next_wave(PRESET, first, 10.0) == ["16x2"]  # 4.60 GB predicted, under 32's 7.68: the fastest such
