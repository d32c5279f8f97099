"""Evaluation during training: eval and save every 4 steps, load_best_model_at_end with metric_for_best_model,
EarlyStoppingCallback, a compute_metrics of its own, a held-out split.
    python eval_early_stopping.py MODEL cls.csv OUT"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          EarlyStoppingCallback, Trainer, TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=data, split="train").train_test_split(test_size=0.2, seed=1)
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)


def accuracy(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


args = TrainingArguments(output_dir=out, eval_strategy="steps", eval_steps=4, save_strategy="steps", save_steps=4,
                         load_best_model_at_end=True, metric_for_best_model="accuracy", greater_is_better=True,
                         max_steps=12, per_device_train_batch_size=8, per_device_eval_batch_size=16,
                         learning_rate=1e-3, logging_steps=1, report_to="none", save_total_limit=2, seed=0)
trainer = Trainer(model=AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4), args=args,
                  train_dataset=ds["train"], eval_dataset=ds["test"], processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=accuracy,
                  callbacks=[EarlyStoppingCallback(early_stopping_patience=2)])
trainer.train()
print(trainer.evaluate())
