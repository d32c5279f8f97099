"""A second corpus of user scripts (tests/user_corpus/, written apart from tests/corpus/ by another hand, with its
own fixtures: a WordPiece BERT, a tokenizing collate_fn, model_init, key=value command lines), each run plain, then
measured and sped up as the launcher runs them (speedup with its default: timed against the script's own batches
before training, on the CPU too). Every script trains to the end in a process of its own; measuring gives the plain
run's losses bit for bit; speedup either leaves the losses bit for bit or keeps their mean within 5%.

Each case's wall time (two forked runs) is printed at the end of the module.
"""
import math
import sys
import textwrap

import pytest

from tests.user_corpus import harness
from tests.user_corpus.cases import BY_NAME, CASES, Case
from tests.user_corpus.fixtures import make_fixtures

MIN_LOSSES = 3


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return make_fixtures(tmp_path_factory.mktemp("user_corpus"))


@pytest.fixture(scope="module")
def timings(request):
    seen = {}
    yield seen
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not seen:
        return
    with capture.global_and_fixture_disabled():  # teardown output is captured otherwise, and dropped
        reporter.write_line("")
        reporter.write_line("user corpus, wall seconds per case (plain, measured, sped up; forked):")
        for name, seconds in seen.items():
            reporter.write_line(f"  {name:28s} {seconds:6.1f}")
        reporter.write_line(f"  {'total':28s} {sum(seen.values()):6.1f}")


@pytest.fixture(scope="module")
def fork_server():
    server = harness.server()  # imports the heavy packages once, in a helper process
    yield server
    harness.shutdown()


def run(case: Case, fixtures: dict, workdir, modes=frozenset(), fresh: bool = False) -> harness.Result:
    """One run of a case; a drop-in variant whose hook can't be imported is skipped, not failed."""
    runner = harness.run_subprocess if fresh else harness.run_script
    try:
        return runner(case.path, case.argv(fixtures, workdir / "out"), modes, workdir)
    except harness.HookUnavailable as exc:
        pytest.skip(f"src/dropin/hook.py unavailable for {sorted(modes)}: {str(exc).strip().splitlines()[-1]}")


def assert_trained(case: Case, result: harness.Result) -> None:
    assert result.returncode == 0, f"{case.name}: {result.describe()}"
    assert result.records, f"{case.name}: no train() finished\n{result.describe()}"
    assert len(result.losses) >= MIN_LOSSES and all(math.isfinite(x) for x in result.losses), \
        f"{case.name}: losses {result.losses}"


@pytest.mark.slow  # ~110 s on CI's two cores: `make test-all`; tests/test_corpus.py holds the drop-in in `make test`
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_measured_and_sped_up_a_script_trains_as_written(case, fixtures, fork_server, timings, tmp_path):
    for module in case.needs:
        pytest.importorskip(module)
    plain = run(case, fixtures, tmp_path / "plain")
    assert_trained(case, plain)
    measured = run(case, fixtures, tmp_path / "measured", modes=frozenset({"measure"}))
    assert_trained(case, measured)
    assert measured.losses == plain.losses, f"{case.name}: measuring changed the losses"
    assert "trainsweep report:" in measured.stdout and "turned itself off" not in measured.stderr, measured.describe()
    sped = run(case, fixtures, tmp_path / "sped", modes=frozenset({"speedup"}))
    assert_trained(case, sped)
    timings[case.name] = plain.seconds + measured.seconds + sped.seconds
    assert "trainsweep.speedup on cpu:" in sped.stdout, sped.describe()
    if sped.losses != plain.losses:  # a lever kept: the same scale, the same curve within 5%
        assert sum(sped.losses) / len(sped.losses) == pytest.approx(sum(plain.losses) / len(plain.losses), rel=0.05)


def test_run_glue_style_in_a_fresh_interpreter_logs_the_forked_runs_losses(fixtures, fork_server, tmp_path):
    """`python run_glue_style.py ...` as a user types it: the fork server's children are no different."""
    case = BY_NAME["run_glue_style"]
    fresh = run(case, fixtures, tmp_path / "fresh", fresh=True)
    assert_trained(case, fresh)
    assert fresh.records[0]["trainer"] == "Trainer"
    assert "eval_accuracy" in fresh.stdout  # --do_eval ran after train() and log_metrics printed it
    assert fresh.losses == run(case, fixtures, tmp_path / "forked").losses


def test_the_corpus_is_made_of_users_scripts():
    assert len(CASES) >= 18 and len(BY_NAME) == len(CASES)
    assert {"classification", "regression", "causal_lm", "token_classification", "seq2seq"} <= {c.task for c in CASES}
    for case in CASES:
        assert case.path.exists(), case.name
        if case.script.startswith("trl:"):
            continue
        text = case.path.read_text()
        body = text.split("\n", 1)[1] if text.startswith("#!") else text
        assert body.startswith('"""'), f"{case.name}: no docstring saying its style"
        assert "trainsweep" not in text and "from src" not in text and "import src" not in text, case.name
        assert "python " + case.script in text, f"{case.name}: its docstring says how to run it"


def _script(tmp_path, body: str):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_train_that_raises_is_recorded_and_fails_the_run_even_if_the_script_swallows_it(fork_server, tmp_path):
    script = _script(tmp_path, """
        from transformers import Trainer, TrainingArguments

        class Broken(Trainer):
            def get_train_dataloader(self):
                raise RuntimeError("the data went missing")

        import torch
        trainer = Broken(model=torch.nn.Linear(2, 2), args=TrainingArguments("out", report_to="none", max_steps=1))
        try:
            trainer.train()
        except RuntimeError:
            print("swallowed")
        """)
    result = harness.run_script(script, [], frozenset(), tmp_path / "run")
    assert result.returncode != 0 and "swallowed" in result.stdout
    assert result.records[0]["trainer"] == "Broken" and "the data went missing" in result.records[0]["error"]


def test_a_run_past_its_timeout_is_killed(fork_server, tmp_path):
    script = _script(tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    result = harness.run_script(script, [], frozenset(), tmp_path / "run", timeout=2)
    assert result.returncode < 0 and "started" in result.stdout and result.seconds < 30


def test_the_child_exit_status_and_argv_are_the_scripts(fork_server, tmp_path):
    script = _script(tmp_path, "import os, sys\nprint(sys.argv[1:], os.getcwd())\nsys.exit(3)\n")
    result = harness.run_script(script, ["--flag", "x y"], frozenset(), tmp_path / "run")
    assert result.returncode == 3 and result.stdout.strip() == f"['--flag', 'x y'] {(tmp_path / 'run').resolve()}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
