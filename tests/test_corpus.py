"""The drop-in on scripts written the way users write them (tests/corpus/: run_glue, run_clm, run_ner and
run_summarization styles, TRL's SFTTrainer in its formats, PEFT's LoRA scripts, torch Datasets of tensors,
set_format, BatchEncoding rows, lists of dicts, Trainer subclasses, streamed data, evaluation with early stopping,
user callbacks). Each script runs four times, each in a process of its own, as the launcher runs it
(`trainsweep measure|speedup -- python script.py`): plain, measured, sped up, and both. Then:

- it never crashes, and measuring changes nothing: the logged losses are those of the plain run, bit for bit;
- speedup either says why it leaves the script alone (and the losses stay bit for bit) or keeps the script's rows
  a step within 3% and its loss scale: the mean logged loss within LOSS_TOLERANCE of the plain run's and the first
  within FIRST_TOLERANCE (a changed scale, 2x, fails both);
- every check the report lists says what the case's table says, and any other check passes (a false warning
  fails); check groups that cannot run say so;
- the report's rows, real tokens and loss items over its timed window equal the harness's own count of the
  training micro-batches of those steps.
"""
import json
import math
from statistics import fmean

import pytest

from tests.corpus.cases import CASES, Case
from tests.corpus.fixtures import make_fixtures
from tests.corpus.harness import Server, run_subprocess

LOSS_TOLERANCE = 0.05  # speedup: mean logged loss over the run, relative to the script's own (8-12 steps, CPU)
FIRST_TOLERANCE = 0.25  # speedup: the first logged loss (other rows in the step: noise; a 2x scale is not)
VARIANTS = {"plain": frozenset(), "measure": frozenset({"measure"}), "speedup": frozenset({"speedup"}),
            "both": frozenset({"measure", "speedup"})}


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return make_fixtures(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.close()


def _runs(case: Case, fx, server, tmp_path) -> dict:
    runs = {}
    for name, modes in VARIANTS.items():
        out = tmp_path / name
        result = server.run(case.script, case.argv(fx, out / "run"), modes, out, speedup_args={"verify": False})
        assert result.returncode == 0, f"{case.name} {name}:\n{result.stderr[-3000:]}"
        assert result.records and len(result.losses) >= 3, f"{case.name} {name}: no training logged"
        report = out / "run" / "trainsweep" / "report.json"
        runs[name] = (result, json.loads(report.read_text()) if report.exists() else None)
    return runs


def _lever(result) -> str:
    """The padding-free lever's line, as speedup printed it."""
    return next(line for line in result.stdout.splitlines() if "padding-free batches:" in line)


def _independent(record: dict, report: dict, task: str) -> dict:
    """The harness's own count of the training micro-batches in the report's timed window."""
    warm = report["step_time_s"]["warmup_steps"]
    steps = [c for step, c in record["counts"].items() if int(step) > warm]
    loss_key = {"causal_lm": "scored_shifted", "token_classification": "scored", "seq2seq": "scored"}.get(task, "rows")
    return {"samples": sum(c["rows"] for c in steps), "real": sum(c["real"] for c in steps),
            "loss": sum(c[loss_key] for c in steps)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_users_script_under_the_drop_in(case, fx, server, tmp_path):
    runs = _runs(case, fx, server, tmp_path)
    plain, measured, sped, both = (runs[v][0] for v in VARIANTS)
    assert measured.losses == plain.losses  # attaching changes nothing, bit for bit

    # speedup: on, keeping rows a step and the loss scale; or off with its reason and nothing changed
    lever = _lever(sped)
    if case.speedup == "on":
        assert lever.strip().startswith("on"), lever
        packing = runs["both"][1]["speedup"]["packing"]
        assert abs(packing["rows_per_step"] / packing["rows_per_step_before"] - 1) <= 0.03, packing
        assert fmean(sped.losses) == pytest.approx(fmean(plain.losses), rel=LOSS_TOLERANCE)
        assert sped.losses[0] == pytest.approx(plain.losses[0], rel=FIRST_TOLERANCE)
    else:
        assert lever.strip().startswith("off") and case.speedup in lever, lever
        assert sped.losses == plain.losses
    assert both.losses == sped.losses  # measuring a sped-up run changes nothing either

    report = runs["measure"][1]
    assert report["status"] == "ok" and report["config"]["task"]["name"] == case.task
    checks = {c["check"]: c for c in report["diagnostics"]}
    said = {name: c["status"] for name, c in checks.items()}
    for name, status in case.expect.items():
        assert said.get(name) == status, (name, checks.get(name))
    wrong = {n: s for n, s in said.items() if n not in case.expect and s not in ("pass", "info")
             and not (s == "not_run" and n in case.not_run)}
    assert not wrong, {n: checks[n] for n in wrong}  # a check nobody expected to complain, complaining
    assert {n for n, s in said.items() if s == "not_run"} == set(case.not_run)
    if case.counted:
        tokens = {k: report["tokens"][k] for k in ("samples", "real", "loss")}
        assert tokens == _independent(measured.records[0], report, case.task)
    sped_report = runs["both"][1]
    assert sped_report["status"] == "ok" and sped_report["tokens"]["real"] <= sped_report["tokens"]["all"]
    if case.speedup == "on" and case.task == "classification":
        assert sped_report["tokens"]["loss"] == sped_report["tokens"]["samples"]


def test_the_corpus_covers_what_the_issue_names():
    tasks = {c.task for c in CASES}
    assert {"classification", "regression", "causal_lm", "token_classification", "seq2seq"} <= tasks
    assert len(CASES) >= 15
    for case in CASES:
        text = case.script.read_text()
        assert "trainsweep" not in text and text.startswith('"""'), case.name  # a user's script, saying its style


def test_a_corpus_script_through_the_launcher_in_a_fresh_interpreter(fx, tmp_path):
    """The checkout's launcher, a new interpreter, a script from the corpus: measured, with the plain run's losses."""
    case = next(c for c in CASES if c.name == "short_rows_accum")
    import sys

    plain = run_subprocess(case.script, case.argv(fx, tmp_path / "plain"), tmp_path)
    measured = run_subprocess(case.script, case.argv(fx, tmp_path / "measured"), tmp_path,
                              launcher=[sys.executable, "-m", "src.run", "measure", "--"])
    assert plain.returncode == 0 and measured.returncode == 0, measured.stderr[-3000:]
    report = json.loads((tmp_path / "measured" / "trainsweep" / "report.json").read_text())
    checks = {c["check"]: c for c in report["diagnostics"]}
    assert checks["train.grad_accum_loss"]["status"] == "fail" and "2x too large" in checks["train.grad_accum_loss"]["hint"]
    assert report["loss"]["initial"] is not None and math.isfinite(report["throughput"]["real_tokens_per_s"])
    losses = lambda p: [line for line in p.stdout.splitlines() if "'loss'" in line]  # noqa: E731  (the Trainer's logs)
    assert losses(plain) and losses(plain) == losses(measured)
