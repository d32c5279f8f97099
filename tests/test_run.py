"""End to end: every cheap option trains a few steps in-process; each task runs from the command line
and learns; a 4-point sweep runs; a local model directory trains with its own weights and tokenizer."""
import math
from pathlib import Path

import pytest
import torch

from src import env, models
from src.run import run
from tests.conftest import QUICK, cli, compose, read_report
from tests.test_config import CPU_REFUSES, GPU_ONLY_PACKAGE, NEEDS, OPTIONS

BIG = {"qwen3", "llama3.2-3b", "kobart", "solar-10.7b", "polyglot-ko-12.8b", "kullm-v2", "auto"}
RUNNABLE = [(g, o) for g, o in OPTIONS
            if not (g == "model" and o in BIG) and (g, o) not in CPU_REFUSES and (g, o) not in GPU_ONLY_PACKAGE]


@pytest.mark.parametrize("group,option", RUNNABLE, ids=[f"{g}={o}" for g, o in RUNNABLE])
def test_option_trains(group, option, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = compose(*QUICK, f"{group}={option}", *NEEDS.get((group, option), []))
    rep = run(cfg, tmp_path)
    assert rep["status"] == "ok", rep.get("error")
    assert rep["throughput"]["real_tokens_per_s"] > 0
    assert rep["step_time_s"]["n"] == 3
    assert math.isfinite(rep["loss"]["final"])
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.md").exists()
    if option == "csv":
        assert (tmp_path / "metrics.csv").read_text().startswith("loss,")


def _losses(rep):
    return [loss for _, loss in rep["loss"]["curve"]]


@pytest.mark.parametrize("args", [[], ["task=causal_lm"], ["task=seq2seq", "model=tiny-bart"]],
                         ids=["classification", "causal_lm", "seq2seq"])
def test_each_task_learns_from_the_command_line(args, tmp_path):
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok"
    for key in ("samples_per_s", "tokens_per_s", "real_tokens_per_s", "loss_tokens_per_s"):
        assert rep["throughput"][key] > 0
    assert 0 <= rep["throughput"]["pad_fraction"] < 0.5
    losses = _losses(rep)
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.1, losses  # learnable synthetic data: the loss must fall
    # a uniform guess at step 1: the loss starts near ln(classes) or ln(vocab)
    assert abs(losses[0] - rep["loss"]["expected_initial"]) < 0.5
    assert (tmp_path / "config.yaml").exists() and "trainsweep report" in proc.stdout
    for section in ("status", "config", "env", "throughput", "step_time_s", "breakdown_s", "flops",
                    "memory_gb", "verdict", "loss"):
        assert section in rep


def test_local_model_directory_trains_with_its_weights_and_tokenizer(local_model_dir, tmp_path):
    args = ["model=auto", f"model.name_or_path={local_model_dir}", "data=files",
            "data.train_file=tests/data/accounts.csv", "task.num_labels=5", *QUICK]
    cfg = compose(*args)
    res = env.resolve(cfg)
    conf = models.hf_config(cfg)
    model = models.build_model(cfg, res, conf)
    # the weights come from the directory, not from a random init
    from safetensors.torch import load_file
    weights = load_file(str(Path(local_model_dir) / "model.safetensors"))
    embed = model.get_input_embeddings().weight
    assert torch.equal(embed.detach().cpu(), weights["model.embed_tokens.weight"])
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok" and rep["data"]["lengths"]["rows"] == 40


def test_a_short_run_trains_and_says_it_is_too_short_to_measure(tmp_path):
    rep = run(compose(*QUICK, "trainer.max_steps=3", "measure.warmup_steps=5"), tmp_path)
    assert rep["status"] == "ok" and rep["loss"]["final"] is not None
    assert rep["flags"]["reasons"] == ["too few steps to measure: trainer.max_steps=3 leaves no timed step after 5 warm-up"]
    assert "throughput" not in rep and "verdict" not in rep  # nothing measured, nothing guessed


def _hub_cache(home: Path, repo: str, model_dir: Path) -> None:
    """`repo` in a Hugging Face cache under `home`, as `hf download` leaves it: a snapshot and refs/main."""
    import shutil

    cached = home / "hub" / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, cached / "snapshots" / "abc123")
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text("abc123")


def test_a_hub_id_loads_from_the_local_cache_offline_and_a_missing_one_is_one_line(tmp_path, local_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _hub_cache(tmp_path / "hf", "someorg/tiny-qwen3", local_model_dir)
    args = ["model=auto", "model.pretrained=true", *QUICK, "task=causal_lm"]
    ok = cli(*args, "model.name_or_path=someorg/tiny-qwen3", f"hydra.run.dir={tmp_path / 'ok'}")
    assert ok.returncode == 0 and read_report(tmp_path / "ok")["status"] == "ok", ok.stderr[-2000:]
    missing = cli(*args, "model.name_or_path=someorg/not-cached", f"hydra.run.dir={tmp_path / 'missing'}")
    first = missing.stderr.strip().splitlines()[0]
    assert missing.returncode == 2 and first.startswith(
        "config error: model.name_or_path=someorg/not-cached: not a local directory, and neither the Hugging Face cache")
    assert "hf download someorg/not-cached" in first
