"""Trainer scripts outside text classification and causal LMs, as tests/user_corpus/ met them: a model of the
script's own (an nn.Module without .config) turned measuring off; image and audio batches (pixel_values,
input_values: no input_ids) were counted as 0 samples and 0 tokens; the report's uniform guess was ln(vocab) or
ln 2 for token classifiers, multiple choice, QA spans, CTC and ViTs; multiple-choice rows were said to hold no
input_ids. Each test failed before its fix, on tiny models on the CPU."""
import json
import math

import torch
from torch import nn
from transformers import Trainer, TrainingArguments, ViTConfig, ViTForImageClassification

from src import attach
from src.dropin.reading import Rows
from src.measure.meter import TokenCounter, window_tokens
from src.report import analysis
from src.report.analysis import expected_initial_loss, throughput
from src.report.sections import Throughput


def _args(out, **kw) -> TrainingArguments:
    return TrainingArguments(**{"output_dir": str(out), "max_steps": 8, "per_device_train_batch_size": 4,
                                "logging_steps": 1, "report_to": [], "use_cpu": True, "save_strategy": "no", "seed": 0,
                                **kw})


def _report(out) -> dict:
    return json.loads((out / "trainsweep" / "report.json").read_text())


class OwnClassifier(nn.Module):
    """No PreTrainedModel: no .config, a dict out (the blog posts' mean-pooling classifier)."""

    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(16, 8), nn.Linear(8, 3)

    def forward(self, input_ids, attention_mask, labels=None):
        mask = attention_mask.unsqueeze(-1).float()
        logits = self.head((self.embed(input_ids) * mask).sum(1) / mask.sum(1))
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def test_a_model_without_config_is_measured_not_turned_off(tmp_path, capsys):
    rows = [{"input_ids": [1 + (i + j) % 15 for j in range(3 + i % 5)], "label": i % 3} for i in range(32)]

    def collate(batch):
        width = max(len(r["input_ids"]) for r in batch)
        return {"input_ids": torch.tensor([r["input_ids"] + [0] * (width - len(r["input_ids"])) for r in batch]),
                "attention_mask": torch.tensor([[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"]))
                                                for r in batch]),
                "labels": torch.tensor([r["label"] for r in batch])}

    torch.manual_seed(0)
    trainer = Trainer(model=OwnClassifier(), args=_args(tmp_path, remove_unused_columns=False), train_dataset=rows,
                      data_collator=collate)
    callback = attach(trainer)
    trainer.train()
    assert "turned itself off" not in capsys.readouterr().err and not callback.guard.off
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and rep["config"]["model"]["name"] == "OwnClassifier"
    assert rep["throughput"]["samples_per_s"] > 0 and rep["loss"]["expected_initial"] is None
    # no transformers model inside: no attention named (it read "eager"), and its class said once, not as its task too
    assert rep["resolved"]["attention"] == "unknown (a model of your own)"
    assert "| model | OwnClassifier, peft none" in (tmp_path / "trainsweep" / "report.md").read_text()


def test_image_batches_count_their_samples_and_no_tokens(tmp_path, capsys):
    torch.manual_seed(0)
    model = ViTForImageClassification(ViTConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=1,
                                                num_attention_heads=2, intermediate_size=32, num_labels=3))
    rows = [{"pixel_values": torch.randn(3, 8, 8), "labels": i % 3} for i in range(32)]
    trainer = Trainer(model=model, args=_args(tmp_path, max_steps=10), train_dataset=rows)
    attach(trainer, warmup_steps=2)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["tokens"]["samples"] > 0 and rep["tokens"]["all"] is None and rep["tokens"]["real"] is None
    assert rep["throughput"]["samples_per_s"] > 0 and rep["throughput"]["real_tokens_per_s"] is None
    out = capsys.readouterr().out
    assert "- real tok/s" in out and "(no interval) real tok/s" not in out
    assert rep["loss"]["expected_initial"] is None  # not ln 2 from a vocab_size a ViT doesn't have


def test_token_counter_on_audio_batches_counts_rows():
    counter = TokenCounter("classification")
    start = counter.snapshot()
    counter.add({"input_values": torch.randn(4, 1600), "attention_mask": torch.ones(4, 1600, dtype=torch.long),
                 "labels": torch.tensor([0, 1, 2, 3])})
    tokens = window_tokens(start, counter.snapshot())
    assert tokens == {"samples": 4, "all": 0, "real": 0, "loss": 0}
    th = throughput(tokens, steps=1, step_s=0.5)
    assert th.samples_per_s == 8 and th.tokens_per_s is None and th.real_tokens_per_s is None
    assert th.loss_tokens_per_s is None and th.pad_fraction is None
    assert analysis.tokens_section(tokens).to_dict() == {"samples": 4, "all": None, "real": None, "loss": None}
    assert Throughput(samples_per_s=8.0).real_tok_text() == "-"


def test_token_counter_counts_the_rows_of_batches_under_keys_of_the_scripts_own():
    """A bi-encoder's q_input_ids and p_input_ids, a GRU's token_ids, lengths and targets (user corpus:
    biencoder_inbatch, gru_tuple_output): rows were there, and the report said the batches held none."""
    counter = TokenCounter("BiEncoder")
    start = counter.snapshot()
    counter.add({"q_input_ids": torch.ones(8, 12, dtype=torch.long), "p_input_ids": torch.ones(8, 30, dtype=torch.long)})
    counter.add({"token_ids": torch.ones(6, 9, dtype=torch.long), "lengths": torch.full((6,), 9), "targets": torch.zeros(6)})
    counter.add({"a": torch.ones(4, 5), "b": torch.ones(5, 4)})  # no dimension every tensor shares: not guessed at
    assert window_tokens(start, counter.snapshot()) == {"samples": 14, "all": 0, "real": 0, "loss": 0}


def test_token_counter_reads_a_list_batch_a_dict_of_labels_and_trls_older_preference_pairs():
    """User corpus: tensor_dataset_tuple_batch (default_collate's list: its rows went uncounted, "no rows to
    count"), multitask_dict_labels (labels a dict of heads: 0 loss items), trl_orpo_lora (chosen_/rejected_ keys:
    tokens unknown)."""
    counter = TokenCounter("causal_lm")
    start = counter.snapshot()
    counter.add_batch([torch.ones(4, 32, dtype=torch.long), torch.ones(4, 32, dtype=torch.long)])
    counter.add_batch(("not", "tensors"))  # nothing sharing a batch dimension: not guessed at
    counter.add_batch(object())
    assert window_tokens(start, counter.snapshot()) == {"samples": 4, "all": 0, "real": 0, "loss": 0}

    heads = TokenCounter("MultiHead")
    heads.add_batch({"input_ids": torch.ones(8, 10, dtype=torch.long), "attention_mask": torch.ones(8, 10),
                     "labels": {"topic": torch.arange(8), "urgent": torch.zeros(8, dtype=torch.long)}})
    assert window_tokens(start, heads.snapshot())["loss"] == 16  # 8 rows, each scored by both heads

    pairs = TokenCounter("causal_lm", sequences_per_sample=2)
    chosen_mask, rejected_mask = torch.ones(3, 7), torch.ones(3, 5)
    chosen_mask[0, 5:] = 0
    chosen_labels = torch.full((3, 7), -100)
    chosen_labels[:, 4:] = 1  # 3 completion tokens a row; the shift drops none (the first label is -100)
    rejected_labels = torch.full((3, 5), -100)
    rejected_labels[:, 3:] = 1
    pairs.add_batch({"prompt_input_ids": torch.ones(3, 3, dtype=torch.long),
                     "chosen_input_ids": torch.ones(3, 7, dtype=torch.long), "chosen_attention_mask": chosen_mask,
                     "chosen_labels": chosen_labels, "rejected_input_ids": torch.ones(3, 5, dtype=torch.long),
                     "rejected_attention_mask": rejected_mask, "rejected_labels": rejected_labels})
    # the trainer pads both to 7 and stacks them: 2 x 3 x 7 positions, 3 samples (rows)
    assert window_tokens(start, pairs.snapshot()) == {"samples": 3, "all": 42, "real": 19 + 15, "loss": 9 + 6}
    assert pairs.widest == 42

    from src.dropin.padding import sequences_per_row

    def collate(rows):
        return {"chosen_input_ids": torch.ones(len(rows), 4), "rejected_input_ids": torch.ones(len(rows), 4)}

    assert sequences_per_row([{"prompt": "a"}], collate) == 2


def test_padding_says_unknown_where_no_row_was_read_and_nothing_to_pad_for_rows_of_one_length():
    """tensor_dataset_tuple_batch read no row and said "padding dynamic"; run_clm's blocks through the default
    collator said "dynamic" beside pad 0.0%."""
    from types import SimpleNamespace

    from transformers import default_data_collator

    from src.dropin.padding import padding_of
    from src.dropin.reading import Rows

    args = SimpleNamespace(group_by_length=False)
    assert padding_of(None, args, default_data_collator) == {
        "strategy": "unknown", "pad_to_multiple_of": None, "chunk_size": 1000, "note": "no rows of input_ids to read"}
    padder = SimpleNamespace(tokenizer=object(), padding=True)  # transformers' padding collators: dynamic, unread
    assert padding_of(None, args, padder)["strategy"] == "dynamic"
    blocks = [{"input_ids": list(range(32)), "attention_mask": [1] * 32} for _ in range(6)]
    read, _ = Rows.head(blocks, default_data_collator)
    padding = padding_of(read, args, default_data_collator)
    assert padding["strategy"] == "dynamic" and padding["note"] == "every row read is 32 tokens: nothing to pad"
    ragged = [{"input_ids": list(range(n)), "attention_mask": [1] * n} for n in (5, 9, 12)]
    assert "note" not in padding_of(Rows.head(ragged, None)[0], args, padder)


def test_the_uniform_guess_is_said_only_where_the_width_is_known():
    assert expected_initial_loss("classification", 5, 240) == math.log(5)
    assert expected_initial_loss("token_classification", 7, 240) == math.log(7)  # was ln(vocab)
    assert expected_initial_loss("multi_label", 6, 240) == math.log(2)
    assert expected_initial_loss("causal_lm", 2, 240) == math.log(240)
    assert expected_initial_loss("BertForMaskedLM", 2, 240) == math.log(240)
    for task in ("regression", "BertForMultipleChoice", "BertForQuestionAnswering", "Wav2Vec2ForCTC",
                 "ViTForImageClassification", "OwnClassifier"):
        assert expected_initial_loss(task, 2, 240) is None, task
    assert expected_initial_loss("causal_lm", None, None) is None


def test_multiple_choice_rows_are_not_said_to_lack_input_ids():
    rows = [{"input_ids": [[2, 5, 6, 3]] * 4, "attention_mask": [[1] * 4] * 4, "label": i % 4} for i in range(8)]

    def collate(batch):
        return {"input_ids": torch.tensor([r["input_ids"] for r in batch]),
                "labels": torch.tensor([r["label"] for r in batch])}

    read, why = Rows.head(rows, collate)
    assert read is None and "4 sequences" in why and "without input_ids" not in why
    # a sample is the row ([rows, choices, length]), and each row is 4 sequences for the attention's length
    from src.dropin.padding import sequences_per_row
    from src.measure.meter import TokenCounter

    assert sequences_per_row(rows, collate) == 4
    counter = TokenCounter("MultipleChoice", sequences_per_sample=4)
    counter.add(collate(rows))
    assert counter.host["samples"] == 8 and counter.host["all"] == 8 * 4 * 4


def test_multiple_choice_under_grad_accum_gets_its_loss_scale_checked(tmp_path):
    """run_swag with --gradient_accumulation_steps 2 logs 2 ln 4 at step 1: BertForMultipleChoice's loss is each
    micro-batch's mean. Its rows (4 sequences each) are read as no token rows, and the accumulated-loss check,
    which needs none, was skipped without a word: "0 fail"."""
    from transformers import BertConfig, BertForMultipleChoice

    torch.manual_seed(0)
    model = BertForMultipleChoice(BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                             intermediate_size=32))
    rows = [{"input_ids": [[2 + (i + c + j) % 29 for j in range(6)] for c in range(4)],
             "attention_mask": [[1] * 6 for _ in range(4)], "label": i % 4} for i in range(32)]
    trainer = Trainer(model=model, args=_args(tmp_path, gradient_accumulation_steps=2), train_dataset=rows)
    attach(trainer)
    trainer.train()
    checks = {c["check"]: c for c in _report(tmp_path)["diagnostics"]}
    assert checks["train.grad_accum_loss"]["status"] == "fail" and "2x too large" in checks["train.grad_accum_loss"]["hint"]
