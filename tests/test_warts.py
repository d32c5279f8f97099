"""Issue 49's warts and issue 51's item 4: every refusal one line before anything is built and no run directory
for a config error; values that were taken silently for something else; messages that named the wrong cause;
reports that hid a stalled run; a sweep summary that stopped at one bad report. Each test failed before its fix."""
from __future__ import annotations

import pytest

from src.config.errors import ConfigError
from src.config.schema import validate
from tests.conftest import QUICK, cli, compose


@pytest.fixture(autouse=True)
def quiet_datasets(monkeypatch):
    # a file new to the cache: datasets' "Generating train split" bar would join the one line
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def _one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


# -- issue 51, item 4: one line for every refusal, no run directory for a config error ----------------------------
@pytest.mark.parametrize("bad, said", [
    (["trainer.seed=-1"], "config error: trainer.seed=-1: must be a whole number"),  # the config's own checks
    (["batch=abc"], "config error: batch=abc: no such batch (allowed: "),  # a group typo, before Hydra
    (["trainer.args.fpp16=true"], "config error: trainer.args.fpp16=True: not a TrainingArguments field; did you mean "
                                  "trainer.args.fp16?"),
    (["data=files", "data.train_file=tests/data/accounts.csv", "data.text_column=nope"],  # found while loading
     "config error: data.text_column=nope: "),
], ids=["value", "group typo", "trainer.args typo", "data"])
def test_a_config_error_is_one_line_and_leaves_no_run_directory(bad, said, tmp_path):
    run_dir = tmp_path / "run"
    proc = cli(*QUICK, *bad, f"hydra.run.dir={run_dir}")
    assert _one_line(proc).startswith(said)
    assert "trainsweep report" not in proc.stdout  # no summary block of a run that never started
    assert not run_dir.exists()  # each left a run dir with config.yaml, report.json and report.md


def test_a_trainer_args_typo_is_refused_with_the_configs_checks_before_anything_is_built():
    with pytest.raises(ConfigError, match=r"^trainer.args.adam_epsilonn=1e-06: not a TrainingArguments field; did you "
                                          r"mean trainer.args.adam_epsilon\?$"):
        validate(compose(*QUICK, "trainer.args.adam_epsilonn=1e-06"), False)  # was found by the Trainer's build
    validate(compose(*QUICK, "trainer.args.adam_epsilon=1e-06"), False)
    validate(compose(*QUICK, "model=kobart", "task=seq2seq", "trainer.args.predict_with_generate=true"), False)  # Seq2Seq's own field


def test_the_trainer_args_fields_read_from_source_are_the_classes_fields():
    import dataclasses

    from transformers import Seq2SeqTrainingArguments, TrainingArguments

    from src.config.training import training_argument_fields

    assert training_argument_fields() == {f.name for f in dataclasses.fields(TrainingArguments)}
    assert training_argument_fields(True) == {f.name for f in dataclasses.fields(Seq2SeqTrainingArguments)}
