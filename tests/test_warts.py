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


# -- silently taken for something else --------------------------------------------------------------------------
@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    from src.base import files as disk

    monkeypatch.setattr(disk, "CACHE", tmp_path / "cache")


@pytest.mark.parametrize("name, content, said", [
    ("twice.csv", "text,label,text\nalpha,x,beta\ngamma,y,delta\n",  # pandas read the second as `text.1`
     r"^data.train_file=.*twice.csv: the header names column 'text' twice \(columns 1 and 3\)"),
    ("list.jsonl", '{"text": "a", "label": [1, 2]}\n{"text": "b", "label": [3]}\n',  # was the class "[1, 2]"
     r"^data.label_column=label: row 0 has the list \[1, 2\]: a class label is one id or one name"),
    ("dict.jsonl", '{"text": "a", "label": {"k": 1}}\n{"text": "b", "label": {"k": 2}}\n',
     r"^data.label_column=label: row 0 has the dict \{'k': 1\}"),
])
def test_a_column_named_twice_and_list_or_dict_labels_are_refused(name, content, said, tmp_path, private_cache):
    from src.data.sources import read_files

    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ConfigError, match=said):
        read_files(compose("data=files", f"data.train_file={path}"))


def test_class_ids_in_the_train_file_and_names_in_the_eval_file_is_one_line(tmp_path, private_cache):
    from src.data.sources import read_files

    (tmp_path / "train.csv").write_text("text,label\na,0\nb,1\nc,0\n")
    (tmp_path / "eval.csv").write_text("text,label\na,x\nb,y\n")
    with pytest.raises(ConfigError, match=r"eval.csv: has label names \('x'\) where the training file has class ids"):
        read_files(compose("data=files", f"data.train_file={tmp_path / 'train.csv'}",  # was int('x'): a traceback
                           f"data.eval_file={tmp_path / 'eval.csv'}"))


def test_a_max_length_beyond_the_models_positions_is_refused_at_startup(local_model_dir):
    with pytest.raises(ConfigError, match=r"^data.max_length=5000: beyond the model's 1024 positions"):
        validate(compose(*QUICK, "data.max_length=5000"), False)  # the tiny model's arch: 1024
    import json

    positions = json.loads((local_model_dir / "config.json").read_text())["max_position_embeddings"]
    with pytest.raises(ConfigError, match=rf"^data.max_length={positions + 1}: beyond the model's {positions} positions"):
        validate(compose(*QUICK, "model=auto", f"model.name_or_path={local_model_dir}",
                         f"data.max_length={positions + 1}"), False)
    validate(compose(*QUICK, "data.max_length=1024"), False)


def test_more_rows_a_step_than_the_data_has_is_refused():
    from types import SimpleNamespace

    from src.train.trainer import from_the_data

    prep = SimpleNamespace(for_trainer=[{}] * 256, info={"num_labels": 2})
    with pytest.raises(ConfigError, match=r"^batch.size=1000000: 1000000 rows a step .* the training data has 256: at "
                                          r"most 256 a step$"):
        from_the_data(compose(*QUICK, "batch=1000000"), prep, 1)  # trained on 256-row batches, reported 10^6
    with pytest.raises(ConfigError, match=r"^batch.size=64: 512 rows a step"):
        from_the_data(compose(*QUICK, "batch=64", "batch.grad_accum=4"), prep, 2)
    from_the_data(compose(*QUICK, "batch=64", "batch.grad_accum=4"), prep, 1)


def test_a_model_directory_without_tokenizer_files_says_so(local_model_dir, tmp_path):
    import shutil

    from src.data.tokenize import load_tokenizer

    bare = tmp_path / "model"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(local_model_dir / name, bare / name)
    with pytest.raises(ConfigError, match=r"its tokenizer turns text into no tokens: the directory has no tokenizer "
                                          r"files"):  # was "every train row's text is empty"
        load_tokenizer(compose("model=auto", f"model.name_or_path={bare}"))
    assert load_tokenizer(compose("model=auto", f"model.name_or_path={local_model_dir}")) is not None


# -- a !!python tag: never constructed ----------------------------------------------------------------------------
def test_a_python_tag_in_an_experiment_yaml_is_one_line_and_never_constructed(tmp_path):
    import shutil
    import subprocess
    import sys

    from tests.conftest import ROOT

    project = tmp_path / "project"  # a copy: the experiment YAML is written into its conf/, not the checkout's
    for part in ("src", "conf", "hydra_plugins"):
        shutil.copytree(ROOT / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "constructed"
    (project / "conf/experiment/evil.yaml").write_text(
        f"# @package _global_\ntrainer:\n  lr: !!python/object/apply:os.system [\"touch {marker}\"]\n")
    proc = subprocess.run([sys.executable, "-m", "src.run", *QUICK, "+experiment=evil", f"hydra.run.dir={tmp_path / 'r'}"],
                          cwd=project, capture_output=True, text=True, timeout=300)
    line = _one_line(proc)  # was a yaml ConstructorError traceback
    assert line.startswith("config error: experiment=evil: ") and "line 3 holds the tag !!python/object/apply:os.system" in line
    assert not marker.exists() and not (tmp_path / "r").exists()


def test_resume_reads_no_yaml_of_the_run_directory(tmp_path):
    """A run's config.yaml is written for people; a resume trusts each checkpoint's JSON stamp, so a tag put there
    builds nothing."""
    marker = tmp_path / "constructed"
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    (run_dir / "config.yaml").write_text(f"trainer:\n  lr: !!python/object/apply:os.system [\"touch {marker}\"]\n")
    proc = cli(*QUICK, "resume=true", f"hydra.run.dir={run_dir}")
    assert _one_line(proc).startswith(f"config error: resume=True: no complete checkpoint in {run_dir / 'checkpoints'}")
    assert not marker.exists()


# -- a run that stood still: flagged, never ranked -------------------------------------------------------------------
def _flags_of(values):
    from src.report.analysis import flags
    from src.report.sections import Compile, Shapes, StepTime

    return flags(StepTime(mean=sum(values) / len(values), values=values), Shapes(), Compile(), {}, False, False)


def test_a_step_the_process_stood_still_in_is_flagged_stalled():
    steady = [0.1, 0.11, 0.09, 0.1] * 10
    paused = steady[:20] + [6.1] + steady[20:]  # SIGSTOP for 6 s: the mean 1.4x, the run's speed read 1/1.4
    flags = _flags_of(paused)
    assert flags.stalled_s == 6.1 and flags.reasons[0].startswith(
        "stalled: timed step 21 took 6.1 s, 61x the median 0.1 s (the process stood still")  # was "wide interval" alone
    assert _flags_of(steady).stalled_s is None
    assert _flags_of(steady[:20] + [0.9] + steady[20:]).stalled_s is None  # 9x: a slow step, not a stall
    assert _flags_of(steady[:20] + [2.5] + steady[20:]).stalled_s is None  # a loaded host's hiccup: "busy host"
    assert _flags_of([2.0, 2.1, 2.0, 2.2, 9.0, 2.1]).stalled_s is None  # 4x: a CPU step's spread on a busy host


def test_a_stalled_job_is_not_ranked_as_a_clean_measurement():
    from src.report import summary

    def report(job, rate, reasons=()):
        return {"job": job, "status": "ok", "overrides": [job], "config": {"batch": {"size": 8, "grad_accum": 1}},
                "throughput": {"real_tokens_per_s": rate}, "step_time_s": {"mean": 0.1}, "flags": {"reasons": list(reasons)}}
    df = summary.table([report("batch=4", 100.0), report("batch=8", 300.0, ["stalled: timed step 21 took 6.1 s, ..."]),
                        report("batch=16", 90.0)])
    assert list(df["job"]) == ["batch=4", "batch=16", "batch=8"] and df["rank"].isna().tolist() == [False, False, True]
    lines = summary.recommend(df)
    assert not any("batch=8" in line for line in lines if not line.startswith("flagged"))  # was the leader at 3x
    assert any(line.startswith("flagged batch=8: stalled: ") for line in lines)


# -- python -m src.report after a kill --------------------------------------------------------------------------
def test_the_summary_names_a_corrupt_job_report_and_the_jobs_that_never_started(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    def job(name, report):
        (tmp_path / name / ".hydra").mkdir(parents=True)
        if report is not None:
            (tmp_path / name / "report.json").write_text(report)
    job("batch=4", json.dumps({"status": "ok", "overrides": ["batch=4"], "config": {"batch": {"size": 4, "grad_accum": 1}},
                               "throughput": {"real_tokens_per_s": 100.0}, "step_time_s": {"mean": 0.1}}))
    job("batch=8", '{"status": "ok", "overr')  # cut off: a disk that filled under an older trainsweep, an edit
    job("batch=16", None)  # killed while it ran
    (tmp_path / "jobs.json").write_text(json.dumps({"jobs": ["batch=4", "batch=8", "batch=16", "batch=32"]}))
    proc = subprocess.run([sys.executable, "-m", "src.report", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]  # was a JSONDecodeError
    assert "1 job(s) have no report, so are not ranked: batch=16" in proc.stdout
    assert "1 job(s) never started, so are not ranked: batch=32 (the sweep stopped before them" in proc.stdout
    assert "did not finish: batch=8 (unreadable)" in proc.stdout
    assert f"{tmp_path / 'batch=8' / 'report.json'} can't be read (JSONDecodeError: " in proc.stdout


def test_a_sweep_writes_the_jobs_it_will_run_before_the_first_starts(tmp_path):
    import json

    proc = cli("-m", *QUICK, "trainer.seed=-1,-2", f"hydra.sweep.dir={tmp_path}")  # config errors: seconds a job
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    names = json.loads((tmp_path / "jobs.json").read_text())["jobs"]
    assert len(names) == 2 and all((tmp_path / name / "report.json").is_file() for name in names)


# -- resume: a checkpoint of other data ------------------------------------------------------------------------------
def test_resume_after_the_data_changed_its_classes_is_one_line_not_a_size_mismatch(tmp_path, private_cache):
    from src.run import run

    data = tmp_path / "train.csv"
    args = [*QUICK, "trainer.save_steps=2", "diagnostics.enabled=false", "data=files", f"data.train_file={data}"]
    data.write_text("text,label\n" + "".join(f"word{i} thing,{'ab'[i % 2]}\n" for i in range(16)))
    assert run(compose(*args), tmp_path / "run")["status"] == "ok"
    (tmp_path / "run" / "report.json").unlink()  # as if killed after its last checkpoint
    data.write_text("text,label\n" + "".join(f"word{i} thing,{'abc'[i % 3]}\n" for i in range(16)))  # three classes now
    rep = run(compose(*args, "resume=true"), tmp_path / "run")
    assert rep["status"] == "config_error" and "resumed_from" not in rep  # was an error: size mismatch, "resumed"
    assert rep["error"].startswith("resume=True: the config changed since the run it would continue (data files' "
                                   "content: ")


# -- Hydra's several-line answers, in one ---------------------------------------------------------------------------
@pytest.mark.parametrize("args, said", [
    (["trainer.max_steps=abc"], "trainer.max_steps=abc: must be a whole number"),  # each was Hydra's 5-7 lines
    (["data.max_length=1.5"], "data.max_length=1.5: must be a whole number"),
    (["trainer.lr=fast"], "trainer.lr=fast: must be a number"),
    (["-m", "batch.size=4,abc"], "batch.size=abc: must be a whole number"),
    (["trainer.gradient_checkpointing=maybe"], "trainer.gradient_checkpointing=maybe: must be true or false"),
    (["logger=none,csv"], "logger=none,csv: a comma list is a sweep: add -m to run each value, or quote it"),
    (["trainer.args.fp16"], "trainer.args.fp16=: no value: write trainer.args.fp16=VALUE"),
    (["padding="], "padding=: give one padding (allowed: buckets, "),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_value_hydra_would_refuse_in_several_lines_is_one_line(args, said, capsys):
    from src.config.cli import hydra_argv

    with pytest.raises(SystemExit) as exited:
        hydra_argv(["src/run.py", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"config error: {said}") and err.count("\n") == 1, err


@pytest.mark.parametrize("args", [["trainer.lr=1e-4"], ["trainer.lr=3"], ["trainer.epochs=null"], ["trainer.seed=-1"],
                                  ["trainer.gradient_checkpointing=yes"], ["-m", "batch=4,8"], ["trainer.lr=${model.lr}"],
                                  ["--cfg", "job"], ["trainer.args.lr_scheduler_type=cosine"]],
                         ids=lambda v: " ".join(v))
def test_values_hydra_takes_pass_the_one_line_checks(args):
    from src.config.cli import hydra_argv

    hydra_argv(["src/run.py", *args])  # trainer.seed=-1 is the schema's checks' to refuse, with what is allowed


def test_an_interval_spanning_orders_of_magnitude_compares_as_a_tie_not_an_overflow():
    from src.base import stats

    wild, steady = stats.Interval(100, 1, 1e6, 2), stats.Interval(100, 90, 110, 2)  # two repeats, one on a stalled host
    assert stats.compare(wild, steady, 100, 100).tie  # was OverflowError: the sweep's summary failed
