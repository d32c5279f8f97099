"""Every option of every config group composes and validates; bad values are one clear line and exit 2."""
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

from src import models
from src.config import ConfigError, quote_numeric_choices, validate
from tests.conftest import CONF, cli, compose

GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("experiment", "sweep", "rung"))  # rung: composed by tests/test_experiments.py
OPTIONS = [(g, f.stem) for g in GROUPS for f in sorted((CONF / g).glob("*.yaml"))]
# Options that only make sense with another choice, and what they need on a CPU-only machine.
NEEDS = {("task", "seq2seq"): ["model=tiny-bart"], ("model", "tiny-bart"): ["task=seq2seq"],
         ("model", "auto"): ["model.name_or_path=/nonexistent"],
         ("data", "files"): ["data.train_file=tests/data/accounts.csv"]}
CPU_REFUSES = {("precision", "fp16"): "fp16 needs a CUDA GPU", ("peft", "qlora"): "needs a CUDA GPU",
               ("model", "auto"): "no config.json there", ("distributed", "fsdp"): "FSDP shards over CUDA GPUs",
               ("attention", "flex_attention"): "flex_attention runs on CUDA GPUs",
               ("attention", "varlen"): "varlen is PyTorch's flash kernel for CUDA GPUs"}
GPU_ONLY_PACKAGE = {("attention", "flash_attention_2"): "flash_attn", ("peft", "qlora"): "bitsandbytes"}


def test_every_group_has_options():
    assert {"model", "task", "data", "padding", "dataloader", "precision", "batch", "peft", "attention",
            "env", "logger"} <= set(GROUPS)
    assert {"tiny", "qwen3", "llama3.2-3b", "kobart", "solar-10.7b", "polyglot-ko-12.8b", "kullm-v2", "auto"} <= \
        {o for g, o in OPTIONS if g == "model"}
    assert {o for g, o in OPTIONS if g == "batch"} == {"1", "2", "4", "8", "16", "32", "64", "128"}


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_option_composes_and_validates(group, option):
    cfg = compose(f"{group}={option}", *NEEDS.get((group, option), []))
    assert cfg[group] is not None
    refusal = CPU_REFUSES.get((group, option))
    if (group, option) in GPU_ONLY_PACKAGE:
        import importlib.util
        if importlib.util.find_spec(GPU_ONLY_PACKAGE[(group, option)]) is None:
            refusal = refusal or "needs"
    if refusal:
        with pytest.raises(ConfigError, match=refusal):
            validate(cfg, cuda_available=False)
    else:
        validate(cfg, cuda_available=False)


@pytest.mark.parametrize("option", [o for g, o in OPTIONS if g == "model" and o != "auto"])
def test_model_architectures_build(option):
    """Each shipped architecture builds with no download (on the meta device: no memory)."""
    cfg = compose(f"model={option}", *NEEDS.get(("model", option), []), "task=causal_lm")
    conf = models.hf_config(cfg)
    auto = AutoModelForSeq2SeqLM if conf.is_encoder_decoder else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(conf)
    n = sum(p.numel() for p in model.parameters())
    expected = {"qwen3": 4.02e9, "llama3.2-3b": 3.21e9, "kobart": 0.124e9, "solar-10.7b": 10.7e9,
                "polyglot-ko-12.8b": 12.9e9, "kullm-v2": 12.9e9}.get(option)
    if expected:
        assert abs(n - expected) / expected < 0.01, f"{option}: {n / 1e9:.3f}B params"


def test_batch_options_set_size_and_grad_accum_is_a_key():
    cfg = compose("batch=16", "batch.grad_accum=2")
    assert (cfg.batch.size, cfg.batch.grad_accum) == (16, 2)


def test_numeric_group_choices_are_quoted_for_hydra():
    assert quote_numeric_choices(["batch=16", "batch=4,8", "trainer.max_steps=3", "batch.size=3"]) == \
        ["batch='16'", "batch='4','8'", "trainer.max_steps=3", "batch.size=3"]


def test_experiment_composes():
    cfg = compose("experiment=qwen3_lora_bs16")
    assert (cfg.model.name, cfg.batch.size, cfg.precision.name) == ("qwen3-4b", 16, "bf16")


BAD = [
    (["batch.size=0"], "batch.size=0: must be a positive integer"),
    (["batch.grad_accum=-1"], "batch.grad_accum=-1: must be a positive integer"),
    (["task.name=regression"], "task.name=regression: allowed: classification, causal_lm, seq2seq"),
    (["padding.strategy=random"], "padding.strategy=random: allowed"),
    (["task=seq2seq"], "needs an encoder-decoder model"),
    (["padding=packed", "task=seq2seq", "model=tiny-bart"],
     "padding.strategy=packed: padding-free batches are for task=classification or causal_lm, not seq2seq"),
    (["batch.tokens=1024"], "batch.tokens=1024: a token budget packs sequences: add padding=packed"),
    (["padding=packed", "batch.tokens=256"], "batch.tokens=256: must be an integer >= data.max_length (320)"),
    (["trainer.lr=0"], "trainer.lr=0"),
    (["measure.warmup_steps=100"], "measure.warmup_steps=100"),
    (["trainer.eval_steps=5"], "needs an eval set"),
    (["data=files"], "data.train_file=None"),
    (["dataloader.prefetch_factor=2", "dataloader.num_workers=0"], "needs dataloader.num_workers > 0"),
    (["precision=fp16", "peft=none", "device=cuda"], "device=cuda"),
]


@pytest.mark.parametrize("overrides,message", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_values_raise_config_error(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(compose(*overrides), cuda_available=False)


@pytest.mark.parametrize("args,message", [
    (["batch.size=0"], "config error: batch.size=0: must be a positive integer"),
    (["peft=qlora"], "config error: peft=qlora: 4-bit QLoRA (bitsandbytes) needs a CUDA GPU"),
    (["model=auto", "model.name_or_path=/no/such/dir"], "config error: model.name_or_path=/no/such/dir: no config.json there"),
    (["precision=fp16"], "config error: precision=fp16: fp16 needs a CUDA GPU"),
])
def test_bad_value_on_the_command_line_is_one_line_and_exit_2(args, message, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("these values are valid on a GPU")
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr[-2000:]


@pytest.mark.parametrize("args,message", [
    (["model=nosuchmodel"], "Could not find 'model/nosuchmodel'"),
    (["batch=3"], "Could not find 'batch/3'"),
    (["batch.size=abc"], "batch.size"),
    (["trainer.no_such_key=1"], "no_such_key"),
])
def test_hydra_composition_errors_exit_2(args, message, tmp_path):
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
