"""Every bad input one line (issue 15): data files replaced in place are read anew, text cells that are not
strings, fractional or mixed labels, broken model directories, empty and broken files; and W&B online
without a network costs a bounded wait."""
import json
import logging
import os
import re
import subprocess
import time

import pandas as pd
import pytest

from src.base import files as disk
from src.config.errors import ConfigError
from src.data.tokenize import tokenize_files, train_tokenizer
from src.run import run
from tests.conftest import QUICK, cli, compose

FILES = ["data=files", "logger=none"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "CACHE", tmp_path / "cache")
    # each test's files are new to the cache: datasets' "Generating train split" bar would join the one line
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def _one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


# -- 6. the data cache follows the content ---------------------------------------------------------------------
def test_a_file_replaced_with_the_same_mtime_and_size_is_read_anew(tmp_path, monkeypatch):
    old, new, data = tmp_path / "old.csv", tmp_path / "new.csv", tmp_path / "data.csv"
    old.write_text("text,label\nalpha one,x\nbeta two,y\nalpha two,x\n")
    new.write_text("text,label\ngamma six,p\nzeta two,q\ngamma ten,p\n")
    assert old.stat().st_size == new.stat().st_size
    stamp = old.stat().st_mtime_ns
    os.utime(new, ns=(stamp, stamp))
    subprocess.run(["cp", "-p", str(old), str(data)], check=True)
    hashed = []
    monkeypatch.setattr(disk, "_hasher", lambda real=disk._hasher: hashed.append(1) or real())
    cfg = compose(*QUICK, *FILES, f"data.train_file={data}", "task.num_labels=2")
    tokenizer = train_tokenizer(cfg, 8000)
    train, _, info = tokenize_files(cfg, tokenizer)
    assert info["label2id"] == {"x": 0, "y": 1} and len(hashed) == 1  # unchanged: the remembered hash serves
    subprocess.run(["cp", "-p", str(new), str(data)], check=True)  # other rows, same name, size and mtime
    assert (data.stat().st_mtime_ns, data.stat().st_size) == (stamp, old.stat().st_size)
    train, _, info = tokenize_files(cfg, tokenizer)
    assert info["label2id"] == {"p": 0, "q": 1} and len(hashed) == 2
    assert tokenizer.decode(train[0]["input_ids"]) == "gamma six"


# -- 7. text cells ----------------------------------------------------------------------------------------------
def test_text_cells_that_are_not_strings_are_one_line_and_exit_2(tmp_path):
    nan = tmp_path / "nan.csv"
    nan.write_text("text,label\n식대 지출,a\n,b\n교통비,a\n")
    message = _one_line(cli(*FILES, "task.num_labels=2", f"data.train_file={nan}", f"hydra.run.dir={tmp_path / 'a'}"))
    # the second data row, line 3 of the file: a newcomer read "row 1" as the first
    assert message == ("config error: data.text_column=text: data row 2 is empty (null/NaN; rows counted from 1, a "
                       "CSV's header apart): every text cell must be a string; fill or drop that row")
    numbers = tmp_path / "numbers.parquet"  # the same check, in this process (the command line's one line: above)
    pd.DataFrame({"text": [7, 8, 9], "label": [0, 1, 0]}).to_parquet(numbers)
    cfg = compose(*FILES, "task.num_labels=2", f"data.train_file={numbers}")
    with pytest.raises(ConfigError) as err:
        tokenize_files(cfg, train_tokenizer(cfg, 8000))
    assert str(err.value) == ("data.text_column=text: data row 1 is int 7, not text (rows counted from 1, a CSV's "
                              "header apart; the column holds Value('int64'))")


def test_rows_with_empty_text_are_dropped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "empty.jsonl"
    rows = [{"text": "식대 지출", "label": "a"}, {"text": "", "label": "b"}, {"text": "교통비", "label": "a"},
            {"text": "회식비", "label": "b"}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    rep = run(compose(*QUICK, *FILES, f"data.train_file={path}", "task.num_labels=2", "batch=2"), tmp_path / "run")
    assert rep["status"] == "ok" and rep["data"]["lengths"]["rows"] == 3
    assert "train: 1 of 4 rows have empty text (0 tokens; first: row 1): dropped" in caplog.text
    assert all(c["status"] != "fail" for c in rep["diagnostics"])  # no misleading pooling failure


# -- 8. labels ----------------------------------------------------------------------------------------------------
def test_whole_number_float_labels_are_ids_and_fractional_ones_are_refused(tmp_path):
    floats = tmp_path / "floats.csv"
    floats.write_text("text,label\n식대 지출,0.0\n교통비,1.0\n회식,10.0\n택시,2.0\n")
    cfg = compose(*QUICK, *FILES, f"data.train_file={floats}", "task.num_labels=11")
    train, _, info = tokenize_files(cfg, train_tokenizer(cfg, 8000))
    assert info["label2id"] is None and train["labels"] == [0, 1, 10, 2]  # not text-sorted classes
    half = tmp_path / "half.csv"
    half.write_text("text,label\n식대 지출,1.0\n교통비,0.5\n")
    cfg = compose(*QUICK, *FILES, f"data.train_file={half}", "task.num_labels=2")
    with pytest.raises(ConfigError, match=r"^data.label_column=label: row 1 has 0.5: a class label is a whole number"):
        tokenize_files(cfg, train_tokenizer(cfg, 8000))


def test_mixed_number_and_name_labels_are_one_line_and_exit_2(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"text": "식대", "label": 1}\n{"text": "교통", "label": "a"}\n{"text": "회식", "label": 2}\n')
    message = _one_line(cli(*FILES, "task.num_labels=3", f"data.train_file={path}", f"hydra.run.dir={tmp_path / 'r'}"))
    assert message == ("config error: data.label_column=label: mixes numbers and names (row 0: 1, row 1: 'a'); "
                       "use one or the other")


# -- 9. model directories -----------------------------------------------------------------------------------------
def _model_dir(path, config_text: str, weights: bool = True):
    path.mkdir()
    (path / "config.json").write_text(config_text)
    if weights:
        import torch
        from safetensors.torch import save_file

        save_file({"w": torch.zeros(2)}, str(path / "model.safetensors"))
    return path


@pytest.mark.parametrize("case", ["corrupt config.json", "unknown model_type", "no weights"])
def test_a_bad_model_directory_is_one_line_naming_the_file(case, tmp_path):
    path = tmp_path / "model"
    if case == "corrupt config.json":
        _model_dir(path, '{"model_type": "qwen3", ')
        expected = f"{path}/config.json is not valid JSON (Expecting property name enclosed in double quotes"
    elif case == "unknown model_type":
        _model_dir(path, '{"model_type": "nosuchmodel"}')
        expected = f"{path}/config.json: model_type 'nosuchmodel' is unknown to transformers"
    else:
        _model_dir(path, '{"model_type": "qwen3"}', weights=False)
        expected = "no weights there (model.safetensors, pytorch_model.bin or a sharded index)"
    message = _one_line(cli(*QUICK, "model=auto", f"model.name_or_path={path}", f"hydra.run.dir={tmp_path / 'r'}"))
    assert message.startswith(f"config error: model.name_or_path={path}: ") and expected in message


# -- warts: empty and broken files, W&B without a network -----------------------------------------------------------
def test_an_empty_file_says_no_rows_and_a_broken_json_line_is_named(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError, match=r"the file has no rows \(it is empty, 0 bytes\)"):
        tokenize_files(compose(*QUICK, *FILES, f"data.train_file={empty}"), None)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "a", "label": 0}\n{"text": "b", "label": 1}\n{"text": "c", label: 1}\n')
    with pytest.raises(ConfigError, match=r"broken.jsonl: line 3 is not JSON: Expecting property name"):
        tokenize_files(compose(*QUICK, *FILES, f"data.train_file={broken}"), None)


def test_wandb_online_without_a_network_gives_up_in_its_time_box(tmp_path, monkeypatch, caplog):
    from src.report.loggers import _init

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "3")
    cfg = compose(*QUICK, "logger=wandb", "logger.mode=online")
    start = time.perf_counter()
    with caplog.at_level(logging.INFO):
        assert _init(cfg, tmp_path) is None
    assert time.perf_counter() - start < 30  # wandb's own time-out is 90 s
    assert "waiting up to 3 s for the W&B server" in caplog.text
    assert "no answer from the W&B server within 3 s; logger.mode=offline logs locally" in caplog.text


def test_wandb_init_is_time_boxed_by_default(tmp_path, monkeypatch):
    import wandb

    from src.report.loggers import _init

    seen = {}
    monkeypatch.delenv("WANDB_INIT_TIMEOUT", raising=False)
    monkeypatch.setattr(wandb, "init", lambda **kwargs: seen.update(kwargs))
    _init(compose(*QUICK, "logger=wandb", "logger.mode=online"), tmp_path)
    assert seen["settings"].init_timeout == 30  # wandb's own default waits 90 s



# -- issue 49's warts: values that gave a traceback, exit 1, or passed for something else --------------------------
@pytest.mark.parametrize("overrides, key", [
    (["trainer.seed=-1"], "trainer.seed=-1"), (["data.seed=-1"], "data.seed=-1"),
    (["data.max_train_samples=-1"], "data.max_train_samples=-1"),
    (["data.max_train_samples=0"], "data.max_train_samples=0"),  # was taken as "all rows"
    (["env.num_threads=-1"], "env.num_threads=-1"),
    (["model.arch.num_hidden_layers=0"], "model.arch.num_hidden_layers=0"),
    (["model.arch.hidden_size=-1"], "model.arch.hidden_size=-1"),
    (["peft.dropout=1.5"], "peft.dropout=1.5"), (["data.length_min=0", "data.length_max=0"], "data.length_min=0"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_an_out_of_range_value_is_one_line_naming_its_key_before_anything_is_built(overrides, key):
    from src.config.schema import validate

    with pytest.raises(ConfigError) as err:
        validate(compose(*QUICK, *overrides), False)
    assert str(err.value).startswith(f"{key}: ")


def test_an_out_of_range_seed_is_one_line_and_exit_2_from_the_command_line(tmp_path):
    assert _one_line(cli(*QUICK, "trainer.seed=-1", f"hydra.run.dir={tmp_path}")).startswith("config error: trainer.seed=-1: ")


def test_a_trainer_arg_trainsweep_sets_is_refused_before_the_data_is_built():
    from src.config.schema import validate

    with pytest.raises(ConfigError, match=r"^trainer.args.fp16=True: trainsweep sets it: use precision$"):
        validate(compose(*QUICK, "trainer.args.fp16=true"), False)  # was refused by the Trainer's build, after the data


def test_a_directory_a_fifo_or_a_symlink_loop_as_the_data_file_says_what_it_is(tmp_path):
    from src.config.data import check_file

    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    (tmp_path / "dir.csv").mkdir()
    for path, said in ((tmp_path / "dir.csv", "is a directory, not a file"),
                       (fifo, "not a regular file (a FIFO, socket or device)"),
                       (loop, "a symlink that leads to no file (a loop, or its target is gone)"),
                       (tmp_path / "none.csv", "no such file")):  # was "no such file" for all four
        with pytest.raises(ConfigError, match=rf"^data.train_file={path}: {re.escape(said)}"):
            check_file("data.train_file", str(path))


@pytest.mark.parametrize("value", ["abc", "-5", "nan"])
def test_a_wandb_init_timeout_that_is_no_positive_number_keeps_the_default_and_says_so(value, tmp_path, monkeypatch, caplog):
    import wandb

    from src.report.loggers import _init

    seen = {}
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", value)  # `abc` failed the run
    monkeypatch.setattr(wandb, "init", lambda **kwargs: seen.update(kwargs) or "a run")
    assert _init(compose(*QUICK, "logger=wandb", "logger.mode=online"), tmp_path) == "a run"
    assert seen["settings"].init_timeout == 30
    assert f"WANDB_INIT_TIMEOUT={value} is no positive number of seconds: waiting 30 s" in caplog.text
