"""Local text data: each format, tokenisation cached on disk, label mapping, eval metrics, every bad input
as one line and exit 2, and resuming an interrupted run from its checkpoint."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from src.config.errors import ConfigError
from src.data.tokenize import tokenize_files, train_tokenizer
from src.run import run
from src.train.checkpoints import STAMP
from tests.conftest import QUICK, ROOT, cli, compose, read_report

ACCOUNTS = ROOT / "tests/data/accounts.csv"
DIALOGUES = ROOT / "tests/data/dialogues.jsonl"
FILES = ["data=files", "task.num_labels=5", "logger=none"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets its own tokenisation cache, so cache hits are the test's own."""
    from src.base import files as disk

    monkeypatch.setattr(disk, "CACHE", tmp_path / "cache")


@pytest.fixture
def formats(tmp_path) -> dict:
    df = pd.read_csv(ACCOUNTS)
    paths = {"csv": ACCOUNTS, "jsonl": tmp_path / "accounts.jsonl", "parquet": tmp_path / "accounts.parquet",
             "tsv": tmp_path / "accounts.tsv"}
    df.to_json(paths["jsonl"], orient="records", lines=True, force_ascii=False)
    df.to_parquet(paths["parquet"])
    df.to_csv(paths["tsv"], sep="\t", index=False)
    return paths


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "tsv"])
def test_each_format_trains(fmt, formats, tmp_path):
    rep = run(compose(*QUICK, *FILES, f"data.train_file={formats[fmt]}"), tmp_path / "run")
    assert rep["status"] == "ok", rep["error"]
    assert rep["data"]["lengths"]["rows"] == 40
    assert json.loads((tmp_path / "run" / "labels.json").read_text()) == {
        "복리후생비": 0, "소모품비": 1, "여비교통비": 2, "접대비": 3, "통신비": 4}


def test_tokenisation_is_cached_and_the_second_run_says_so(tmp_path):
    big = tmp_path / "big.csv"
    pd.concat([pd.read_csv(ACCOUNTS)] * 500).to_csv(big, index=False)  # 20,000 rows
    cfg = compose(*QUICK, *FILES, f"data.train_file={big}")
    tokenizer = train_tokenizer(cfg, 8000)
    _, _, first = tokenize_files(cfg, tokenizer)
    _, _, second = tokenize_files(cfg, tokenizer)
    cold, warm = first["tokenize"]["train"], second["tokenize"]["train"]
    assert (cold["cache_hit"], warm["cache_hit"]) == (False, True) and cold["rows"] == 20_000
    assert warm["seconds"] < cold["seconds"] / 3
    changed = compose(*QUICK, *FILES, f"data.train_file={big}", "data.max_length=16")
    assert tokenize_files(changed, tokenizer)[2]["tokenize"]["train"]["cache_hit"] is False  # a new setting: tokenised anew


def test_integer_labels_are_used_as_ids_and_checked(tmp_path):
    path = tmp_path / "ints.csv"
    df = pd.read_csv(ACCOUNTS)
    df["label"] = df.index % 5
    df.to_csv(path, index=False)
    cfg = compose(*QUICK, *FILES, f"data.train_file={path}")
    train, _, info = tokenize_files(cfg, train_tokenizer(cfg, 8000))
    assert info["label2id"] is None and train["labels"][:6] == [0, 1, 2, 3, 4, 0]
    with pytest.raises(ConfigError, match=r"40 labels outside \[0, 3\) \(first: row 0, label 0\)|labels outside \[0, 3\)"):
        cfg = compose(*QUICK, *FILES, f"data.train_file={path}", "task.num_labels=3")
        tokenize_files(cfg, train_tokenizer(cfg, 8000))


def test_classification_eval_reports_accuracy_and_f1(tmp_path):
    rep = run(compose(*QUICK, *FILES, f"data.train_file={ACCOUNTS}", f"data.eval_file={ACCOUNTS}",
                      "trainer.eval_steps=2"), tmp_path)
    final = rep["eval"]["final"]
    assert {"loss", "accuracy", "macro_f1"} <= set(final) and 0 <= final["accuracy"] <= 1
    assert rep["eval"]["step"] == 4 and rep["step_time_s"]["n"] == 2  # the step after an eval is not timed


def test_seq2seq_eval_reports_rouge_on_korean_text(tmp_path, local_model_dir):
    rep = run(compose(*QUICK, "task=seq2seq", "model=tiny-bart", "data=files", f"data.train_file={DIALOGUES}",
                      f"data.eval_file={DIALOGUES}", "data.text_column=dialogue", "data.target_column=summary",
                      "trainer.eval_steps=4", "trainer.generation_max_length=8", "logger=none"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    final = rep["eval"]["final"]
    assert {"rouge1", "rouge2", "rougeL"} <= set(final)


def test_rouge_scores_korean_words():
    from types import SimpleNamespace

    from src.train.metrics import Rouge

    class Words:  # a stand-in tokenizer: ids are word numbers
        vocab = ["<pad>", "거래처", "접대", "식사"]

        def decode(self, ids, skip_special_tokens=True):
            return " ".join(self.vocab[i] for i in ids)

    scores = Rouge(Words(), pad_id=0)(SimpleNamespace(predictions=[[1, 3, 0]], label_ids=[[1, 2, 3, -100]]))
    assert scores["rouge1"] == pytest.approx(0.8) and scores["rouge2"] == 0.0


BAD = [
    (["data.train_file=/no/such.csv"], "data.train_file=/no/such.csv: no such file"),
    (["data.train_file=README.md"], "data.train_file=README.md: unknown extension; allowed: .csv, .tsv, .json, .jsonl, .parquet"),
    ([f"data.train_file={ACCOUNTS}", "data.text_column=body"], "data.text_column=body: no such column; the file has: text, label"),
]


@pytest.mark.parametrize("args,message", BAD, ids=["missing", "extension", "column"])
def test_bad_files_are_one_line_and_exit_2(args, message, tmp_path):
    proc = cli(*FILES, *args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    # datasets' own progress bar ("Generating train split: 3 examples [...]") prints while a file is read cold
    lines = [l for l in proc.stderr.replace("\r", "\n").splitlines() if l.strip() and " examples" not in l]
    assert len(lines) == 1 and lines[0] == f"config error: {message}", proc.stderr[-2000:]


def test_a_label_count_other_than_num_labels_is_one_line_naming_the_override(tmp_path):
    """task.num_labels=280 (the account-tax count) against the 5-class file: once a 5-way head trained silently
    while the report's uniform guess said ln(280). Unset, the file's own 5 classes are the head, from the CLI."""
    proc = cli("data=files", f"data.train_file={ACCOUNTS}", "task.num_labels=280", "logger=none", f"hydra.run.dir={tmp_path}")
    lines = [l for l in proc.stderr.replace("\r", "\n").splitlines() if l.strip() and " examples" not in l]
    assert proc.returncode == 2 and lines == [f"config error: task.num_labels=280: {ACCOUNTS} has 5 label names in "
                                              "column label, not 280; set task.num_labels=5 (or leave it unset: the "
                                              "data's count)"], proc.stderr[-2000:]
    rep = run(compose("data=files", f"data.train_file={ACCOUNTS}", *QUICK), tmp_path / "unset")
    assert rep["status"] == "ok" and rep["resolved"]["num_labels"] == 5 and rep["data"]["num_labels"] == 5
    assert rep["loss"]["expected_initial"] == pytest.approx(math.log(5))
    ids = tmp_path / "ids.csv"
    ids.write_text("text,label\n식대,0\n교통비,1\n회식,4\n")
    cfg = compose(*FILES, f"data.train_file={ids}", "task.num_labels=280")
    with pytest.raises(ConfigError, match=rf"^task.num_labels=280: {ids} has label ids 0..4: 5 classes, not 280; "
                                          r"set task.num_labels=5 \(or leave it unset: the data's count\)$"):
        tokenize_files(cfg, train_tokenizer(cfg, 8000))
    fine = compose(*FILES, f"data.train_file={ids}")
    assert tokenize_files(fine, train_tokenizer(fine, 8000))[0]["labels"] == [0, 1, 4]


def test_eval_label_ids_past_the_training_classes_are_refused(tmp_path):
    train, other = tmp_path / "train.csv", tmp_path / "eval.csv"
    train.write_text("text,label\n식대,0\n교통비,1\n")
    other.write_text("text,label\n회식,2\n")
    cfg = compose(*FILES, f"data.train_file={train}", f"data.eval_file={other}", "task.num_labels=2")
    with pytest.raises(ConfigError, match="has labels the training file does not: '2'$"):
        tokenize_files(cfg, train_tokenizer(cfg, 8000))


def test_empty_file_and_undecodable_bytes_name_the_problem(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n")
    cfg = compose(*QUICK, *FILES, f"data.train_file={empty}")
    with pytest.raises(ConfigError, match="the file has no rows"):
        tokenize_files(cfg, None)
    cp949 = tmp_path / "cp949.csv"
    lines = ACCOUNTS.read_text().splitlines()
    cp949.write_bytes(("\n".join(lines[:5]) + "\n").encode() + (lines[5] + "\n").encode("cp949") + b"x,y\n")
    with pytest.raises(ConfigError, match=r"not UTF-8 at line 6 \(byte \d+\); re-encode it, e.g. iconv -f cp949 -t utf-8"):
        tokenize_files(compose(*QUICK, *FILES, f"data.train_file={cp949}"), None)


def test_eval_labels_unknown_to_training_are_refused(tmp_path):
    other = tmp_path / "other.csv"
    pd.DataFrame({"text": ["새 계정의 지출"], "label": ["새계정"]}).to_csv(other, index=False)
    cfg = compose(*QUICK, *FILES, f"data.train_file={ACCOUNTS}", f"data.eval_file={other}")
    with pytest.raises(ConfigError, match="has labels the training file does not: '새계정'$"):
        tokenize_files(cfg, train_tokenizer(cfg, 8000))


def test_an_interrupted_run_resumes_to_the_same_final_step(tmp_path):
    args = [*QUICK, "trainer.max_steps=30", "trainer.save_steps=5", "debug.collate_delay_ms=100",
            "dataloader=basic", f"hydra.run.dir={tmp_path}"]
    proc = subprocess.Popen([sys.executable, "-m", "src.run", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    # the stamp is the last file a save writes (on_save, after the Trainer's own): killed before it, checkpoint-10 is
    # incomplete and a resume rightly takes checkpoint-5, which failed this test once on a fresh clone
    while not (tmp_path / "checkpoints" / "checkpoint-10" / STAMP).exists() and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # as a preempted job dies: no report, no goodbye
    proc.wait()
    assert not (tmp_path / "report.json").exists()
    done = cli(*args, "resume=true")
    assert done.returncode == 0, done.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok" and rep["resumed_from"].split("checkpoint-")[-1] in {"10", "15", "20", "25"}
    history = [step for step, _ in rep["loss"]["curve"]]
    assert history[-1] == 30 and "resumed" in done.stdout
    assert rep["step_time_s"]["n"] > 0  # measured from where this process started


def test_resume_without_a_checkpoint_is_a_config_error(tmp_path):
    proc = cli(*QUICK, "resume=true", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2 and "resume=True: no complete checkpoint in" in proc.stderr


def test_resume_skips_a_checkpoint_the_kill_left_incomplete(tmp_path):
    from src.train.checkpoints import last_checkpoint

    import zipfile

    from safetensors.numpy import save_file

    for step, complete in ((5, True), (10, True), (15, False)):
        ckpt = tmp_path / "checkpoints" / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        if complete:  # what the Trainer writes, the stamp trainsweep adds, and trainer_state.json last
            for name in ("optimizer.pt", "scheduler.pt"):
                zipfile.ZipFile(ckpt / name, "w").close()
            save_file({}, str(ckpt / "adapter_model.safetensors"))
            for name in ("adapter_config.json", "trainsweep_config.json", "trainer_state.json"):
                (ckpt / name).write_text("{}")
    assert last_checkpoint(tmp_path).endswith("checkpoint-10")
