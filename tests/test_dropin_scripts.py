"""trainsweep.attach on Trainer scripts written the way real ones are (issue 29): HF's run_glue (rows tokenised and
padded at map time, a BERT-style tokenizer without eos, gradient accumulation, a scheduler with kwargs, evaluation
after train), run_clm with --config_name (a model trained from scratch), a dataset that draws random numbers, and
TRL's SFTTrainer (plain, packing, padding_free, LoRA). Each is run with and without the two added lines: the losses
must be the same, bit for bit, and every check judges right or says it could not run."""
import json

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Trainer, TrainingArguments, set_seed

WORDS = "the a tax account paid due late refund form bank office invoice credit debit fee rate".split()
TEXTS = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(4 + i % 13)) for i in range(64)]


def _tokenizer(bert: bool) -> PreTrainedTokenizerFast:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] if bert else ["[PAD]", "[UNK]", "[EOS]"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(specials + WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bert:  # BERT's way: [CLS] ... [SEP], and no eos
        return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                       sep_token="[SEP]")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")


def _report(out) -> dict:
    return json.loads((out / "trainsweep" / "report.json").read_text())


def _run(make_trainer, out, attach: bool, after=None):
    set_seed(0)
    trainer = make_trainer(str(out))
    if attach:
        from src import attach as attach_to

        attach_to(trainer)
    trainer.train()
    if after:
        after(trainer)
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def _both(make_trainer, tmp_path, after=None) -> dict:
    plain = _run(make_trainer, tmp_path / "plain", False, after)
    attached = _run(make_trainer, tmp_path / "attached", True, after)
    assert plain == attached  # the two lines change nothing
    rep = _report(tmp_path / "attached")
    assert rep["status"] == "ok"
    return rep


def _checks(rep) -> dict:
    return {c["check"]: c for c in rep["diagnostics"]}


def test_a_run_glue_style_script(tmp_path):
    """BERT classifier, rows padded at map time to --max_seq_length 16, --gradient_accumulation_steps 2, a
    cosine_with_min_lr schedule with its kwargs, --do_eval after training."""
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = _tokenizer(bert=True)
    data = Dataset.from_dict({"text": TEXTS, "label": [i % 4 for i in range(len(TEXTS))]})
    data = data.map(lambda b: tokenizer(b["text"], padding="max_length", max_length=16, truncation=True), batched=True)
    data = data.remove_columns("text")

    def make(out):
        model = BertForSequenceClassification(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                                         num_attention_heads=2, intermediate_size=64, num_labels=4))
        args = TrainingArguments(output_dir=out, max_steps=6, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                                 lr_scheduler_type="cosine_with_min_lr", lr_scheduler_kwargs={"min_lr": 1e-6},
                                 logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", seed=0)
        return Trainer(model=model, args=args, train_dataset=data, eval_dataset=data.select(range(8)),
                       processing_class=tokenizer)

    rep = _both(make, tmp_path, after=lambda trainer: trainer.evaluate())
    checks = _checks(rep)
    assert checks["tokenizer.special_tokens"]["status"] == "pass"  # no eos, and none needed
    assert checks["train.schedule"]["status"] == "pass"  # checked with its min_lr
    assert checks["train.grad_accum_loss"]["status"] == "fail"  # transformers#47688, with its fix named
    assert "--pad_to_max_length False" in checks["data.padding_waste"]["hint"]  # padded at map time: the script's flag
    # an encoder's rows attend to each other when packed: no padding-free collator is offered
    assert "packed" not in checks["data.padding_waste"]["value"] and rep["config"]["data"]["packable"] is False
    assert "Flattening" not in checks["data.padding_waste"]["hint"]
    assert rep["config"]["padding"]["strategy"] == "max_length" and rep["eval"]["final"]["loss"] > 0
    assert not [c for c in checks.values() if c["status"] == "not_run"]


def test_a_run_clm_style_script_training_from_scratch(tmp_path):
    """--config_name: a causal LM with random weights, named after its config; its loss starts at ln(vocab)."""
    from transformers import DataCollatorForLanguageModeling, Qwen3Config, Qwen3ForCausalLM

    tokenizer = _tokenizer(bert=False)
    data = Dataset.from_dict({"text": TEXTS}).map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])

    def make(out):
        config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=2, num_key_value_heads=1, head_dim=16, pad_token_id=0)
        config._name_or_path = "Qwen/Qwen3-0.6B"  # what --config_name leaves on it
        args = TrainingArguments(output_dir=out, max_steps=6, per_device_train_batch_size=4, logging_steps=1,
                                 report_to=[], use_cpu=True, save_strategy="no", seed=0)
        return Trainer(model=Qwen3ForCausalLM(config), args=args, train_dataset=data,
                       data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))

    checks = _checks(_both(make, tmp_path))
    assert checks["model.initial_loss"]["status"] == "info" and "from scratch" in checks["model.initial_loss"]["expected"]


class NoisyRows(torch.utils.data.Dataset):
    """Token dropout drawn per row, as an augmenting dataset does."""

    def __init__(self, tokenizer):
        self.rows = [tokenizer(t)["input_ids"] for t in TEXTS]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        keep = torch.rand(len(self.rows[i])) > 0.1
        return {"input_ids": [t for t, k in zip(self.rows[i], keep) if k] or self.rows[i][:1], "labels": i % 3}


def test_a_dataset_that_draws_random_numbers(tmp_path):
    from transformers import DataCollatorWithPadding, Qwen3Config, Qwen3ForSequenceClassification

    tokenizer = _tokenizer(bert=False)

    def make(out):
        model = Qwen3ForSequenceClassification(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                                           num_hidden_layers=1, num_attention_heads=2,
                                                           num_key_value_heads=1, head_dim=16, num_labels=3, pad_token_id=0))
        args = TrainingArguments(output_dir=out, max_steps=6, per_device_train_batch_size=4, logging_steps=1,
                                 report_to=[], use_cpu=True, save_strategy="no", seed=0)
        return Trainer(model=model, args=args, train_dataset=NoisyRows(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))

    _both(make, tmp_path)


@pytest.mark.parametrize("variant", ["plain", "packing", "padding_free", "lora"])
def test_trls_sft_trainer(variant, tmp_path):
    pytest.importorskip("trl")
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from trl import SFTConfig, SFTTrainer

    tokenizer = _tokenizer(bert=False)
    extra = {"packing": {"packing": True}, "padding_free": {"padding_free": True, "max_length": None}}.get(variant, {})

    def make(out):
        model = Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                             head_dim=16, pad_token_id=0, eos_token_id=2))
        peft = None
        if variant == "lora":
            from peft import LoraConfig

            peft = LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM")
        args = SFTConfig(output_dir=out, max_steps=6, per_device_train_batch_size=4, logging_steps=1, report_to=[],
                         use_cpu=True, save_strategy="no", seed=0, **{"max_length": 32, **extra})
        return SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"text": TEXTS}),
                          processing_class=tokenizer, peft_config=peft)

    rep = _both(make, tmp_path)
    assert rep["config"]["padding"]["strategy"] == ("packed" if variant in ("packing", "padding_free") else "dynamic")
    checks = _checks(rep)
    assert not [name for name, c in checks.items() if c["status"] in ("fail", "not_run")], checks
    if variant in ("packing", "padding_free"):
        assert checks["data.padding_waste"]["status"] == "pass"  # padding-free holds no padding
