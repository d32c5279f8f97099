"""Two false statements the drop-in made on users' scripts (tests/user_corpus/): an R-Drop compute_loss runs the
model twice a micro-batch, and its MFU read half (FLOPs counted one forward a micro-batch); image and audio scripts
read "padding dynamic" (pixel_values have none; input_values pad audio samples, not tokens). Tiny models on the
CPU; the R-Drop, image and audio tests failed before their fixes."""
import json

import pytest
import torch
from torch import nn
from transformers import (BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM, Trainer,
                          TrainerCallback, TrainingArguments, ViTConfig, ViTForImageClassification)

from src import attach
from src.dropin.padding import padding_of, untokenised_of
from src.measure.forwards import ForwardCounter
from src.report.sections import Flops

ROWS = [{"input_ids": [2 + (i + j) % 40 for j in range(6)], "attention_mask": [1] * 6, "labels": i % 3}
        for i in range(48)]


def _args(out, **kw) -> TrainingArguments:
    return TrainingArguments(**{"output_dir": str(out), "max_steps": 6, "per_device_train_batch_size": 4,
                                "logging_steps": 1, "report_to": [], "use_cpu": True, "save_strategy": "no", "seed": 0,
                                **kw})


def _report(out) -> dict:
    return json.loads((out / "trainsweep" / "report.json").read_text())


def _bert() -> BertForSequenceClassification:
    torch.manual_seed(0)
    return BertForSequenceClassification(BertConfig(vocab_size=48, hidden_size=16, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=32, num_labels=3))


class RDropTrainer(Trainer):
    """R-Drop (tests/user_corpus/scripts/rdrop_extra_outputs.py): two dropout forwards, CE + symmetric KL."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        first, second = model(**inputs), model(**inputs)
        p, q = first.logits.log_softmax(-1), second.logits.log_softmax(-1)
        kl = 0.5 * (nn.functional.kl_div(p, q, log_target=True, reduction="batchmean")
                    + nn.functional.kl_div(q, p, log_target=True, reduction="batchmean"))
        loss = 0.5 * (nn.functional.cross_entropy(first.logits, labels)
                      + nn.functional.cross_entropy(second.logits, labels)) + kl
        return (loss, {"logits": first.logits}) if return_outputs else loss


class Kept(TrainerCallback):
    """The drop-in's forward counter as it stood at the last step (it is detached at train end)."""

    def __init__(self, dropin):
        self.dropin, self.counter = dropin, None

    def on_step_end(self, args, state, control, **kw):
        self.counter = self.dropin.forwards


def _train(trainer_class, out, **kw):
    trainer = trainer_class(model=kw.pop("model", None) or _bert(), args=_args(out, **kw), train_dataset=ROWS,
                            eval_dataset=ROWS[:8])
    dropin = attach(trainer, warmup_steps=1, peak_tflops=1.0)  # a peak: MFU is computed on the CPU too
    kept = Kept(dropin)
    trainer.add_callback(kept)
    trainer.train()
    return _report(out), kept.counter


def test_rdrop_counts_the_flops_of_both_forwards(tmp_path, capsys):
    """Per micro-batch, not per step (grad accumulation 2), and evaluation's two forwards a batch (no grad) are
    none of the training's."""
    plain, _ = _train(Trainer, tmp_path / "plain", gradient_accumulation_steps=2)
    capsys.readouterr()
    rdrop, counter = _train(RDropTrainer, tmp_path / "rdrop", gradient_accumulation_steps=2, eval_strategy="steps",
                            eval_steps=2)
    assert counter.micro_batches == 12 and counter.forwards == 24
    fl, was = rdrop["flops"], plain["flops"]
    assert fl["forwards_per_micro_batch"] == 2 and fl["forwards_by"] == "your compute_loss"
    assert fl["per_token"] == pytest.approx(2 * was["per_token"])
    assert fl["per_token_hardware"] == pytest.approx(2 * was["per_token_hardware"])
    assert fl["mfu"] == pytest.approx(rdrop["throughput"]["real_tokens_per_s_per_gpu"] * fl["per_token"] / 1e12)
    assert was["forwards_per_micro_batch"] is None
    out = capsys.readouterr().out
    assert "2 forwards a micro-batch (your compute_loss calls the model twice): FLOPs counted for both" in out


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradient_checkpointing_recompute_is_not_a_forward(tmp_path, reentrant):
    rep, counter = _train(Trainer, tmp_path, gradient_checkpointing=True,
                          gradient_checkpointing_kwargs={"use_reentrant": reentrant})
    assert counter.micro_batches == 6 and counter.forwards == 6
    assert rep["flops"]["forwards_per_micro_batch"] is None


class GeneratingTrainer(Trainer):
    """A training step that samples from the model first (no grad: generate's own), then trains on the batch."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        model.generate(input_ids=inputs["input_ids"][:, :2], max_new_tokens=3, do_sample=False, pad_token_id=0)
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def test_generation_inside_the_training_step_is_not_counted(tmp_path):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=48, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         num_key_value_heads=2, intermediate_size=32))
    rows = [{"input_ids": r["input_ids"], "attention_mask": r["attention_mask"], "labels": r["input_ids"]}
            for r in ROWS]
    trainer = GeneratingTrainer(model=model, args=_args(tmp_path), train_dataset=rows)
    dropin = attach(trainer, warmup_steps=1)
    kept = Kept(dropin)
    trainer.add_callback(kept)
    trainer.train()
    assert kept.counter.forwards == kept.counter.micro_batches == 6
    assert kept.counter.scoring == {}  # generate hands the model its cache at every call: no scoring pass
    assert _report(tmp_path)["flops"]["forwards_per_micro_batch"] is None
    assert _report(tmp_path)["flops"]["scoring_passes"] is None


class Boom:
    def __bool__(self):
        raise RuntimeError("a counter that cannot count")


def test_a_failing_forward_counter_turns_itself_off_and_training_goes_on(tmp_path, capsys):
    class Break(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if dropin.forwards is not None:
                dropin.forwards.stepping = Boom()  # the hook's first read raises

    trainer = RDropTrainer(model=_bert(), args=_args(tmp_path), train_dataset=ROWS)
    dropin = attach(trainer, warmup_steps=1)
    trainer.add_callback(Break())
    trainer.train()
    err = capsys.readouterr().err
    assert err.count("counting forwards turned itself off") == 1 and "a counter that cannot count" in err
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and "counting forwards" in rep["turned_off"]
    assert rep["flops"]["forwards_per_micro_batch"] is None  # unknown: left at one, never a guess


def test_forward_counter_alone():
    module, errors = nn.Linear(2, 2), []
    counter = ForwardCounter(module, on_error=errors.append)
    module(torch.ones(1, 2))  # before the step begins: not the training's
    counter.stepping = True
    counter.listen({}, None)
    module(torch.ones(1, 2))
    module(torch.ones(1, 2))
    with torch.no_grad():
        module(torch.ones(1, 2))
    module.eval()
    module(torch.ones(1, 2))
    assert (counter.forwards, counter.micro_batches, counter.per_micro_batch()) == (2, 1, 2.0)
    counter.remove()
    assert not module._forward_pre_hooks and not errors
    assert Flops(per_token=1e9).line().startswith("1 GFLOP/token; MFU")  # one forward: said as before


# -- padding of batches without input_ids -------------------------------------------------------------------------
def test_image_batches_read_no_padding(tmp_path, capsys):
    torch.manual_seed(0)
    model = ViTForImageClassification(ViTConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=1,
                                                num_attention_heads=2, intermediate_size=32, num_labels=3))
    rows = [{"pixel_values": torch.randn(3, 8, 8), "labels": i % 3} for i in range(32)]
    trainer = Trainer(model=model, args=_args(tmp_path), train_dataset=rows)
    attach(trainer, warmup_steps=1)
    trainer.train()
    padding = _report(tmp_path)["config"]["padding"]
    assert padding["strategy"] == "none" and padding["note"] == "pixel_values, fixed-size"
    out = capsys.readouterr().out
    assert "padding none (pixel_values, fixed-size)" in out and "padding dynamic" not in out


def test_an_image_classifiers_doubled_accumulated_loss_is_checked_not_skipped(tmp_path):
    """A ResNet at grad_accum 2 logs twice its loss (its forward takes num_items_in_batch, and ignores it): the
    check ran only on token rows and said not_run, for a reason about input_ids. Its own batches are probed now,
    in eval mode (BatchNorm's running statistics untouched: the losses are the plain run's)."""
    from transformers import ResNetConfig, ResNetForImageClassification

    def run(out, attached):
        torch.manual_seed(0)
        model = ResNetForImageClassification(ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16],
                                                          depths=[1, 1], num_labels=3, layer_type="basic"))
        rows = [{"pixel_values": torch.randn(3, 16, 16, generator=torch.Generator().manual_seed(i)), "labels": i % 3}
                for i in range(32)]
        trainer = Trainer(model=model, args=_args(out, gradient_accumulation_steps=2), train_dataset=rows)
        if attached:
            attach(trainer, warmup_steps=1)
        trainer.train()
        return [e["loss"] for e in trainer.state.log_history if "loss" in e]

    assert run(tmp_path / "attached", True) == run(tmp_path / "plain", False)
    check = next(c for c in _report(tmp_path / "attached")["diagnostics"] if c["check"] == "train.grad_accum_loss")
    assert check["status"] == "fail" and "= False before trainer.train()" in check["hint"], check


def test_audio_padding_is_of_samples_not_tokens():
    """Clips of several lengths: the collator pads samples, whose share the token counts don't judge; clips all of
    one length were cut or padded before the collator (Whisper's 30 s of frames): not called dynamic."""
    args = TrainingArguments("unused", report_to=[], use_cpu=True)
    clips = [{"input_values": [0.1] * (1600 - 40 * i), "labels": i % 2} for i in range(12)]
    seen = untokenised_of(clips, None)
    assert seen == {"input": "input_values", "shapes": {(1600 - 40 * i,) for i in range(8)}, "mask": False, "rows": 8}
    padding = padding_of(None, args, None, seen)
    assert padding["strategy"] == "dynamic" and padding["note"] == "of audio samples in input_values, not tokens; " \
                                                                   "its share not judged"
    grouped = TrainingArguments("unused", report_to=[], use_cpu=True, train_sampling_strategy="group_by_length")
    assert padding_of(None, grouped, None, seen)["strategy"] == "grouped"
    frames = [{"input_features": torch.zeros(80, 3000), "labels": [5, 6]} for _ in range(4)]
    padding = padding_of(None, args, None, untokenised_of(frames, None))
    assert padding["strategy"] == "not judged"
    assert padding["note"] == ("input_features: the first 4 rows all 3000 feature frames long; padding in them, if "
                               "any, was done before the collator")
    # rows the collator alone makes readable (a tuple a row): its batch of one, the batch dimension taken off
    pairs = [(torch.zeros(3, 8, 8), 1) for _ in range(4)]

    def collate(batch):
        return {"pixel_values": torch.stack([x for x, _ in batch]), "labels": torch.tensor([y for _, y in batch])}

    assert untokenised_of(pairs, collate) == {"input": "pixel_values", "shapes": {(3, 8, 8)}, "mask": False, "rows": 4}
    assert untokenised_of(ROWS, None) is None  # token rows: the token padding's own reading


def test_audio_script_reads_padding_of_samples(tmp_path, capsys):
    """run_audio_classification's shape: clips of several lengths, padded by the default collator over the feature
    extractor (DataCollatorWithPadding), a Wav2Vec2 classifier."""
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    torch.manual_seed(0)
    model = Wav2Vec2ForSequenceClassification(Wav2Vec2Config(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
        conv_stride=(5, 4), conv_kernel=(10, 4), num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2,
        num_labels=2, classifier_proj_size=8))
    extractor = Wav2Vec2FeatureExtractor(return_attention_mask=True)
    clips = [{"input_values": torch.randn(400 + 40 * (i % 7)).tolist(), "labels": i % 2} for i in range(32)]
    trainer = Trainer(model=model, args=_args(tmp_path), train_dataset=clips, processing_class=extractor)
    attach(trainer, warmup_steps=1)
    trainer.train()
    padding = _report(tmp_path)["config"]["padding"]
    assert padding["strategy"] == "dynamic" and "audio samples" in padding["note"]
    out = capsys.readouterr().out
    assert "padding dynamic (of audio samples in input_values, not tokens; its share not judged)" in out


def test_a_compiled_model_is_counted_on_its_wrapper_and_compiles_as_without_it(tmp_path):
    """TrainingArguments(torch_compile=True): the hook sits on torch.compile's wrapper, outside the graph (a counter
    inside it would be a guard on its value: a recompile every step)."""
    import torch._dynamo.utils

    graphs = torch._dynamo.utils.counters["stats"]

    def compiled(cls, out, measured):
        torch._dynamo.reset()
        before = graphs["unique_graphs"]
        trainer = cls(model=_bert(), args=_args(out, torch_compile=True, torch_compile_backend="eager"),
                      train_dataset=ROWS)
        kept = Kept(attach(trainer, warmup_steps=1)) if measured else None
        if kept:
            trainer.add_callback(kept)
        trainer.train()
        return graphs["unique_graphs"] - before, kept and kept.counter

    alone, _ = compiled(RDropTrainer, tmp_path / "alone", measured=False)
    with_hook, counter = compiled(RDropTrainer, tmp_path / "measured", measured=True)
    assert alone >= 1 and with_hook == alone and (counter.forwards, counter.micro_batches) == (12, 6)
    assert _report(tmp_path / "measured")["flops"]["forwards_per_micro_batch"] == 2


class RefScoringTrainer(Trainer):
    """DPO's shape of step: a frozen reference scores the micro-batch without grad, then the model trains on it."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        with torch.no_grad():
            ref = self.ref_model(**{k: v for k, v in inputs.items() if k != "labels"}).logits
        out = model(**{k: v for k, v in inputs.items() if k != "labels"})
        loss = nn.functional.cross_entropy(out.logits, inputs["labels"]) + 0 * ref.sum()
        return (loss, out) if return_outputs else loss


def test_a_reference_models_scoring_pass_is_counted_at_its_forward_flops(tmp_path, capsys):
    """TRL's DPO runs a reference over each micro-batch: a forward the loss needs. Left out, a LoRA run's MFU read a
    third low; generation (one token at a time) and evaluation stay out."""
    from src.model.flops import forward_per_token

    plain, _ = _train(Trainer, tmp_path / "plain", gradient_accumulation_steps=2)
    capsys.readouterr()
    trainer = RefScoringTrainer(model=_bert(), args=_args(tmp_path / "ref", gradient_accumulation_steps=2,
                                                         eval_strategy="steps", eval_steps=2),
                                train_dataset=ROWS, eval_dataset=ROWS[:8])
    trainer.ref_model = _bert().eval()
    dropin = attach(trainer, warmup_steps=1, peak_tflops=1.0)
    kept = Kept(dropin)
    trainer.add_callback(kept)
    trainer.train()
    rep = _report(tmp_path / "ref")
    assert kept.counter.forwards == kept.counter.micro_batches == 12 and kept.counter.scoring == {"ref_model": kept.counter.fetched}
    fl = rep["flops"]
    each = forward_per_token(trainer.ref_model, trainer.ref_model.config, fl["seq"])
    assert fl["scoring_passes"] == {"ref_model": 1.0} and fl["forwards_per_micro_batch"] is None
    assert fl["per_token"] == pytest.approx(plain["flops"]["per_token"] + each)
    assert fl["per_token_hardware"] == pytest.approx(plain["flops"]["per_token_hardware"] + each)
    assert fl["mfu"] == pytest.approx(rep["throughput"]["real_tokens_per_s_per_gpu"] * fl["per_token"] / 1e12)
    assert "plus forwards without grad over the batches' tokens (1x by ref_model: a reference's or teacher's scoring, as DPO's) counted as forward FLOPs" in capsys.readouterr().out
    assert plain["flops"]["scoring_passes"] is None


class DistillTrainer(Trainer):
    """A distilling subclass of a user's own: its teacher kept as `self.teacher`, a name TRL does not use, beside a
    loss module of its own (no config: never counted as a model)."""

    def __init__(self, *args, teacher=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.teacher, self.kl = teacher, nn.KLDivLoss(reduction="batchmean")

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        features = {k: v for k, v in inputs.items() if k != "labels"}
        with torch.no_grad():
            soft = self.teacher(**features).logits.softmax(-1)
        out = model(**features)
        loss = nn.functional.cross_entropy(out.logits, inputs["labels"]) + self.kl(out.logits.log_softmax(-1), soft)
        return (loss, out) if return_outputs else loss


def test_a_teacher_under_a_name_of_the_scripts_own_is_counted(tmp_path):
    """user corpus: distill_teacher_subclass kept its teacher as `self.teacher`; only TRL's names were looked for,
    so its forwards went uncounted and MFU read low by the teacher's share."""
    trainer = DistillTrainer(model=_bert(), args=_args(tmp_path), train_dataset=ROWS, teacher=_bert().eval())
    dropin = attach(trainer, warmup_steps=1, peak_tflops=1.0)
    kept = Kept(dropin)
    trainer.add_callback(kept)
    trainer.train()
    assert kept.counter.scoring == {"teacher": kept.counter.fetched} and "kl" not in kept.counter.modules
    assert _report(tmp_path)["flops"]["scoring_passes"] == {"teacher": 1.0}


def test_trls_dpo_reference_is_counted_with_a_ref_model_and_with_adapters_off(tmp_path):
    """TRL's own DPOTrainer: a full fine-tune keeps a ref_model copy; a LoRA run scores with the adapters off, the
    model itself without grad. Either way one scoring pass a micro-batch."""
    trl = pytest.importorskip("trl")
    from peft import LoraConfig
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    words = "the a tax paid due late refund form bank office".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]"] + words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")
    rows = [{"prompt": " ".join(words[(i + j) % 10] for j in range(2 + i % 3)),
             "chosen": " ".join(words[(i * 3 + j) % 10] for j in range(1 + i % 4)),
             "rejected": " ".join(words[(i * 7 + j) % 10] for j in range(2 + i % 2))} for i in range(32)]
    from datasets import Dataset

    torch.manual_seed(0)  # saved: TRL builds the full fine-tune's reference from the model's path
    Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1, head_dim=16, pad_token_id=0,
                                 eos_token_id=2)).save_pretrained(tmp_path / "model")
    for peft_config, who in ((None, "ref_model"), (LoraConfig(r=4, target_modules=["q_proj", "v_proj"]), "model")):
        model, out = str(tmp_path / "model"), tmp_path / who
        args = trl.DPOConfig(output_dir=str(out), max_steps=4, per_device_train_batch_size=4, logging_steps=1,
                             report_to=[], use_cpu=True, save_strategy="no", bf16=False)
        trainer = trl.DPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                                 processing_class=tokenizer, peft_config=peft_config)
        attach(trainer, warmup_steps=1)
        trainer.train()
        assert _report(out)["flops"]["scoring_passes"] == {who: 1.0}


def test_a_model_saved_whole_during_training_pickles_with_the_counters_hooks_on_it(tmp_path):
    """torch.save(model) in a user's callback at step 2 raised into the run under attach: the forward counter's
    hooks held a lambda of the callback ("Can't pickle local object")."""
    from transformers import TrainerCallback

    class SaveWhole(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kw):
            if state.global_step == 2:
                torch.save(model, tmp_path / "whole.pt")

    trainer = Trainer(model=_bert(), args=_args(tmp_path), train_dataset=ROWS, callbacks=[SaveWhole()])
    attach(trainer, warmup_steps=1)
    trainer.train()
    copy = torch.load(tmp_path / "whole.pt", weights_only=False)
    copy.train()
    with torch.enable_grad():
        copy(input_ids=torch.tensor([ROWS[0]["input_ids"]]))  # its hooks count nothing, and raise nothing
    assert _report(tmp_path)["status"] == "ok"
