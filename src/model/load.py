"""A finished run's result, ready for inference: `trainsweep.load(run_dir)` and `trainsweep.predict`.

Plain Hugging Face and PEFT calls, so what this does by hand is what a user's own script would do:

    model, tokenizer = trainsweep.load("outputs/2026-01-01/12-00-00")   # the run dir, or its final/
    trainsweep.predict(model, tokenizer, ["택시비 12800원"])              # classifier: label names
    trainsweep.predict(model, tokenizer, ["Q: 2+2? A:"], max_new_tokens=8)   # causal LM / seq2seq: generated text
    trainsweep.predict(model, tokenizer, ["택시비 12800원"], chat=True)   # SFT on chat rows: a user turn

final/ holds the whole model (peft=none) or a LoRA adapter (src/train/trainer.py save_final). The adapter's
base is, in turn: final/base/ (random weights written beside it: src/train/keep.py), the model directory or hub
id the adapter names, or `base=` given here.
"""
from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

# adapter_config.json's task_type, or config.json's architecture suffix -> the Auto class that loads it
BY_PEFT_TASK = {"SEQ_CLS": AutoModelForSequenceClassification, "CAUSAL_LM": AutoModelForCausalLM,
                "SEQ_2_SEQ_LM": AutoModelForSeq2SeqLM}
BY_ARCHITECTURE = {"ForSequenceClassification": AutoModelForSequenceClassification,
                   "ForCausalLM": AutoModelForCausalLM, "ForConditionalGeneration": AutoModelForSeq2SeqLM}


def _final(path: Path) -> Path:
    if (path / "final").is_dir():
        return path / "final"
    if (path / "adapter_config.json").exists() or (path / "config.json").exists():
        return path
    raise FileNotFoundError(f"{path}: no final/ there (a run with trainer.save_final=true writes it when it finishes ok)")


def _labels(final: Path, tokenizer) -> dict:
    """What a classification head on a bare base needs: its width, label names and the pad id it pools by.
    labels.json (named classes) sits in the run dir; report.json says the width otherwise."""
    run_dir, out = final.parent, {}
    if (run_dir / "labels.json").exists():
        label2id = json.loads((run_dir / "labels.json").read_text())
        out = {"num_labels": len(label2id), "label2id": label2id, "id2label": {i: n for n, i in label2id.items()}}
    elif (run_dir / "report.json").exists():
        num = (json.loads((run_dir / "report.json").read_text()).get("data") or {}).get("num_labels")
        out = {"num_labels": num} if num else {}
    if tokenizer is not None and tokenizer.pad_token_id is not None:
        out["pad_token_id"] = tokenizer.pad_token_id
    return out


def _base_of(final: Path, settings: dict, base: str | None) -> str:
    if base:
        return base
    if (final / "base" / "config.json").exists():  # written here after the run: right even if the run dir moved
        return str(final / "base")
    if settings.get("base_model_name_or_path"):
        return settings["base_model_name_or_path"]
    recipe = ""
    if (final.parent / "report.json").exists():
        recipe = ((json.loads((final.parent / "report.json").read_text()).get("saved") or {}).get("base") or "")
    raise FileNotFoundError(f"{final}: the adapter names no base; pass load(run_dir, base=<model dir>)"
                            + (f" (the run's report: base {recipe})" if recipe else ""))


def load(run_dir: str | Path, base: str | None = None, device: str | None = None):
    """(model, tokenizer) of a finished run, in eval mode on `device` (the CPU unless given). `run_dir`: the
    run directory or its final/. `base`: a model directory (or hub id) under a LoRA adapter that names none.
    The tokenizer is None where the run had none (synthetic token ids)."""
    final = _final(Path(run_dir).expanduser())
    tokenizer = AutoTokenizer.from_pretrained(final) if (final / "tokenizer_config.json").exists() else None
    if (final / "adapter_config.json").exists():
        # as in a run (src/runner.py): peft imports bitsandbytes, whose CPU backend warns that it can't load a hub
        # kernel, and reads a property transformers deprecated; neither says anything about this model
        logging.getLogger("bitsandbytes.backends.cpu").setLevel(logging.ERROR)
        from peft import PeftModel

        settings = json.loads((final / "adapter_config.json").read_text())
        auto = BY_PEFT_TASK[settings["task_type"]]
        source = _base_of(final, settings, base)
        head = _labels(final, tokenizer) if auto is AutoModelForSequenceClassification else {}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*deprecated")
            model = PeftModel.from_pretrained(auto.from_pretrained(source, local_files_only=True, **head), final)
    else:
        arch = (json.loads((final / "config.json").read_text()).get("architectures") or [""])[0]
        auto = next((a for suffix, a in BY_ARCHITECTURE.items() if arch.endswith(suffix)), AutoModelForCausalLM)
        model = auto.from_pretrained(final)
    return model.to(device or "cpu").eval(), tokenizer


def _is_classifier(model) -> bool:
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return type(inner).__name__.endswith("ForSequenceClassification")


@torch.no_grad()
def predict(model, tokenizer, texts: list, max_new_tokens: int = 32, chat: bool = False) -> list:
    """A classifier's label for each text (its name where the run's labels had names), or a generating model's
    continuation of each (greedy, the prompt left out). chat=True: each text is a user turn, or a conversation (a
    list of {"role", "content"} messages: a system turn kept, as the training rows had it), rendered as the run
    rendered its chat rows (data.format=messages|sharegpt|alpaca: the tokenizer's template, or the plain one
    src/data/formats.py falls back to). One text at a time: no padding side to get right."""
    from ..data.formats import template

    if tokenizer is None:
        raise ValueError("this run has no tokenizer (synthetic token ids): call the model on input_ids instead")
    device, out = next(model.parameters()).device, []
    for text in texts:
        if not isinstance(text, str) and not chat:
            raise ValueError(f"a {type(text).__name__} among the texts: a conversation (a list of messages) needs "
                             "chat=True, anything else a string")
        if chat:  # the template writes bos itself
            messages = [{"role": "user", "content": text}] if isinstance(text, str) else list(text)
            text = tokenizer.apply_chat_template(messages, chat_template=template(tokenizer),
                                                 add_generation_prompt=True, tokenize=False)
        enc = tokenizer(text, return_tensors="pt", add_special_tokens=not chat).to(device)
        enc.pop("token_type_ids", None)  # BERT-style tokenizers add it; decoder models take no such input
        if _is_classifier(model):
            label = int(model(**enc).logits.argmax(-1))
            out.append(model.config.id2label.get(label, label))
        else:
            ids = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
            start = 0 if model.config.is_encoder_decoder else enc["input_ids"].shape[1]
            out.append(tokenizer.decode(ids[0, start:], skip_special_tokens=True))
    return out
