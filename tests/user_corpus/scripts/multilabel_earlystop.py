"""Multi-label tagging (the "fine-tune for multi-label classification" blog posts): problem_type=
"multi_label_classification", labels a float multi-hot vector per row (BCEWithLogits inside the model), a
compute_metrics of micro-F1 at a 0.5 sigmoid threshold, eval every 2 steps, EarlyStoppingCallback(patience=2) on
metric_for_best_model="micro_f1" (greater_is_better), load_best_model_at_end, save_total_limit=1.
Qwen3 decoder classifier (pad id on the config), DataCollatorWithPadding, grad accum 2.

    python multilabel_earlystop.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys
import numpy as np
import pandas as pd
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          EarlyStoppingCallback, Trainer, TrainingArguments, set_seed)

MODEL, TRAIN, DEV, OUT = sys.argv[1:5]
TAGS = 5
set_seed(13)
tok = AutoTokenizer.from_pretrained(MODEL)

def load(path):
    df = pd.read_csv(path)
    hot = np.zeros((len(df), TAGS), dtype=np.float32)
    hot[np.arange(len(df)), df.label] = 1.0
    hot[np.arange(len(df)), (df.label + 1) % TAGS] = (df.text.str.len() % 2).astype(np.float32)
    ds = Dataset.from_dict({"text": df.text.tolist(), "labels": hot.tolist()})
    return ds.map(lambda b: tok(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])

train, dev = load(TRAIN), load(DEV)
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=TAGS,
                                                           problem_type="multi_label_classification")
model.config.pad_token_id = tok.pad_token_id

def metrics(p):
    pred = (1 / (1 + np.exp(-p.predictions)) > 0.5).astype(int)
    y = p.label_ids.astype(int)
    tp, fp, fn = (pred & y).sum(), (pred & (1 - y)).sum(), ((1 - pred) & y).sum()
    return {"micro_f1": float(2 * tp / max(2 * tp + fp + fn, 1))}

args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=2e-3, max_steps=12, logging_steps=1, eval_strategy="steps", eval_steps=2,
                         save_strategy="steps", save_steps=2, save_total_limit=1, load_best_model_at_end=True,
                         metric_for_best_model="micro_f1", greater_is_better=True, report_to="none", seed=13)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=dev, data_collator=DataCollatorWithPadding(tok),
                  compute_metrics=metrics, callbacks=[EarlyStoppingCallback(early_stopping_patience=2)])
trainer.train()
print("BEST", trainer.state.best_model_checkpoint, trainer.state.best_metric)
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
print("EVALS", [(e["step"], e["eval_micro_f1"]) for e in trainer.state.log_history if "eval_micro_f1" in e])
