"""Trainer(model_init=...) with no model, the way the hyperparameter-search docs set it up (a fresh model for
every trial) but trained once: the Trainer seeds from TrainingArguments(seed=...) and calls model_init itself,
in __init__ and again at the start of train(); a Qwen3 decoder classifier with its pad_token_id set inside
model_init, a map-style dataset tokenized without padding, DataCollatorWithPadding, a compute_metrics.

    python model_init_no_model.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

model_dir, train_csv, dev_csv, out_dir = sys.argv[1:5]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
raw = load_dataset("csv", data_files={"train": train_csv, "validation": dev_csv})
encoded = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True)


def model_init(trial=None):
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
    model.config.pad_token_id = tokenizer.pad_token_id
    return model


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, per_device_eval_batch_size=16,
                         learning_rate=1e-3, max_steps=8, logging_steps=1, eval_strategy="no", save_strategy="no",
                         report_to="none", seed=42)
trainer = Trainer(model=None, model_init=model_init, args=args, train_dataset=encoded["train"],
                  eval_dataset=encoded["validation"], processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=compute_metrics)
trainer.train()
print(trainer.evaluate())
