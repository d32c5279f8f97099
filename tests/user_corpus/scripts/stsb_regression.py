"""STS-B style sentence-pair regression, as in the "fine-tune BERT for semantic similarity" blog posts: pandas
reads the CSV, Dataset.from_pandas, num_labels=1 so the model computes an MSE loss on float scores, dynamic
padding with DataCollatorWithPadding, Pearson/Spearman from scipy-free numpy.

    python stsb_regression.py --model BERT_DIR --csv sts.csv --out OUT [--epochs 1]
"""
import argparse

import numpy as np
import pandas as pd
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


def pearson(a, b):
    return float(np.corrcoef(a, b)[0, 1])


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = predictions.squeeze(-1)
    return {"pearson": pearson(predictions, labels), "mse": float(((predictions - labels) ** 2).mean())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max_steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=5e-4)
    args = ap.parse_args()

    set_seed(13)
    df = pd.read_csv(args.csv)
    df["score"] = df["score"].astype("float32") / 5.0  # scale 0-5 to 0-1
    df = df.rename(columns={"score": "labels"})
    train_df, val_df = df.iloc[:100], df.iloc[100:]

    tokenizer = AutoTokenizer.from_pretrained(args.model)

    def tokenize(batch):
        return tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, max_length=64)

    train_ds = Dataset.from_pandas(train_df, preserve_index=False).map(tokenize, batched=True)
    val_ds = Dataset.from_pandas(val_df, preserve_index=False).map(tokenize, batched=True)
    train_ds = train_ds.remove_columns(["sentence1", "sentence2"])
    val_ds = val_ds.remove_columns(["sentence1", "sentence2"])

    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=1)

    training_args = TrainingArguments(
        output_dir=args.out,
        learning_rate=args.lr,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        weight_decay=0.01,
        warmup_steps=2,
        logging_steps=1,
        eval_strategy="no",
        save_strategy="no",
        report_to="none",
        seed=13,
    )
    trainer = Trainer(model=model, args=training_args, train_dataset=train_ds, eval_dataset=val_ds,
                      processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                      compute_metrics=compute_metrics)
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    main()
