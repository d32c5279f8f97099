"""STS-B style regression: sentence pairs, a float score, num_labels=1 (the model's problem_type becomes
"regression"), DataCollatorWithPadding, a plain argparse front.
    python sts_regression.py MODEL sts.csv OUT"""
import argparse

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("data")
p.add_argument("out")
a = p.parse_args()

tok = AutoTokenizer.from_pretrained(a.model)
ds = load_dataset("csv", data_files=a.data)["train"]
ds = ds.map(lambda b: tok(b["sentence1"], b["sentence2"], truncation=True), batched=True)
ds = ds.rename_column("score", "labels").remove_columns(["sentence1", "sentence2"])
ds = ds.map(lambda r: {"labels": float(r["labels"])})
model = AutoModelForSequenceClassification.from_pretrained(a.model, num_labels=1)
args = TrainingArguments(a.out, max_steps=8, per_device_train_batch_size=8, learning_rate=5e-4, logging_steps=1,
                         report_to="none", save_strategy="no", seed=42)
Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tok)).train()
