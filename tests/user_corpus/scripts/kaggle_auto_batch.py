"""A notebook-style classifier: pandas split into train/valid/test, auto_find_batch_size=True (the Trainer halves
the batch and retries on out-of-memory), an evaluation before the first step (eval_on_start) and every 3 steps
with accuracy and macro F1 from numpy, the best checkpoint kept by accuracy, then trainer.predict on the test
split and a submission CSV of argmax labels.

    python kaggle_auto_batch.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import numpy as np
import pandas as pd
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(42)  # seed_everything, as the notebook's first cell
df = pd.read_csv(CSV).sample(frac=1.0, random_state=42).reset_index(drop=True)
train_df, valid_df, test_df = df.iloc[:112], df.iloc[112:136], df.iloc[136:]

tok = AutoTokenizer.from_pretrained(MODEL)


def encode(frame):
    return Dataset.from_pandas(frame, preserve_index=False).map(
        lambda b: tok(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])


train_ds, valid_ds, test_ds = encode(train_df), encode(valid_df), encode(test_df.drop(columns=["label"]))


def compute_metrics(p):
    preds = p.predictions.argmax(-1)
    acc = (preds == p.label_ids).mean()
    f1s = []
    for k in range(5):
        tp = ((preds == k) & (p.label_ids == k)).sum()
        prec = tp / max((preds == k).sum(), 1)
        rec = tp / max((p.label_ids == k).sum(), 1)
        f1s.append(0 if prec + rec == 0 else 2 * prec * rec / (prec + rec))
    return {"accuracy": float(acc), "macro_f1": float(np.mean(f1s))}


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
args = TrainingArguments(
    output_dir=OUT, auto_find_batch_size=True, per_device_train_batch_size=16, per_device_eval_batch_size=32,
    learning_rate=1e-3, max_steps=9, warmup_steps=0.1, weight_decay=0.01, eval_strategy="steps", eval_steps=3,
    eval_on_start=True, save_strategy="steps", save_steps=3, save_total_limit=1, load_best_model_at_end=True,
    metric_for_best_model="accuracy", greater_is_better=True, logging_steps=1, report_to="none", seed=42)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=valid_ds,
                  data_collator=DataCollatorWithPadding(tok), compute_metrics=compute_metrics)
trainer.train()
pred = trainer.predict(test_ds)
pd.DataFrame({"id": range(len(test_df)), "label": pred.predictions.argmax(-1)}).to_csv(f"{OUT}/submission.csv",
                                                                                         index=False)
print("test rows predicted:", len(pred.predictions))
