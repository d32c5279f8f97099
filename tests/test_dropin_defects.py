"""Issue 48's eleven defects, each reproduced as a user met it (tiny models on a CPU) and each failing on the main
before the fix: the drop-in crashed on tensor rows, read BatchEncoding rows as nothing, miscounted packed batches,
missed the doubled loss of accumulated steps outside attach() and on non-classifiers, judged regressions, token
classifiers and run_clm's blocks as classifiers with padding, warned on a harmless pad == eos, advised wiping a
tied LM head, changed the rows a step and the loss scale under speedup, and counted no loss tokens when the
script's compute_loss pops the labels."""
import json
import math

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (AutoModelForCausalLM, DataCollatorForTokenClassification, DataCollatorWithPadding,
                          PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM, Qwen3ForSequenceClassification,
                          Qwen3ForTokenClassification, Trainer, TrainingArguments, default_data_collator, set_seed)

from src import TrainsweepCallback, attach, speedup

WORDS = "the a tax account paid due late refund form bank office invoice credit debit fee rate".split()
TEXTS = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(4 + i % 13)) for i in range(96)]


def _tokenizer(pad="[PAD]") -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]"] + WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, unk_token="[UNK]", eos_token="[EOS]")


def _config(**kw) -> Qwen3Config:
    return Qwen3Config(**{"vocab_size": 24, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                          "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "pad_token_id": 0, **kw})


def _args(out, **kw) -> TrainingArguments:
    return TrainingArguments(**{"output_dir": str(out), "max_steps": 6, "per_device_train_batch_size": 8,
                                "logging_steps": 1, "report_to": [], "use_cpu": True, "save_strategy": "no", "seed": 0,
                                **kw})


def _report(out) -> dict:
    return json.loads((out / "trainsweep" / "report.json").read_text())


def _checks(out) -> dict:
    return {c["check"]: c for c in _report(out)["diagnostics"]}


def _train(trainer) -> list[float]:
    trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def _classified(tokenizer, n=96) -> Dataset:
    return Dataset.from_dict({"text": TEXTS[:n], "label": [i % 3 for i in range(n)]}).map(
        lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])


# 1 ------------------------------------------------------------------------------------------------------
def test_1_tensor_rows_and_set_format_torch(tmp_path):
    """attach crashed at train begin (`Boolean value of Tensor ... is ambiguous`); speedup turned itself off with a
    raw TypeError (`sum() got an unexpected keyword argument 'axis'`)."""
    tokenizer = _tokenizer()
    data = _classified(tokenizer).map(lambda r: tokenizer.pad(r, padding="max_length", max_length=20))
    data.set_format("torch")
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path), train_dataset=data)
    attach(trainer, speedup={"verify": False})
    _train(trainer)
    done = trainer.trainsweep_speedup
    assert done.on("padding-free batches"), done.text()  # rows padded to 20 packed by their attended tokens
    checks = _checks(tmp_path)
    assert not [c for c in checks.values() if c["status"] == "not_run"], checks
    assert _report(tmp_path)["status"] == "ok"


# 2 ------------------------------------------------------------------------------------------------------
class Encoded(torch.utils.data.Dataset):
    """A Dataset returning the tokenizer's BatchEncoding per row."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __len__(self):
        return len(TEXTS)

    def __getitem__(self, i):
        row = self.tokenizer(TEXTS[i])
        row["labels"] = i % 3
        return row


def test_2_batchencoding_rows_are_read_by_every_check_and_by_speedup(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=Encoded(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer, speedup={"verify": False})
    _train(trainer)
    assert trainer.trainsweep_speedup.on("padding-free batches"), trainer.trainsweep_speedup.text()
    checks = _checks(tmp_path)
    assert {"tokenizer.pad_token", "data.truncation", "data.labels_in_range", "model.initial_loss", "model.pooling"} <= set(checks)


# 4 ------------------------------------------------------------------------------------------------------
def test_4_the_doubled_accumulated_loss_is_caught_through_the_callback_alone(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                      args=_args(tmp_path, gradient_accumulation_steps=2), train_dataset=_classified(tokenizer),
                      data_collator=DataCollatorWithPadding(tokenizer), callbacks=[TrainsweepCallback()])
    _train(trainer)
    assert _checks(tmp_path)["train.grad_accum_loss"]["status"] == "fail"


class MeanLoss(Trainer):
    """A subclass with its own mean cross-entropy (ignores num_items_in_batch)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        logits = model(**inputs).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return (loss, None) if return_outputs else loss


def test_4_a_mean_compute_loss_on_a_causal_lm_with_accumulation_is_caught(tmp_path):
    tokenizer = _tokenizer()
    data = Dataset.from_dict({"text": TEXTS}).map(lambda b: tokenizer(b["text"], padding="max_length", max_length=12,
                                                                      truncation=True), batched=True, remove_columns=["text"])
    data = data.map(lambda r: {"labels": [t if m else -100 for t, m in zip(r["input_ids"], r["attention_mask"])]})
    set_seed(0)
    trainer = MeanLoss(model=Qwen3ForCausalLM(_config()), args=_args(tmp_path, gradient_accumulation_steps=2),
                       train_dataset=data)
    attach(trainer)
    _train(trainer)
    check = _checks(tmp_path)["train.grad_accum_loss"]
    assert check["status"] == "fail" and "2x too large" in check["hint"]


class OwnLoader(MeanLoss):
    """sentence-transformers' way: its own get_train_dataloader over text rows that its collator tokenises, so the
    Trainer's removal of unused columns never runs (the text is no argument of the model's forward)."""

    def get_train_dataloader(self):
        loader = torch.utils.data.DataLoader(self.train_dataset, batch_size=self._train_batch_size,
                                             collate_fn=self.data_collator)
        return self.accelerator.prepare(loader)


def test_a_trainer_with_its_own_dataloader_has_its_accumulated_loss_probed_on_the_batches_it_makes(tmp_path):
    """The probe rebuilt the first batch transformers' way, removing the text column the trainer's collator needs:
    "not_run: ValueError: No columns in the dataset match the model's forward method signature ... set
    remove_unused_columns=False", advice the script did not need (sentence-transformers' MNRL script, user corpus)."""
    tokenizer = _tokenizer()

    def collate(rows):
        batch = dict(tokenizer([r["text"] for r in rows], padding="max_length", max_length=12, truncation=True,
                               return_tensors="pt"))
        batch["labels"] = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        return batch

    set_seed(0)
    trainer = OwnLoader(model=Qwen3ForCausalLM(_config()), args=_args(tmp_path, gradient_accumulation_steps=2),
                        train_dataset=Dataset.from_dict({"text": TEXTS}), data_collator=collate)
    attach(trainer)
    _train(trainer)
    check = _checks(tmp_path)["train.grad_accum_loss"]
    assert check["status"] == "fail" and "2x too large" in check["hint"], check


class OwnStep(MeanLoss):
    """A training_step of the script's own: its forward, its division by the accumulation steps, its backward."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        with self.compute_loss_context_manager():
            loss = self.compute_loss(model, self._prepare_inputs(inputs)) / self.args.gradient_accumulation_steps
        self.accelerator.backward(loss)
        return loss.detach()


class StepThenMore(MeanLoss):
    """A training_step that runs the Trainer's (FGM's shape), so the Trainer's scaling, and its bug, still apply."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        return super().training_step(model, inputs, num_items_in_batch)


def test_4_an_own_training_step_that_never_calls_the_trainers_is_not_told_its_loss_is_doubled(tmp_path):
    """A user's corpus script (manual_backward_step) was told 'the logged loss and the gradients are 2x too large'
    and to set loss_is_scaled_for_ga: its training_step divides by the accumulation steps itself, and neither
    applied. One that calls the Trainer's still gets the probe."""
    tokenizer = _tokenizer()
    data = Dataset.from_dict({"text": TEXTS}).map(lambda b: tokenizer(b["text"], padding="max_length", max_length=12,
                                                                      truncation=True), batched=True, remove_columns=["text"])
    data = data.map(lambda r: {"labels": [t if m else -100 for t, m in zip(r["input_ids"], r["attention_mask"])]})
    for cls, status in ((OwnStep, "not_run"), (StepThenMore, "fail")):
        set_seed(0)
        trainer = cls(model=Qwen3ForCausalLM(_config()), args=_args(tmp_path / cls.__name__, gradient_accumulation_steps=2),
                      train_dataset=data)
        attach(trainer)
        _train(trainer)
        check = _checks(tmp_path / cls.__name__)["train.grad_accum_loss"]
        assert check["status"] == status, (cls.__name__, check)
    assert "OwnStep.training_step is your own" in _checks(tmp_path / "OwnStep")["train.grad_accum_loss"]["value"]


def _token_rows(tokenizer) -> Dataset:
    def label(batch):
        enc = tokenizer(batch["text"])
        enc["labels"] = [[(t % 3) for t in ids] for ids in enc["input_ids"]]
        return enc
    return Dataset.from_dict({"text": TEXTS}).map(label, batched=True, remove_columns=["text"])


def test_4_token_classification_is_judged_against_its_labels_not_the_vocabulary(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForTokenClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_token_rows(tokenizer), data_collator=DataCollatorForTokenClassification(tokenizer))
    attach(trainer)
    _train(trainer)
    rep, checks = _report(tmp_path), _checks(tmp_path)
    assert rep["config"]["task"]["name"] == "token_classification"
    assert "ln(3)" in checks["model.initial_loss"]["expected"] and checks["model.initial_loss"]["status"] == "pass"
    assert checks["data.labels_in_range"]["status"] == "pass"


# 5 ------------------------------------------------------------------------------------------------------
def test_5_a_regression_is_judged_as_one(tmp_path):
    tokenizer = _tokenizer()
    data = Dataset.from_dict({"text": TEXTS, "label": [float(i % 5) / 4 for i in range(len(TEXTS))]}).map(
        lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=1)), args=_args(tmp_path),
                      train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    _train(trainer)
    checks = _checks(tmp_path)
    assert "data.labels_in_range" not in checks  # no classes to be in range of
    assert not [c for c in checks.values() if c["status"] == "not_run"], checks
    initial = checks["model.initial_loss"]
    assert "mean(label^2)" in initial["expected"] and initial["status"] == "pass"


# 6 ------------------------------------------------------------------------------------------------------
def test_6_run_clm_blocks_need_no_pad_token_and_were_not_truncated(tmp_path):
    tokenizer = _tokenizer(pad=None)  # GPT-2's: eos, no pad
    ids = [t for text in TEXTS for t in tokenizer(text)["input_ids"] + [tokenizer.eos_token_id]]
    blocks = [ids[i:i + 16] for i in range(0, len(ids) - 16, 16)]
    data = Dataset.from_dict({"input_ids": blocks, "attention_mask": [[1] * 16] * len(blocks), "labels": blocks})
    set_seed(0)
    trainer = Trainer(model=Qwen3ForCausalLM(_config(pad_token_id=None)), args=_args(tmp_path), train_dataset=data,
                      processing_class=tokenizer, data_collator=default_data_collator)
    attach(trainer)
    _train(trainer)
    checks = _checks(tmp_path)
    for name in ("tokenizer.pad_token", "tokenizer.special_tokens", "data.truncation"):
        assert checks[name]["status"] == "pass", checks[name]


# 7 ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fix", [False, True])
def test_7_speedup_keeps_the_scripts_loss_scale_unless_asked(fix, tmp_path):
    """A Qwen3 classifier at grad_accum 2 logs twice the mean (transformers#47688); speedup halved it silently."""
    tokenizer = _tokenizer()

    def make(out):
        set_seed(0)
        return Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                       args=_args(out, gradient_accumulation_steps=2, per_device_train_batch_size=4),
                       train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))

    plain = _train(make(tmp_path / "plain"))
    trainer = make(tmp_path / "sped")
    done = speedup(trainer, verify=False, quiet=True, **({"fix_loss_scale": True} if fix else {}))
    lever = next(lv for lv in done.levers if lv.name == "padding-free batches")
    assert lever.on, done.text()
    sped = _train(trainer)
    assert plain[0] == pytest.approx(2 * math.log(3), rel=0.1)  # the script's own: twice the uniform guess
    if fix:
        assert "LOSS SCALE CHANGED" in lever.detail and sped[0] == pytest.approx(math.log(3), rel=0.1)
    else:
        assert sped[0] == pytest.approx(plain[0], rel=0.1) and "loss scale as yours: 2x" in lever.detail


# 8 ------------------------------------------------------------------------------------------------------
def test_8_pad_equal_to_eos_is_harmless_when_no_row_holds_eos(tmp_path):
    tokenizer = _tokenizer(pad="[EOS]")
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3, pad_token_id=tokenizer.pad_token_id)),
                      args=_args(tmp_path), train_dataset=_classified(tokenizer), processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    _train(trainer)
    checks = _checks(tmp_path)
    assert checks["tokenizer.pad_is_eos"]["status"] == "pass" and checks["model.pooling"]["status"] == "pass"


def test_8_pad_positions_of_rows_padded_when_tokenised_are_not_eos(tmp_path):
    """Found on the user corpus: rows padded to their longest at map time with pad == eos read as "eos inside 140
    of 144 rows"; those were pad positions (attention_mask 0)."""
    tokenizer = _tokenizer(pad="[EOS]")
    data = Dataset.from_dict({"text": TEXTS, "label": [i % 3 for i in range(len(TEXTS))]}).map(
        lambda b: tokenizer(b["text"], padding="longest"), batched=True, remove_columns=["text"])
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3, pad_token_id=tokenizer.pad_token_id)),
                      args=_args(tmp_path), train_dataset=data, processing_class=tokenizer)
    attach(trainer)
    _train(trainer)
    assert _checks(tmp_path)["tokenizer.pad_is_eos"]["status"] == "pass"


def test_the_tokenizer_handed_only_to_the_collator_is_checked(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    _train(trainer)
    assert _checks(tmp_path)["tokenizer.pad_token"]["status"] == "pass"


# 9 ------------------------------------------------------------------------------------------------------
def test_9_a_causal_lm_is_never_told_to_reinitialise_its_head(tmp_path):
    tokenizer = _tokenizer()
    model = Qwen3ForCausalLM(_config(tie_word_embeddings=True))
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(40)  # logits far too large: the initial loss is way off the uniform guess
    model.save_pretrained(tmp_path / "ckpt")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt")  # "pretrained": its weights loaded
    data = Dataset.from_dict({"text": TEXTS}).map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    from transformers import DataCollatorForLanguageModeling

    trainer = Trainer(model=model, args=_args(tmp_path, max_steps=2), train_dataset=data,
                      data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
    attach(trainer)
    _train(trainer)
    initial = _checks(tmp_path)["model.initial_loss"]
    assert initial["status"] == "fail"
    assert "score" not in initial["hint"] and "zero" not in initial["hint"] and "weights loaded" in initial["hint"]


# 10 -----------------------------------------------------------------------------------------------------
def test_10_short_rows_keep_their_rows_a_step_under_speedup(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    done = speedup(trainer, verify=False, quiet=True)
    assert done.on("padding-free batches")
    assert abs(done.packing["rows_per_step"] / 8 - 1) <= 0.03, done.packing


# 11 -----------------------------------------------------------------------------------------------------
class WeightedLoss(Trainer):
    """Class weights: the labels popped before the forward, the loss computed here."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = torch.nn.functional.cross_entropy(outputs.logits, labels, weight=torch.tensor([1.0, 2.0, 1.0]))
        return (loss, outputs) if return_outputs else loss


def test_11_loss_tokens_are_counted_when_compute_loss_pops_the_labels(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = WeightedLoss(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                           train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    _train(trainer)
    rep = _report(tmp_path)
    assert rep["tokens"]["loss"] == rep["tokens"]["samples"] > 0
    assert rep["throughput"]["loss_tokens_per_s"] > 0


# and: on a CPU, speedup applies nothing it has not measured there ---------------------------------------
def test_speedup_on_a_cpu_measures_before_it_keeps_anything(tmp_path):
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    done = speedup(trainer, quiet=True)
    assert done.verified and ("forward+backward" in done.verified["line"] or "verification failed" in done.verified["line"])
    unmeasured = speedup(Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                                 train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer)),
                         verify=False, quiet=True)
    assert unmeasured.verified["line"].startswith("unmeasured here")


def test_checkpointing_turned_on_on_the_model_by_the_script_is_read(tmp_path):
    """QLoRA-era notebooks call model.gradient_checkpointing_enable() before get_peft_model and pass no Trainer
    argument (user corpus: gc_enable_before_peft): the report read 'off', HFU left out the recompute and the
    checkpointing check did not run."""
    from peft import LoraConfig, get_peft_model

    tokenizer = _tokenizer()
    data = Dataset.from_dict({"text": TEXTS}).map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    set_seed(0)
    model = Qwen3ForCausalLM(_config())
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    from transformers import DataCollatorForLanguageModeling

    trainer = Trainer(model=model, args=_args(tmp_path), train_dataset=data,
                      data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
    attach(trainer)
    _train(trainer)
    rep = _report(tmp_path)
    assert rep["config"]["trainer"]["gradient_checkpointing"] is True
    assert rep["config"]["trainer"]["checkpoint_reentrant"] is False
    assert rep["flops"]["per_token_hardware"] > rep["flops"]["per_token"]  # the recompute is hardware work
    assert "train.checkpointing_grads" in _checks(tmp_path)


def test_a_resumed_run_too_short_to_time_says_it_resumed(tmp_path):
    """A resumed call ran max_steps minus its checkpoint's steps; the flag blamed max_steps=8 alone (user corpus:
    resume_same_trainer_twice), though 8 steps leave timed ones after 5 warm-up."""
    tokenizer = _tokenizer()
    data = _classified(tokenizer)

    def trainer(steps):
        set_seed(0)
        return Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                       args=_args(tmp_path, max_steps=steps, save_strategy="steps", save_steps=4),
                       train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer))

    trainer(4).train()
    resumed = trainer(8)
    attach(resumed)
    resumed.train(resume_from_checkpoint=True)
    assert _report(tmp_path)["flags"]["reasons"] == [
        "too few steps to measure: max_steps=8 from step 4 (resumed: 4 steps) leaves no timed step after 5 "
        "warm-up"]


def test_the_rate_and_schedule_are_the_optimizers_not_the_arguments_defaults(tmp_path):
    """optimizer_cls_and_kwargs trains at its own lr while learning_rate stays at 5e-05 (user corpus:
    optimizer_cls_kwargs_click): the head-step check judged the default; a scheduler the script passes in
    (optimizers=(opt, sched)) was replayed as lr_scheduler_type's linear schedule, which never ran."""
    tokenizer = _tokenizer()
    data = _classified(tokenizer)
    set_seed(0)
    own_cls = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path / "a"),
                      train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer),
                      optimizer_cls_and_kwargs=(torch.optim.RAdam, {"lr": 0.05}))
    attach(own_cls)
    own_cls.train()
    rep = _report(tmp_path / "a")
    assert rep["config"]["trainer"]["lr"] == pytest.approx(0.05) and rep["config"]["trainer"]["scheduler"] == "linear"
    assert _checks(tmp_path / "a")["train.head_step"]["value"]["lr"] == pytest.approx(0.05)

    set_seed(0)
    model = Qwen3ForSequenceClassification(_config(num_labels=3))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    own = Trainer(model=model, args=_args(tmp_path / "b", warmup_steps=5), train_dataset=data,
                  data_collator=DataCollatorWithPadding(tokenizer), optimizers=(opt, sched))
    attach(own)
    own.train()
    assert _report(tmp_path / "b")["config"]["trainer"]["lr"] == pytest.approx(2e-3)
    schedule = _checks(tmp_path / "b")["train.schedule"]
    assert schedule["status"] == "info" and "CosineAnnealingLR" in schedule["hint"]  # warmup_steps=5 of 6 never ran


def test_a_collator_padding_every_batch_to_max_length_is_read_as_such(tmp_path):
    """DataCollatorWithPadding(padding="max_length", max_length=32) makes every batch 32 wide (user corpus:
    random_split_collator_maxlen): the report said "dynamic", its waste estimate was each batch's longest, and the
    hint offered grouping by length, which saves nothing at a fixed width."""
    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_classified(tokenizer),
                      data_collator=DataCollatorWithPadding(tokenizer, padding="max_length", max_length=32))
    attach(trainer)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["config"]["padding"]["strategy"] == "max_length" and rep["config"]["data"]["max_length"] == 32
    waste = _checks(tmp_path)["data.padding_waste"]
    assert waste["value"]["chosen"] == "max_length" and waste["status"] == "warn"
    # the estimate over the train rows, beside the few timed steps' own share
    assert waste["value"]["max_length"] == pytest.approx(rep["throughput"]["pad_fraction"], abs=0.1)
    assert "padding='max_length'" in waste["hint"]
    assert "padding max_length (by the collator, to 32)" in (tmp_path / "trainsweep" / "report.md").read_text()


class AuxLogging(Trainer):
    """A compute_loss that tallies its parts in a dict of its own and logs their means with each loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.aux, self.aux_calls = {"ce": 0.0}, 0

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        out = model(**inputs)
        self.aux["ce"] += float(out.loss)
        self.aux_calls += 1
        return (out.loss, out) if return_outputs else out.loss

    def log(self, logs, *args, **kwargs):
        if "loss" in logs:
            logs["ce_loss"], self.aux, self.aux_calls = self.aux["ce"] / max(self.aux_calls, 1), {"ce": 0.0}, 0
        super().log(logs, *args, **kwargs)


def test_a_subclass_tally_of_its_loss_parts_is_left_as_training_made_it(tmp_path):
    """The accumulated-loss probe calls the script's compute_loss: its own ce_loss tally logged at step 1 took the
    probe's calls in too (upstream-style aux metrics, adversarial run), though the loss itself was bit for bit."""
    tokenizer = _tokenizer()

    def run(out, measured):
        set_seed(0)
        trainer = AuxLogging(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                             args=_args(out, gradient_accumulation_steps=2), train_dataset=_classified(tokenizer),
                             data_collator=DataCollatorWithPadding(tokenizer))
        if measured:
            attach(trainer)
        trainer.train()
        return [(e["loss"], e["ce_loss"]) for e in trainer.state.log_history if "loss" in e]

    assert run(tmp_path / "measured", True) == run(tmp_path / "plain", False)


def test_a_run_a_callback_stopped_early_says_so_in_its_flag(tmp_path):
    """A callback stopping the run at step 2 of 6: the flag blamed max_steps=6 alone."""
    from transformers import TrainerCallback

    class StopAt2(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            control.should_training_stop = state.global_step >= 2

    tokenizer = _tokenizer()
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer),
                      callbacks=[StopAt2()])
    attach(trainer)
    trainer.train()
    assert _report(tmp_path)["flags"]["reasons"] == [
        "too few steps to measure: max_steps=6, stopped at step 2 leaves no timed step after 5 warm-up"]


def test_a_misspelt_measure_setting_is_a_type_error_at_the_call(tmp_path):
    """attach(trainer, warmup_step=2) turned measuring off at train begin and wrote no report; speedup(token=64)
    raised at once. Both say it at the call now, before any training."""
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path))
    with pytest.raises(TypeError, match="'warmup_step'.*warmup_steps"):
        attach(trainer, warmup_step=2)
    assert attach(trainer, warmup_steps=2).measure_settings == {"warmup_steps": 2}


def test_a_second_train_after_measuring_turned_off_writes_no_stale_report(tmp_path, capsys):
    """Measuring turned itself off in the first train(); the second call printed and rewrote the first call's
    report (its max_steps, its figures) as if it were its own."""
    from src.dropin.callback import MEASURING

    tokenizer = _tokenizer()
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path, max_steps=8),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer))
    dropin = attach(trainer)
    trainer.train()
    first = (tmp_path / "trainsweep" / "report.json").read_text()
    dropin.guard.turn_off(MEASURING, RuntimeError("a meter failure"))
    capsys.readouterr()
    trainer.args.max_steps = 12
    trainer.train()
    assert "trainsweep report:" not in capsys.readouterr().out
    assert (tmp_path / "trainsweep" / "report.json").read_text() == first
    assert not (tmp_path / "trainsweep-2").exists()


def test_the_probe_copies_tallies_not_models_a_subclass_keeps():
    """A dict of teachers on the Trainer is no tally: copying it would copy their weights, and putting the copy back
    would swap the script's models for the probe's copies."""
    from types import SimpleNamespace

    from src.levers.loss_scale import trainer_kept

    teacher = Qwen3ForSequenceClassification(_config(num_labels=3))
    trainer = SimpleNamespace(models={"teacher": teacher}, aux={"ce": 1.0}, train_dataset=None, data_collator=None)
    with trainer_kept(trainer):
        trainer.aux["ce"] += 2.0
        trainer.added = 3
    assert trainer.models["teacher"] is teacher and trainer.aux == {"ce": 1.0} and not hasattr(trainer, "added")


def test_labels_under_a_name_of_the_scripts_own_are_counted_as_scored(tmp_path):
    """label_names=["target"]: the rows' labels sit under "target", and the report counted no scored item (loss tok/s
    unknown) though every row was scored; a model of the script's own said num_labels 2, its config's default."""
    class TargetTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            target = inputs.pop("target")
            logits = model(**inputs).logits
            loss = torch.nn.functional.cross_entropy(logits, target)
            return (loss, logits) if return_outputs else loss

    tokenizer = _tokenizer()
    data = _classified(tokenizer).rename_column("label", "target")
    set_seed(0)
    trainer = TargetTrainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                            args=_args(tmp_path, label_names=["target"], remove_unused_columns=False),
                            train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer))
    attach(trainer)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and rep["tokens"]["loss"] == rep["tokens"]["samples"] > 0


def test_a_model_of_the_scripts_own_has_no_num_labels_to_read():
    from src.dropin.reading import config_from_trainer

    class Own(torch.nn.Module):
        config = _config()  # num_labels 2: transformers' default, whatever this model's head holds

        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(4, 5)

    args, state = _args("/tmp/unused"), type("S", (), {"max_steps": 6, "global_step": 0})()
    cfg = config_from_trainer(args, state, Own(), None, None, None, {}, None)
    assert cfg.task.num_labels == 0


def test_a_training_a_callback_ends_early_says_where_it_stopped(tmp_path):
    """A SIGTERM's checkpoint-and-stop (enable_jit_checkpoint) or early stopping ended training at step 295 of 3000,
    and the report said ok with max_steps 3000, nowhere the step it stopped at."""
    from transformers import TrainerCallback

    from src.report.document import Report, format_summary

    class StopAt5(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            control.should_training_stop = state.global_step >= 5

    tokenizer = _tokenizer()
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path, max_steps=12),
                      train_dataset=_classified(tokenizer), data_collator=DataCollatorWithPadding(tokenizer),
                      callbacks=[StopAt5()])
    attach(trainer)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and rep["stopped_early"] == {"step": 5, "max_steps": 12}
    assert "stopped      at step 5 of 12: a callback or a signal ended training early" in format_summary(Report.from_dict(rep))
