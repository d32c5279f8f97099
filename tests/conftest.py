import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from src.config.compose import compose as compose_list

# `make test` runs two workers (pytest-xdist) on CI's two cores: one thread each, for them and the runs
# they start, so they don't fight over the cores. Tiny models gain nothing from a second thread.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
# Short runs: few steps, few rows, no profiling; enough for every code path.
QUICK = ["trainer.max_steps=4", "measure.warmup_steps=1", "data.size=64", "trainer.logging_steps=1", "logger=none"]


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def compose(*overrides: str):
    return compose_list(list(overrides))


def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """The real command line, as a user types it."""
    return subprocess.run([sys.executable, "-m", "src.run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def read_report(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "report.json").read_text())


@pytest.fixture(scope="session")
def local_model_dir(tmp_path_factory) -> Path:
    """A tiny Hugging Face model directory (config, weights, tokenizer), like a downloaded checkpoint."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen3Config

    path = tmp_path_factory.mktemp("tiny-local-model")
    texts = [line.split(",")[0] for line in (ROOT / "tests/data/accounts.csv").read_text().splitlines()[1:]]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>", "<unk>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(path)
    conf = Qwen3Config(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=16, vocab_size=len(fast), pad_token_id=0, bos_token_id=1,
                       eos_token_id=2, tie_word_embeddings=True)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(conf).save_pretrained(path)
    return path
