"""Multi-output regression: one decoder classifier head predicting TWO numbers a row
(AutoModelForSequenceClassification(num_labels=2, problem_type="regression"), so the model's loss is MSE over
both columns), labels a float pair per row (the STS score rescaled to [0, 1] and the word-overlap ratio of the two
sentences), the sentence pair tokenized together, epochs instead of steps (num_train_epochs=2, eval and logging
by strategy: eval once an epoch, a loss every 2 steps), per-target RMSE in compute_metrics. Small functions called
from a __main__ block with sys.argv unpacked; a Qwen3 checkpoint with its pad id on the config.

    python multi_target_regression.py QWEN3_DIR sts.csv OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


def overlap(a, b):
    a, b = set(a.split()), set(b.split())
    return len(a & b) / max(1, len(a | b))


def load(csv_path, tokenizer):
    ds = load_dataset("csv", data_files=csv_path, split="train").train_test_split(test_size=0.25, seed=0)

    def encode(batch):
        enc = tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, max_length=64)
        enc["labels"] = [[s / 5.0, overlap(a, b)] for s, a, b in
                         zip(batch["score"], batch["sentence1"], batch["sentence2"])]
        return enc

    cols = ds["train"].column_names
    return ds.map(encode, batched=True, remove_columns=cols)


def rmse_per_target(eval_pred):
    preds, labels = eval_pred
    err = np.sqrt(((preds - labels) ** 2).mean(axis=0))
    return {"rmse_score": float(err[0]), "rmse_overlap": float(err[1])}


def build_trainer(model_dir, tokenizer, splits, out_dir):
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2,
                                                               problem_type="regression")
    model.config.pad_token_id = tokenizer.pad_token_id
    args = TrainingArguments(output_dir=out_dir, num_train_epochs=2, per_device_train_batch_size=16,
                             per_device_eval_batch_size=32, learning_rate=2e-3, eval_strategy="epoch",
                             logging_strategy="steps", logging_steps=2, save_strategy="no", report_to="none",
                             seed=13)
    return Trainer(model=model, args=args, train_dataset=splits["train"], eval_dataset=splits["test"],
                   processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                   compute_metrics=rmse_per_target)


if __name__ == "__main__":
    model_dir, csv_path, out_dir = sys.argv[1:4]
    set_seed(13)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    splits = load(csv_path, tokenizer)
    trainer = build_trainer(model_dir, tokenizer, splits, out_dir)
    trainer.train()
    print(trainer.evaluate())
