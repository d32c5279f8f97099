"""No ratio in the experiments' tables pairs rows of two device calls unless its cell says so (issue 52, item 1).

The scan builds every registered table with each number read from a result row tagged with its row's call
(experiments/calltrace.py): a division of numbers of different calls that no figures.ratio/quotient/over labelled,
or a quotient told one call for numbers of another, is an unlabeled cross-call ratio. The mutation tests edit a real
builder's source the way a regression would and show the scan (or the guard itself) catches it.
"""
from __future__ import annotations

import importlib
import inspect
import json
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments import calltrace, figures, tables  # noqa: E402


@pytest.fixture
def traced(monkeypatch):
    """Tables built from tagged rows; statistics' means keep their inputs' calls."""
    monkeypatch.setattr(calltrace, "TRACING", True)
    monkeypatch.setattr(calltrace, "UNLABELLED", [])
    monkeypatch.setattr(calltrace, "NOTES", [])
    for name in tables.MODULES:
        module = importlib.import_module(name)
        for fn in ("fmean", "median"):
            if hasattr(module, fn):
                monkeypatch.setattr(module, fn, getattr(calltrace, fn))
    figures._records.cache_clear()
    yield calltrace
    figures._records.cache_clear()


def build(module: str, source_edits: list[tuple[str, str]], function: str):
    """`function` of `module` with its source edited (each edit must apply), run in the module's namespace."""
    mod = importlib.import_module(module)
    src = textwrap.dedent(inspect.getsource(getattr(mod, function)))
    for old, new in source_edits:
        assert old in src, old
        src = src.replace(old, new)
    namespace = dict(vars(mod))
    exec(compile(src, mod.__file__, "exec"), namespace)
    return namespace[function]


def test_every_ratio_in_every_table_is_of_one_call_or_says_it_crosses(traced):
    figures._records.cache_clear()
    calltrace.TRACING = False
    plain = {name: build_() for name, (_, build_) in tables.TABLES.items()}
    calltrace.TRACING = True
    figures._records.cache_clear()
    crossing = []
    for name, (_, build_) in tables.TABLES.items():
        traced.NOTES.clear()
        out = build_()
        assert out == plain[name], f"{name}: tagging changed the table"
        assert traced.UNLABELLED == [], f"{name}: unlabeled ratios across calls: {traced.UNLABELLED}"
        if any(crosses for _, crosses in traced.NOTES):
            crossing.append(name)
            assert figures.ACROSS.strip() in out, f"{name} takes a ratio across calls and doesn't say so"
    # the tables known to cross calls, each labelled: a new one is a decision to look at, not a default
    assert sorted(crossing) == ["loop_overheads/pooled", "planner/fastest5", "planner/fastest5_times", "planner/g4",
                                "planner/g4_times", "planner/grid18", "planner/preset", "planner/preset_times",
                                "speed/call7", "twelve_x/ladder"]


def test_mutation_pooling_two_calls_in_speedup_ratios_is_caught(traced):
    """speedup_ratios as it was before issue 52: the calls 2-3 file's runs pooled into one mean ratio."""
    pooled = build("experiments.speedup.tables", [
        ("calls = list(dict.fromkeys(row_call(r) for r in _records(path)))", 'calls = ["pooled"]'),
        (' and row_call(r) == call', '')], "speedup_ratios")
    out = pooled("speedup/results/h100_graphs_calls2_3.jsonl", ("classifier8",), ("graphs",))
    assert "5.25x" in out  # the pooled figure the issue found
    assert any("h100_graphs_call2+h100_graphs_call3 given as pooled" in u for u in traced.UNLABELLED)


def test_mutation_a_hand_taken_ratio_across_calls_is_caught(traced):
    """twelve_x's ladder with its 'x before' taken by hand (rate over rate) instead of through ratio()."""
    by_hand = build("experiments.twelve_x_slowdown.tables", [
        ('ratio(f, figs[0], across_calls=True)', 'f"{f.rate / figs[0].rate:.2f}"')], "twelve_x_ladder")
    by_hand()
    assert any("twelve_x_call_B / twelve_x_call_A" in u for u in traced.UNLABELLED)


def test_mutation_a_ratio_across_calls_without_its_label_is_refused():
    """The guard itself: the ladder's step from rung 3 (call A) to rung 4 (call B) without across_calls."""
    unlabelled = build("experiments.twelve_x_slowdown.tables", [
        ('step = "" if i == 0 else ratio(f, figs[i - 1], across_calls=True)', 'step = "" if i == 0 else ratio(f, figs[i - 1])'),
        ('if i == 4:\n            step = "see call C below"', 'if False:\n            pass')], "twelve_x_ladder")
    with pytest.raises(figures.CrossCall, match=r"rung_4_bf16 \(twelve_x_call_B\) / rung_3_env \(twelve_x_call_A\)"):
        unlabelled()


def test_a_rows_call_comes_from_the_row_then_the_legacy_map_then_the_file_name():
    row = {"label": "x", "call": "h200_20261128T0101-host"}
    assert figures.call_of("speed/results/h200_budget_call2.jsonl", 0, row) == "h200_20261128T0101-host"
    assert figures.call_of("speed/results/h200_budget_call2_anchors.jsonl", 0, {"name": "a"}) == "h200_budget_call2"
    assert figures.call_of("speedup/results/h100_graphs_calls2_3.jsonl", 3, {}) == "h100_graphs_call3"
    assert figures.call_of("twelve_x_slowdown/results/ladder_c/anchor.jsonl", 0, {}) == "twelve_x_call_C"
    with pytest.raises(figures.CrossCall, match="crosses calls"):
        figures.quotient(2.0, 1.0, "call1", {"call1", "call2"})
    assert figures.over(2.0, 1.0, "call1", "call2", across_calls=True) == "2.00" + figures.ACROSS


def test_the_calls_2_3_table_gives_each_call_its_own_row():
    out = tables.TABLES["speedup/graphs_calls2_3_ratios"][1]()
    assert "**4.98x**" in out and "**5.56x**" in out and "5.25x" not in out
    rows = [json.loads(x) for x in (ROOT / "experiments/speedup/results/h100_graphs_calls2_3.jsonl").read_text().splitlines()]
    assert [r["mode"] for r in rows] == ["graphs", "plain", "graphs", "plain"]  # the order LEGACY_CALLS relies on


def test_the_claims_ratios_are_of_one_call_or_say_so(traced):
    """The prose's registered claims (experiments/claims/) divide figures by hand too: the same scan over them."""
    from experiments import claims

    for claim in claims.CLAIMS:
        claim.value()
    assert traced.UNLABELLED == []
