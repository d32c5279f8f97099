"""Nothing lost, nothing mixed (issue 31): the eight faults found by killing, filling and changing things under a
run, and the warts beside them, each reproduced. Real processes where a kill or a signal is the fault."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from src.base import files as disk
from src.config.errors import ConfigError
from src.config.schema import validate
from src.data import sources
from src.data.tokenize import train_tokenizer
from src.report import files as report_files, summary
from src.run import run
from tests.conftest import QUICK, ROOT, cli, compose, read_report

FILES = ["data=files", "logger=none", "data.num_proc=1"]


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(condition, seconds=60.0) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.1)


def _fork_and_die(code_before: str, tmp_path: Path) -> tuple[int, int]:
    """A process that runs `code_before`, forks a child that sleeps, then is killed with -9: (its pid, the child's)."""
    script = (f"import os, sys, time\nsys.path.insert(0, {str(ROOT)!r})\n{code_before}\n"
              "child = os.fork()\nif child == 0:\n    time.sleep(60)\n    os._exit(0)\n"
              "print(child, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    child = int(proc.stdout.readline())
    proc.kill()
    proc.wait()
    return proc.pid, child


# -- 1. a run killed while its children (a tokenising pool, DataLoader workers) live ---------------------------
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_children_forked_by_a_run_die_with_it(tmp_path):
    _, child = _fork_and_die("from src.base.children import die_with_this_process\nassert die_with_this_process()",
                             tmp_path)
    _wait_for(lambda: not _alive(child), seconds=10)


def test_a_forked_child_does_not_hold_the_run_directory_after_its_parent_is_killed(tmp_path):
    run_dir = tmp_path / "run"
    _, child = _fork_and_die(f"from src.base.files import lock\nheld = lock({str(run_dir)!r})\nheld.__enter__()",
                             tmp_path)
    try:
        assert _alive(child)  # an orphan, as datasets' pool workers were
        assert not disk.locked(run_dir)  # the lock went with its holder: a rerun starts at once
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_sweep_summary_names_the_jobs_it_has_no_report_for(tmp_path):
    for job, rate in (("batch=4", 100.0), ("batch=8", 120.0)):
        (tmp_path / job / ".hydra").mkdir(parents=True)
        (tmp_path / job / "report.json").write_text(json.dumps(
            {"status": "ok", "overrides": [job], "config": {"batch": {"size": int(job[6:]), "grad_accum": 1}},
             "throughput": {"real_tokens_per_s": rate}, "step_time_s": {"mean": 0.1}}))
    (tmp_path / "batch=16" / ".hydra").mkdir(parents=True)  # in use by another process when the sweep ran
    md = summary.write(tmp_path)
    assert "1 job(s) have no report, so are not ranked: batch=16" in md


# -- 2. a fallback tokenizer's cache entry cut short --------------------------------------------------------
def test_a_partial_tokenizer_cache_entry_is_trained_again_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "CACHE", tmp_path / "cache")
    cfg = compose(*FILES, "data.train_file=tests/data/accounts.csv", "task.num_labels=5")
    first = train_tokenizer(cfg, 8000)
    [entry] = (tmp_path / "cache" / "tokenizers").iterdir()
    whole = (entry / "tokenizer.json").read_bytes()
    (entry / "tokenizer.json").write_bytes(whole[: len(whole) // 3])  # a full disk (or a kill) mid-write
    again = train_tokenizer(cfg, 8000)
    assert again("식대 교통비")["input_ids"] == first("식대 교통비")["input_ids"]
    assert (entry / "tokenizer.json").read_bytes() == whole
    assert not list(entry.parent.glob(".*.tmp"))  # written under a temporary name, renamed in whole


# -- 3. resume=true with a changed config --------------------------------------------------------------------
def test_resume_with_a_changed_config_is_refused_naming_what_changed(tmp_path):
    assert run(compose(*QUICK, "trainer.save_steps=2"), tmp_path)["status"] == "ok"
    before = (tmp_path / "config.yaml").read_text()
    rep = run(compose(*QUICK, "trainer.save_steps=2", "resume=true", "trainer.lr=0.05", "batch=4"), tmp_path)
    assert rep["status"] == "config_error"
    lr = compose(*QUICK).trainer.lr
    assert rep["error"].startswith(f"resume=True: the config changed since the run it would continue (batch.size: 8 -> 4; "
                                   f"trainer.lr: {lr} -> 0.05)")
    assert (tmp_path / "config.yaml").read_text() == before  # the checkpoints' own config is kept
    assert run(compose(*QUICK, "trainer.save_steps=2", "resume=true", "rerun=true"), tmp_path)["status"] == "ok"


def test_a_run_over_an_earlier_runs_checkpoints_says_it_starts_from_step_0(tmp_path, capsys):
    assert run(compose(*QUICK, "trainer.save_steps=2"), tmp_path)["status"] == "ok"
    (tmp_path / "report.json").unlink()  # an interrupted run: checkpoints, no report
    assert run(compose(*QUICK, "trainer.save_steps=2"), tmp_path)["status"] == "ok"
    assert "holds an earlier run's checkpoints: this run starts from step 0 (resume=true" in capsys.readouterr().err


# -- 4. the data changed after a run finished, or between a sweep's jobs ---------------------------------------
def test_a_finished_run_of_changed_data_runs_again(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n식대,a\n교통비,b\n")
    cfg = compose(*FILES, f"data.train_file={data}", "task.num_labels=2")
    fingerprint = report_files.data_fingerprint(cfg)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.json").write_text(json.dumps({"status": "ok", "overrides": [], "config": {},
                                                              "config_hash": "h", "data_fingerprint": fingerprint}))
    assert report_files.finished(tmp_path / "run", "h", fingerprint)[0] is not None
    data.write_text("text,label\n회식,a\n교통비,b\n")  # other rows, same name
    changed = report_files.data_fingerprint(cfg)
    assert changed != fingerprint
    assert report_files.finished(tmp_path / "run", "h", changed) == (None, "its data files changed since its report")
    other = tmp_path / "other.csv"
    other.write_text("text,label\n식대,a\n교통비,b\n")
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    via_link = compose(*FILES, f"data.train_file={link}", "task.num_labels=2")
    first = report_files.data_fingerprint(via_link)
    link.unlink()
    link.symlink_to(other)  # re-pointed
    assert report_files.data_fingerprint(via_link) != first


def test_the_cli_reruns_a_finished_run_whose_file_changed(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n" + "".join(f"{w} {i},{w}\n" for i in range(8) for w in ("식대", "교통비")))
    args = [*QUICK, *FILES, f"data.train_file={data}", "task.num_labels=2", f"hydra.run.dir={tmp_path / 'run'}"]
    assert run(compose(*args[:-1]), tmp_path / "run")["status"] == "ok"  # the first run in this process: the CLI finds it
    assert read_report(tmp_path / "run")["data_fingerprint"] == report_files.data_fingerprint(compose(*args[:-1]))
    assert "finished earlier" in cli(*args).stdout
    data.write_text(data.read_text().replace("식대 0", "회식 0"))
    again = cli(*args)
    assert again.returncode == 0 and "its data files changed since its report: running it again" in again.stdout


def test_a_sweep_summary_says_when_its_jobs_read_different_data():
    reports = [{"job": "a", "status": "ok", "data_fingerprint": "x"}, {"job": "b", "status": "ok", "data_fingerprint": "y"}]
    assert any(line.startswith("not comparable: the jobs read different data") for line in summary.warnings(Path("."), reports))
    assert summary.warnings(Path("."), reports[:1]) == []


# -- 5. cells pandas would read as missing -------------------------------------------------------------------
def test_cells_reading_none_na_or_null_are_values_not_missing(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,label\nNA,None\nnull,ok\nnan,None\nreal text,ok\n")
    files = sources.read_files(compose(*FILES, f"data.train_file={data}", "task.num_labels=2"))
    assert files.rows["train"]["text"] == ["NA", "null", "nan", "real text"]
    assert files.label2id == {"None": 0, "ok": 1}
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n,ok\nfine,None\n")
    with pytest.raises(ConfigError, match="data row 1 is empty"):  # a truly empty cell is still refused
        sources.read_files(compose(*FILES, f"data.train_file={empty}", "task.num_labels=2"))
    with pytest.raises(ConfigError, match="data row 1 is empty"):  # and data.na_values brings pandas' words back
        sources.read_files(compose(*FILES, f"data.train_file={data}", "task.num_labels=2", "data.na_values=[NA]"))


def test_a_file_of_one_class_is_refused_without_advising_one_label(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n식대,a\n교통비,a\n")
    with pytest.raises(ConfigError, match="has one class \\('a'\\): a classifier needs rows of at least 2 classes"):
        sources.read_files(compose(*FILES, f"data.train_file={data}", "task.num_labels=2"))


# -- 6. a dataset that draws random numbers, with trainsweep.attach -------------------------------------------
class NoisyRows(torch.utils.data.Dataset):
    """Each row's tokens drawn at random when it is read, as an augmenting dataset does."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        n = int(torch.randint(4, 12, ()))
        return {"input_ids": torch.randint(3, 60, (n,)).tolist(), "labels": i % 3}


def _losses(attach: bool, out: Path) -> list[float]:
    from transformers import DataCollatorWithPadding, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForSequenceClassification
    from transformers import Trainer, TrainingArguments, set_seed
    from tokenizers import Tokenizer, models

    set_seed(0)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1}, "[UNK]")),
                                        pad_token="[PAD]", unk_token="[UNK]")
    model = Qwen3ForSequenceClassification(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                                       head_dim=16, num_labels=3, pad_token_id=0))
    args = TrainingArguments(output_dir=str(out), max_steps=6, per_device_train_batch_size=8, logging_steps=1,
                             report_to=[], use_cpu=True, seed=0, save_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=NoisyRows(), data_collator=DataCollatorWithPadding(tokenizer))
    if attach:
        from src import attach as attach_to

        attach_to(trainer, checks=False)
    trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def test_attach_reads_rows_ahead_without_moving_the_datasets_random_numbers(tmp_path):
    assert _losses(True, tmp_path / "attached") == _losses(False, tmp_path / "plain")


# -- 7. an interpolation that can't be resolved --------------------------------------------------------------
@pytest.mark.parametrize("value, reason", [("${oc.env:TRAINSWEEP_NOPE}", "Environment variable 'TRAINSWEEP_NOPE' not found"),
                                           ("${trainer.lr}", "Recursive interpolation detected")])
def test_an_unresolvable_value_is_one_line_exit_2(value, reason, tmp_path):
    proc = cli(*QUICK, f"trainer.lr={value}", f"hydra.run.dir={tmp_path}")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"config error: trainer.lr={value}: cannot be resolved") and reason in lines[0]
    assert not tmp_path.exists()  # no run directory holding nothing but Hydra's files


# -- 8. a model directory whose config.json is not a model's --------------------------------------------------
@pytest.mark.parametrize("content, message", [
    ("null", "holds null, not a JSON object of the model's settings"),
    ('{"model_type": "qwen3", "hidden_size": "big"}', "hidden_size is 'big', not a positive whole number"),
])
def test_a_model_config_json_that_is_no_models_is_one_line(tmp_path, content, message):
    (tmp_path / "config.json").write_text(content)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ConfigError, match=message):
        validate(compose("model=auto", f"model.name_or_path={tmp_path}"), cuda_available=False)


# -- warts ---------------------------------------------------------------------------------------------------
def test_the_working_directory_is_not_a_run_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.json").write_text("mine")
    with pytest.raises(ConfigError, match="is the working directory or a project's root"):
        report_files.check_run_dir(Path("."))
    with pytest.raises(ConfigError, match="project's root"):
        report_files.check_run_dir(ROOT)
    report_files.check_run_dir(tmp_path / "runs" / "one")


def test_a_run_directory_name_no_file_system_takes_is_one_line(tmp_path):
    proc = cli(*QUICK, f"hydra.run.dir={tmp_path / ('x' * 300)}")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "a path component of 300 bytes" in lines[0], proc.stderr[-1500:]


def test_ctrl_c_is_one_line_exit_130_and_no_traceback(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "src.run", *QUICK, "trainer.max_steps=500", "dataloader=basic",
                             "debug.collate_delay_ms=50", f"hydra.run.dir={tmp_path}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: (tmp_path / "config.yaml").exists() or proc.poll() is not None, seconds=120)
    time.sleep(5)  # into the build or the training: either way Ctrl-C must end it in one line
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "\ninterrupted: what finished is kept" in err


def test_a_killed_writers_temporary_files_are_removed_by_the_next_holder(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".report.json.{int(dead.stdout)}.tmp"
    stale.write_text("{")
    live = tmp_path / f".report.json.{os.getpid()}.tmp"
    live.write_text("{")
    with disk.lock(tmp_path):
        pass
    assert not stale.exists() and live.exists()  # a live writer's file is its own


def test_a_checkpoint_torch_wont_unpickle_is_not_answered_with_a_setting_trainsweep_lacks(tmp_path, monkeypatch):
    from transformers import Trainer

    def refuse(self, *args, **kwargs):
        raise RuntimeError("Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
                           "likely succeed")
    monkeypatch.setattr(Trainer, "train", refuse)
    rep = run(compose(*QUICK), tmp_path)
    assert rep["status"] == "error" and "remove that checkpoint, or train anew" in rep["error"]


def test_bitsandbytes_cpu_kernel_notice_does_not_reach_the_user(caplog):
    """bitsandbytes warns on import, on CPUs with AVX512-BF16, that its hub kernel can't load (issue 32's newcomer
    saw it on every CPU run, LoRA included): the logger it uses is kept to errors."""
    import logging

    import src.runner  # noqa: F401

    with caplog.at_level(logging.WARNING):
        logging.getLogger("bitsandbytes.backends.cpu.ops").warning("Failed to load CPU gemm_4bit_forward from kernels-community")
        logging.getLogger("bitsandbytes.backends.cpu.ops").error("a real error")
    assert [r.getMessage() for r in caplog.records] == ["a real error"]


# -- the drop-in on scripts nobody here wrote (issue 29: the parts fixed so far) ---------------------------------
def test_dir_of_the_package_shows_attach():
    import src

    assert {"attach", "TrainsweepCallback"} <= set(dir(src))


def _checks_of_attached(tmp_path, **args) -> list[dict]:
    """A plain classification Trainer with trainsweep attached: the report's checks."""
    from transformers import DataCollatorWithPadding, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForSequenceClassification
    from transformers import Trainer, TrainingArguments
    from tokenizers import Tokenizer, models

    from src import attach

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1}, "[UNK]")),
                                        pad_token="[PAD]", unk_token="[UNK]", eos_token="[UNK]")
    model = Qwen3ForSequenceClassification(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                                       head_dim=16, num_labels=3, pad_token_id=0))
    rows = [{"input_ids": list(range(3, 3 + 4 + i % 5)), "labels": i % 3} for i in range(32)]
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), max_steps=4, report_to=[], use_cpu=True,
                                                          save_strategy="no", per_device_train_batch_size=8, **args),
                      train_dataset=rows, data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    trainer.train()
    return json.loads((tmp_path / "trainsweep" / "report.json").read_text())["diagnostics"]


def test_a_scheduler_that_takes_kwargs_is_checked_with_them_and_a_check_that_cant_run_is_listed(tmp_path, monkeypatch):
    checks = _checks_of_attached(tmp_path / "a", lr_scheduler_type="cosine_with_min_lr",
                                 lr_scheduler_kwargs={"min_lr": 1e-6})
    assert {c["check"]: c["status"] for c in checks}["train.schedule"] == "pass"
    import src.checks.model

    def broken(*args, **kwargs):
        raise RuntimeError("this model's forward can't be probed")
    monkeypatch.setattr(src.checks.model, "model_checks", broken)
    monkeypatch.setattr("src.checks.preflight.model_checks", broken)
    checks = _checks_of_attached(tmp_path / "b")
    assert {"check": "model", "status": "not_run"}.items() <= next(c for c in checks if c["check"] == "model").items()
    assert sum(c["status"] != "not_run" for c in checks) >= 3  # the rest still judged
    from src.checks.results import summary as count
    assert count(checks).endswith("1 could not run")


def test_the_drop_in_judges_truncation_against_the_length_the_rows_were_cut_to():
    from src.dropin.reading import Rows, max_length_of

    class Tok:
        model_max_length = 512

    cut = Rows([{"input_ids": [5] * n} for n in [40, 128, 128, 90, 128, 128, 60]])  # a script's max_seq_length=128
    assert max_length_of(cut, {"strategy": "dynamic"}, Tok(), None) == 128
    uncut = Rows([{"input_ids": [5] * n} for n in [40, 128, 97, 90, 133, 61, 60]])
    assert max_length_of(uncut, {"strategy": "dynamic"}, Tok(), None) == 512
    even = Rows([{"input_ids": [5] * (4 + i % 13)} for i in range(96)])  # lengths 4..16, each as common: no cut
    assert max_length_of(even, {"strategy": "dynamic"}, Tok(), None) == 512
    # a TRL config's max_length (a script's --max_length 96) is the cut its trainer makes, whatever the rows show
    from types import SimpleNamespace

    assert max_length_of(uncut, {"strategy": "dynamic"}, Tok(), None, SimpleNamespace(max_length=96)) == 96
    assert max_length_of(uncut, {"strategy": "dynamic"}, Tok(), None, SimpleNamespace(max_length=None)) == 512


def test_an_evaluation_after_training_reaches_the_drop_ins_report(tmp_path):
    """HF's scripts evaluate after train() (--do_eval): the report said eval: null."""
    from transformers import DataCollatorWithPadding, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForSequenceClassification
    from transformers import Trainer, TrainingArguments
    from tokenizers import Tokenizer, models

    from src import attach

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1}, "[UNK]")),
                                        pad_token="[PAD]", unk_token="[UNK]")
    model = Qwen3ForSequenceClassification(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                                       head_dim=16, num_labels=3, pad_token_id=0))
    rows = [{"input_ids": list(range(3, 3 + 4 + i % 5)), "labels": i % 3} for i in range(32)]
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), max_steps=3, report_to=[], use_cpu=True,
                                                          save_strategy="no", per_device_train_batch_size=8),
                      train_dataset=rows, eval_dataset=rows[:8], data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer, checks=False)
    trainer.train()
    assert json.loads((tmp_path / "trainsweep" / "report.json").read_text())["eval"] is None
    metrics = trainer.evaluate()
    rep = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert rep["eval"]["step"] == 3 and rep["eval"]["final"]["loss"] == pytest.approx(metrics["eval_loss"])


def test_the_drop_in_flags_the_doubled_loss_of_a_classifier_under_gradient_accumulation(tmp_path):
    """run_glue with --gradient_accumulation_steps 2 logged loss 2.79 for 4 labels (ln 4 = 1.39) next to '11 pass'."""
    checks = {c["check"]: c for c in _checks_of_attached(tmp_path / "ga2", gradient_accumulation_steps=2)}
    assert checks["train.grad_accum_loss"]["status"] == "fail" and "2x too large" in checks["train.grad_accum_loss"]["hint"]
    checks = {c["check"]: c for c in _checks_of_attached(tmp_path / "ga1")}
    assert checks["train.grad_accum_loss"]["status"] == "pass"


def test_the_drop_ins_hints_speak_the_scripts_words():
    """'padding=grouped' means nothing to run_glue: the hint names what the script sets, and when its rows were
    padded while tokenising, that this must go first."""
    from src.checks.script_words import in_script_words

    checks = [{"check": "data.padding_waste", "status": "warn", "expected": "within 10 points of the least (packed: 2.0%)",
               "value": {"chosen": "longest", "max_length": 0.34, "longest": 0.27, "dynamic": 0.18, "grouped": 0.03,
                         "packed": 0.02}, "hint": "padding=longest computes 27% padding; padding=packed 2%."},
              {"check": "data.truncation", "status": "warn", "expected": "<= 5% of rows at data.max_length (128)",
               "value": {}, "hint": "raise data.max_length (now 128): the ends of these rows are cut"},
              {"check": "train.schedule", "status": "warn", "expected": "", "value": {}, "hint": "... shorten trainer.warmup_steps"}]
    hints = [c["hint"] for c in in_script_words(checks, padded_at_map_time=True)]
    assert "padding=longest" not in hints[0] and "padding=packed" not in hints[0] and "--pad_to_max_length False" in hints[0] and "DataCollatorWithFlattening" in hints[0]
    assert "trainsweep.speedup packs a classifier's" in hints[0]  # the flattening collator would drop its class
    assert "--max_seq_length; now 128" in hints[1] and "data.max_length" not in hints[1]
    assert hints[2].endswith("shorten warmup_steps (or warmup_ratio)")
    assert "--pad_to_max_length" not in in_script_words(checks, padded_at_map_time=False)[0]["hint"]
    # TRL's KTO refuses any sampling but sequential: it is not told to group rows by length, and its collator is named
    dynamic = [{**checks[0], "value": {**checks[0]["value"], "chosen": "dynamic", "packed": 0.05}}]
    kto = in_script_words(dynamic, False, "DataCollatorForUnpairedPreference", order_is_the_trainers=True)[0]["hint"]
    assert "group_by_length" not in kto and kto.startswith("now the collator padding each batch (DataCollatorForUnpairedPreference)")
    assert "group_by_length" in in_script_words(dynamic, False, "DataCollatorWithPadding")[0]["hint"]
    # ... and where grouping was the only better way (KTO's own script: dynamic 19%, grouped 3%, packed 38%), its
    # padding is the least it can have: no warning naming a choice it does not have
    only_grouping = [{**checks[0], "value": {"chosen": "dynamic", "max_length": 0.99, "longest": 0.34, "dynamic": 0.19,
                                             "grouped": 0.03, "packed": 0.38}}]
    judged = in_script_words(only_grouping, False, "DataCollatorForUnpairedPreference", order_is_the_trainers=True)[0]
    assert judged["status"] == "pass" and judged["hint"] == "" and "dynamic: 19.0%" in judged["expected"]
    assert in_script_words(only_grouping, False, "DataCollatorWithPadding")[0]["status"] == "warn"


def test_exit_now_keeps_the_exit_code_printed_output_and_logged_lines(tmp_path):
    """A finished run ends without the interpreter's teardown (seconds per process): what it printed without a
    newline, what it logged to a file, and its exit code all survive."""
    import subprocess
    import sys

    log = tmp_path / "run.log"
    code = ("import logging, sys; from src.base import children; "
            f"logging.basicConfig(filename={str(log)!r}, level=logging.INFO); logging.info('logged line'); "
            "print('printed', end=''); sys.stderr.write('to stderr'); children.exit_now(3)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "printed", "to stderr")
    assert "logged line" in log.read_text()
