"""trainsweep in a user's own Trainer script (src/dropin/), from the package a user installs: a wheel of this
checkout holding `trainsweep` and its config groups, no top-level `src`, and the `trainsweep` command."""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A plain Hugging Face fine-tuning script: a tiny Qwen3 classifier built from its config (attention dropout on,
# so a check that drew random numbers would change the losses), a word-level tokenizer made from the texts,
# made-up rows, an evaluation every 8 steps.
USER_SCRIPT = '''
import sys

from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorWithPadding, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForSequenceClassification,
                          Trainer, TrainingArguments, set_seed)

set_seed(0)
words = "the a tax account paid due late refund form bank office invoice credit debit fee rate".split()
texts = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(4 + i % 13)) for i in range(96)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]"] + words)}, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")
data = Dataset.from_dict({"text": texts, "label": [i % 4 for i in range(len(texts))]})
data = data.map(lambda batch: tokenizer(batch["text"]), batched=True)
model = Qwen3ForSequenceClassification(Qwen3Config(
    vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
    num_key_value_heads=1, head_dim=16, num_labels=4, pad_token_id=tokenizer.pad_token_id, attention_dropout=0.1))
args = TrainingArguments(output_dir=sys.argv[1], max_steps=16, per_device_train_batch_size=8, learning_rate=1e-3,
                         logging_steps=1, eval_strategy="steps", eval_steps=8, report_to=[], use_cpu=True, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=data.select(range(16)),
                  data_collator=DataCollatorWithPadding(tokenizer), processing_class=tokenizer)
trainer.train()
print("losses", [entry["loss"] for entry in trainer.state.log_history if "loss" in entry])
'''
ADDED = "import trainsweep\ntrainsweep.attach(trainer)\n"  # the two lines a user adds


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """`pip wheel .` of a copy of this checkout, which it leaves as it found it (no build/, no egg-info)."""
    tmp = tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md", "scripts/build_backend.py"):
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp / name)
    for name in ("src", "conf", "hydra_plugins"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(p.name for p in tmp.iterdir())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp / "dist"), str(tmp)], check=True, capture_output=True, timeout=300)
    assert sorted(p.name for p in tmp.iterdir() if p.name != "dist") == before  # the build's scratch is gone
    return next((tmp / "dist").glob("trainsweep-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed. It reads torch and the rest from this interpreter's site-packages
    (a .pth file; no download), but not this venv's editable install, so neither `src` nor this checkout is
    importable there: only what the wheel installed."""
    path = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return path


def test_wheel_installs_trainsweep_and_no_src(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.startswith("trainsweep-")} == {"trainsweep", "hydra_plugins"}
    assert "trainsweep/run.py" in names and "trainsweep/dropin/callback.py" in names
    # Every module of src/ ships (a package missing from pyproject's list would fail only once installed).
    assert {f"trainsweep/{p.relative_to(ROOT / 'src')}" for p in (ROOT / "src").rglob("*.py")} <= set(names)
    # Every config group ships inside the package, where the installed run finds it.
    assert {f"trainsweep/conf/{p.relative_to(ROOT / 'conf')}" for p in (ROOT / "conf").rglob("*.yaml")} <= set(names)
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert re.search(r"^trainsweep = trainsweep\.run:cli$", entry, re.M)
    for name in names:  # nothing installed imports a package the wheel doesn't have
        if name.endswith(".py"):
            text = zipfile.ZipFile(wheel).read(name).decode()
            assert not re.search(r"^\s*(from|import) src\b", text, re.M), name


def test_the_trainsweep_command_is_python_m_src_run(venv, tmp_path):
    bin_ = venv / "bin"
    assert subprocess.run([str(bin_ / "python"), "-c", "import src"], cwd=tmp_path, capture_output=True).returncode == 1
    help_ = subprocess.run([str(bin_ / "trainsweep"), "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert help_.returncode == 0 and help_.stdout.startswith("trainsweep [GROUP=OPTION ...]")
    assert "padding:" in help_.stdout  # the groups come from the config inside the installed package
    bad = subprocess.run([str(bin_ / "trainsweep"), "batch.size=0"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "config error: batch.size=0: must be a positive integer" in bad.stderr
    run = subprocess.run([str(bin_ / "trainsweep"), "model=tiny", "trainer.max_steps=2", "data.size=64", "logger=none",
                          "hydra.run.dir=run"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["status"] == "ok" and report["loss"]["initial"] is not None
    assert report["config_hash"]  # computed from the installed package (no git checkout there)


def _run_script(venv: Path, script: Path, out: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(venv / "bin" / "python"), str(script), str(out)], cwd=script.parent,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_two_added_lines_give_a_plain_trainer_script_the_report(venv, tmp_path):
    assert USER_SCRIPT.count("trainer.train()") == 1
    plain, measured = tmp_path / "plain.py", tmp_path / "measured.py"
    plain.write_text(USER_SCRIPT)
    measured.write_text(USER_SCRIPT.replace("trainer.train()", ADDED + "trainer.train()"))

    before = _run_script(venv, plain, tmp_path / "out_plain")
    assert "trainsweep" not in before.stdout and not (tmp_path / "out_plain" / "trainsweep").exists()
    after = _run_script(venv, measured, tmp_path / "out_measured")

    # Nothing else changed: the same losses, step for step, bit for bit (the checks' forward kept every RNG).
    losses = [line for line in before.stdout.splitlines() if line.startswith("losses")]
    assert len(losses) == 1 and losses == [line for line in after.stdout.splitlines() if line.startswith("losses")]

    out = tmp_path / "out_measured" / "trainsweep"
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "ok" and (out / "report.md").read_text().startswith("# trainsweep run")
    assert f"trainsweep report: {out / 'report.json'}" in after.stdout  # default: <output_dir>/trainsweep
    for row in ("throughput", "verdict", "diagnostics", "loss"):
        assert re.search(rf"^  {row} ", after.stdout, re.M), row  # the summary src.run prints
    # Derived from the Trainer, not from a trainsweep config:
    config = report["config"]
    assert config["task"] == {"name": "classification", "num_labels": 4}
    assert config["batch"]["size"] == 8 and config["trainer"]["max_steps"] == 16 and config["padding"]["strategy"] == "dynamic"
    # Real tokens, counted on the training micro-batches only: 8 rows per step of the window (the two
    # evaluations' batches are not in it), each row 4 to 16 attended tokens, fewer than the padded positions.
    tokens, steps = report["tokens"], report["step_time_s"]["n"]
    assert steps >= 9 and tokens["samples"] == 8 * (16 - report["step_time_s"]["warmup_steps"])
    assert 4 * tokens["samples"] <= tokens["real"] <= 16 * tokens["samples"] and tokens["real"] < tokens["all"]
    assert report["throughput"]["real_tokens_per_s"] > 0 and report["throughput"]["real_tokens_per_s_low"] is not None
    assert report["verdict"]["bottleneck"] in ("memory", "data", "host", "compute") and report["verdict"]["reasons"]
    # The preflight checks ran on the user's model, collator and rows.
    checks = {c["check"]: c["status"] for c in report["diagnostics"]}
    assert {"tokenizer.pad_token", "data.labels_in_range", "data.padding_waste", "model.pooling", "model.initial_loss",
            "train.grad_norm", "train.schedule"} <= set(checks)
    assert checks["model.pooling"] == "pass" and checks["data.labels_in_range"] == "pass"


def test_the_launcher_measures_a_script_nobody_edited(venv, tmp_path):
    """`trainsweep measure -- python train.py`: the same losses as the script alone, the report, the command's exit
    code, and a sitecustomize of the environment's own that still runs (the launcher's only chains to it)."""
    script = tmp_path / "train.py"
    script.write_text(USER_SCRIPT)
    theirs = tmp_path / "their_site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nopen(os.environ['MARK'], 'a').write('ran\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(theirs), "MARK": str(tmp_path / "mark")}
    plain = subprocess.run([str(venv / "bin" / "python"), str(script), str(tmp_path / "plain")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
    measured = subprocess.run([str(venv / "bin" / "trainsweep"), "measure", "--", str(venv / "bin" / "python"), str(script),
                               str(tmp_path / "measured")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0 and measured.returncode == 0, measured.stderr[-3000:]
    losses = lambda p: [line for line in p.stdout.splitlines() if line.startswith("losses")]  # noqa: E731
    assert losses(plain) and losses(plain) == losses(measured)
    report = tmp_path / "measured" / "trainsweep" / "report.json"
    assert json.loads(report.read_text())["status"] == "ok"
    assert f"1 report(s)\n  {report}" in measured.stderr
    assert (tmp_path / "mark").read_text() == "ran\n" * 3  # theirs ran in the plain run, the launcher and its child
    failing = subprocess.run([str(venv / "bin" / "trainsweep"), "measure", "--", str(venv / "bin" / "python"), "-c",
                              "raise SystemExit(3)"], capture_output=True, text=True, timeout=120)
    assert failing.returncode == 3  # the command's own exit code
    nothing = subprocess.run([str(venv / "bin" / "trainsweep"), "measure"], capture_output=True, text=True, timeout=120)
    assert nothing.returncode == 2 and "no command given" in nothing.stderr


def test_trls_own_sft_script_runs_unmodified_through_the_launcher(venv, tmp_path):
    """TRL's installed trl/scripts/sft.py, its own arguments, a local model and data set: measured with a report."""
    pytest.importorskip("trl")
    import trl
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    words = "the a tax account paid due late refund form bank office invoice credit debit fee rate".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]"] + words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")
    tokenizer.save_pretrained(tmp_path / "model")
    Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1, head_dim=16, pad_token_id=0,
                                 eos_token_id=2)).save_pretrained(tmp_path / "model")
    (tmp_path / "data").mkdir()
    rows = [{"text": " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(4 + i % 13))} for i in range(64)]
    (tmp_path / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sft = Path(trl.__file__).parent / "scripts" / "sft.py"
    proc = subprocess.run([str(venv / "bin" / "trainsweep"), "measure", "--", str(venv / "bin" / "python"), str(sft),
                           "--model_name_or_path", "model", "--dataset_name", "data", "--output_dir", "out",
                           "--max_steps", "8", "--per_device_train_batch_size", "4", "--logging_steps", "1",
                           "--report_to", "none", "--save_strategy", "no", "--bf16", "false", "--use_cpu"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "trainsweep" / "report.json").read_text())
    assert report["status"] == "ok" and report["config"]["task"]["name"] == "causal_lm"
    assert report["tokens"]["loss"] > 0 and report["tokens"]["real"] > 0
    checks = {c["check"]: c["status"] for c in report["diagnostics"]}
    assert not [name for name, status in checks.items() if status in ("fail", "not_run")], checks
