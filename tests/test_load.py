"""Results you can reuse: a tiny CPU run trains a few steps, then trainsweep.load(run_dir) rebuilds its model from
final/ alone and trainsweep.predict uses it. On random weights the base is written beside the adapter
(final/base, src/train/keep.py); on a real local base the adapter names that directory; past the size cap the
report holds a rebuild recipe instead."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import src as trainsweep
from src.run import run
from src.train import keep
from tests.conftest import QUICK, compose

ROOT = Path(__file__).resolve().parents[1]
CSV = ["data=files", "data.train_file=tests/data/accounts.csv"]
CHAT = ["task=causal_lm", "data=files", "data.train_file=tests/data/chat.jsonl", "data.format=messages"]


class Keep:
    """The trained model as training left it, to compare the reloaded one with."""

    def __init__(self):
        from transformers import TrainerCallback

        class Callback(TrainerCallback):
            def on_train_end(cb, args, state, control, model=None, **kw):
                self.model = model

        self.callback = Callback()


def _logits(model, tokenizer, text: str):
    enc = tokenizer(text, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits


def test_a_classifier_on_a_csv_reloads_from_final_with_its_random_base_and_predicts_label_names(tmp_path):
    kept = Keep()
    rep = run(compose(*QUICK, *CSV), tmp_path, callbacks=(kept.callback,))
    final = tmp_path / "final"
    assert rep["status"] == "ok" and rep["saved"]["base"] == str(final / "base")
    assert (final / "base" / "model.safetensors").exists()
    assert json.loads((final / "adapter_config.json").read_text())["base_model_name_or_path"] == str(final / "base")

    model, tokenizer = trainsweep.load(tmp_path)
    text = "택시비 서울역에서 본사까지 12800원"
    assert torch.allclose(_logits(model, tokenizer, text), _logits(kept.model, tokenizer, text), atol=1e-5)
    labels = trainsweep.predict(model, tokenizer, [text, "KT 인터넷 요금 33000원"])
    classes = set(json.loads((tmp_path / "labels.json").read_text()))
    assert len(labels) == 2 and set(labels) <= classes and len(classes) == 5

    # a script of the user's own (README step 3) gets the label, not peft's and bitsandbytes' import-time warnings
    script = f"import src as t; m, k = t.load({str(tmp_path)!r}); print(t.predict(m, k, [{text!r}]))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "kernels-community" not in out.stderr and "is_gradient_checkpointing" not in out.stderr, out.stderr


def test_sft_on_chat_rows_reloads_and_generates(tmp_path):
    kept = Keep()
    rep = run(compose(*QUICK, *CHAT), tmp_path, callbacks=(kept.callback,))
    assert rep["status"] == "ok" and (tmp_path / "final" / "base" / "config.json").exists()
    model, tokenizer = trainsweep.load(tmp_path / "final")  # final/ itself works too
    text = "다음 지출의 계정과목을 고르세요."
    assert torch.allclose(_logits(model, tokenizer, text), _logits(kept.model, tokenizer, text), atol=1e-5)
    [answer] = trainsweep.predict(model, tokenizer, [text], max_new_tokens=4, chat=True)
    assert isinstance(answer, str)
    # a conversation with its system turn, as the training rows had one (a newcomer's list raised a Jinja TypeError)
    talk = [{"role": "system", "content": "계정과목 분류기"}, {"role": "user", "content": text}]
    [with_system] = trainsweep.predict(model, tokenizer, [talk], max_new_tokens=4, chat=True)
    assert isinstance(with_system, str)
    with pytest.raises(ValueError, match="a conversation .* needs chat=True"):
        trainsweep.predict(model, tokenizer, [talk])


def test_an_adapter_on_a_real_local_base_names_that_directory_and_keeps_no_copy(tmp_path, local_model_dir):
    rep = run(compose(*QUICK, *CSV, "model=auto", f"model.name_or_path={local_model_dir}"), tmp_path)
    final = tmp_path / "final"
    assert rep["status"] == "ok" and rep["saved"]["base"] is None and not (final / "base").exists()
    assert json.loads((final / "adapter_config.json").read_text())["base_model_name_or_path"] == str(local_model_dir)
    model, tokenizer = trainsweep.load(tmp_path)  # a causal LM directory under a classifier: the head from labels.json
    assert model.base_model.model.config.num_labels == 5
    assert set(trainsweep.predict(model, tokenizer, ["택시비 12800원"])) <= set(json.loads((tmp_path / "labels.json").read_text()))


def test_a_random_base_over_the_cap_leaves_a_rebuild_recipe_that_rebuilds_it(tmp_path, monkeypatch):
    from omegaconf import OmegaConf
    from transformers import AutoConfig, AutoModelForSequenceClassification

    monkeypatch.setattr(keep, "BASE_CAP_MB", 0)
    kept = Keep()
    rep = run(compose(*QUICK, *CSV), tmp_path / "run", callbacks=(kept.callback,))
    recipe = rep["saved"]["base"]
    assert rep["status"] == "ok" and not (tmp_path / "run" / "final" / "base").exists()
    assert recipe == ("not saved (1 MB > the 0 MB cap); rebuild: torch.manual_seed(0); with torch.device('cpu'): base = "
                      "AutoModelForSequenceClassification.from_config(AutoConfig.for_model('qwen3', **model.arch from "
                      "config.yaml, num_labels=5)) - the same weights only on the same device type, torch and transformers")
    with pytest.raises(FileNotFoundError, match="names no base; pass load.*the run's report: base not saved"):
        trainsweep.load(tmp_path / "run")

    # the recipe followed as written, on the device it names: load(base=) puts the adapter on it
    arch = OmegaConf.to_container(OmegaConf.load(tmp_path / "run" / "config.yaml").model.arch)
    torch.manual_seed(0)
    with torch.device("cpu"):
        AutoModelForSequenceClassification.from_config(AutoConfig.for_model("qwen3", **arch, num_labels=5)).save_pretrained(tmp_path / "base")
    model, tokenizer = trainsweep.load(tmp_path / "run", base=str(tmp_path / "base"))
    text = "택시비 서울역에서 본사까지 12800원"
    assert torch.allclose(_logits(model, tokenizer, text), _logits(kept.model, tokenizer, text), atol=1e-5)


def test_a_seq2seq_adapter_reloads_and_generates(tmp_path):
    rep = run(compose(*QUICK, "task=seq2seq", "model=tiny-bart", "data=files", "data.train_file=tests/data/dialogues.jsonl",
                      "data.text_column=dialogue", "data.target_column=summary"), tmp_path)
    assert rep["status"] == "ok" and rep["saved"]["base"] == str(tmp_path / "final" / "base")
    model, tokenizer = trainsweep.load(tmp_path)
    [summary] = trainsweep.predict(model, tokenizer, ["A: 내일 회의 몇 시에 시작해요? B: 오전 10시에요."], max_new_tokens=4)
    assert isinstance(summary, str)


def test_a_full_fine_tune_reloads_without_peft(tmp_path):
    rep = run(compose(*QUICK, *CSV, "peft=none"), tmp_path)
    assert rep["status"] == "ok" and rep["saved"]["kind"] == "model" and rep["saved"]["base"] is None
    model, tokenizer = trainsweep.load(tmp_path)
    assert type(model).__name__.endswith("ForSequenceClassification")
    assert len(trainsweep.predict(model, tokenizer, ["택시비 12800원", "복사용지 45000원"])) == 2
