"""Sentence-pair classification (paraphrase-style, as in the MRPC fine-tuning tutorials) on BERT: the tokenizer
called on (sentence1, sentence2) so rows carry token_type_ids, STS scores thresholded into two labels,
DataCollatorWithPadding(pad_to_multiple_of=8) as the tutorials advise for tensor cores, the Trainer's default
AdamW with the cosine schedule floored by lr_scheduler_kwargs={"min_lr": 1e-4} ("cosine_with_min_lr"), accuracy
and F1 from evaluate-free numpy, evaluation at the end.

    python bert_pair_pad8.py BERT_DIR sts.csv OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

checkpoint, sts_csv, out_dir = sys.argv[1:4]
set_seed(2024)

raw = load_dataset("csv", data_files=sts_csv)["train"]
raw = raw.map(lambda ex: {"label": int(ex["score"] >= 3.0)}, remove_columns=["score"])
raw = raw.train_test_split(test_size=0.25, seed=2024)

tokenizer = AutoTokenizer.from_pretrained(checkpoint)


def tokenize_function(example):
    return tokenizer(example["sentence1"], example["sentence2"], truncation=True)


tokenized = raw.map(tokenize_function, batched=True, remove_columns=["sentence1", "sentence2"])
print(tokenized["train"].column_names)
collator = DataCollatorWithPadding(tokenizer=tokenizer, pad_to_multiple_of=8)
model = AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)


def compute_metrics(eval_preds):
    logits, labels = eval_preds
    preds = np.argmax(logits, axis=-1)
    tp = int(((preds == 1) & (labels == 1)).sum())
    precision = tp / max(int((preds == 1).sum()), 1)
    recall = tp / max(int((labels == 1).sum()), 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-9)
    return {"accuracy": float((preds == labels).mean()), "f1": f1}


training_args = TrainingArguments(out_dir, per_device_train_batch_size=8, per_device_eval_batch_size=16,
                                  max_steps=8, learning_rate=1e-3, lr_scheduler_type="cosine_with_min_lr",
                                  lr_scheduler_kwargs={"min_lr": 1e-4}, warmup_steps=2, weight_decay=0.01,
                                  logging_steps=1, eval_strategy="no", save_strategy="no", report_to="none",
                                  seed=2024)
trainer = Trainer(model, training_args, train_dataset=tokenized["train"], eval_dataset=tokenized["test"],
                  data_collator=collator, processing_class=tokenizer, compute_metrics=compute_metrics)
trainer.train()
print(trainer.evaluate())
