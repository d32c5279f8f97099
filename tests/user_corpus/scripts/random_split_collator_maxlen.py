"""A train/validation split made with torch.utils.data.random_split (a seeded generator) over a tokenized
datasets.Dataset, so the Trainer gets torch Subset objects, not a datasets.Dataset: it cannot drop the raw "text"
column up front and wraps the collator to remove it per batch instead. The padding is done by the collator to a
FIXED width, DataCollatorWithPadding(padding="max_length", max_length=64) (the "make every batch the same shape"
advice, without padding at map time). A Qwen3 decoder classifier, grad accum 2, eval at the end, argparse in a
main() with a parse_args() of its own.

    python random_split_collator_maxlen.py QWEN3_DIR cls_train.csv OUT
"""
import argparse

import numpy as np
import torch
from datasets import load_dataset
from torch.utils.data import random_split
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model_dir")
    p.add_argument("train_csv")
    p.add_argument("output_dir")
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--valid-fraction", type=float, default=0.2)
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--seed", type=int, default=3)
    return p.parse_args()


def accuracy(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, -1) == labels).mean())}


def main():
    args = parse_args()
    set_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    ds = load_dataset("csv", data_files=args.train_csv, split="train")
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=args.max_length), batched=True)
    n_valid = int(len(ds) * args.valid_fraction)
    train_set, valid_set = random_split(ds, [len(ds) - n_valid, n_valid],
                                        generator=torch.Generator().manual_seed(args.seed))
    print(f"train {len(train_set)} / valid {len(valid_set)} ({type(train_set).__name__})")

    model = AutoModelForSequenceClassification.from_pretrained(args.model_dir, num_labels=5)
    collator = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=args.max_length)
    training_args = TrainingArguments(output_dir=args.output_dir, per_device_train_batch_size=8,
                                      per_device_eval_batch_size=16, gradient_accumulation_steps=2,
                                      learning_rate=1e-3, max_steps=args.max_steps, logging_steps=1,
                                      save_strategy="no", report_to="none", seed=args.seed)
    trainer = Trainer(model=model, args=training_args, train_dataset=train_set, eval_dataset=valid_set,
                      processing_class=tokenizer, data_collator=collator, compute_metrics=accuracy)
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    main()
