"""K-fold cross-validation, Kaggle style: pandas, a fold column, for each fold a fresh model and a fresh Trainer
(output_dir per fold), train() then evaluate() on the held-out fold, a CV score averaged at the end.
Qwen3 decoder classifier, DataCollatorWithPadding, grad accum 2.

    python kfold_cv.py QWEN3_DIR cls_train.csv OUT
"""
import sys
import numpy as np
import pandas as pd
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
N_FOLDS = 3
df = pd.read_csv(CSV)
df["fold"] = np.arange(len(df)) % N_FOLDS
tok = AutoTokenizer.from_pretrained(MODEL)

def enc(b):
    return tok(b["text"], truncation=True, max_length=64)

scores, all_losses = [], []
for fold in range(N_FOLDS):
    set_seed(42 + fold)
    tr = Dataset.from_pandas(df[df.fold != fold].reset_index(drop=True)).map(enc, batched=True)
    va = Dataset.from_pandas(df[df.fold == fold].reset_index(drop=True)).map(enc, batched=True)
    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
    args = TrainingArguments(output_dir=f"{OUT}/fold{fold}", per_device_train_batch_size=8,
                             gradient_accumulation_steps=2, learning_rate=5e-4, max_steps=5, logging_steps=1,
                             save_strategy="no", report_to="none", seed=42 + fold, per_device_eval_batch_size=16)
    trainer = Trainer(model=model, args=args, train_dataset=tr, eval_dataset=va,
                      data_collator=DataCollatorWithPadding(tok),
                      compute_metrics=lambda p: {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())})
    trainer.train()
    m = trainer.evaluate()
    scores.append(m["eval_accuracy"])
    all_losses += [e["loss"] for e in trainer.state.log_history if "loss" in e]
    print("EVAL", fold, m["eval_loss"])
print("CV", np.mean(scores))
print("LOSSES", all_losses)
