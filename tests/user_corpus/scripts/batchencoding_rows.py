"""A Dataset class that returns the tokenizer's BatchEncoding for each row (the object tokenizer(...) gives back,
with "labels" added to it), no padding at __getitem__, DataCollatorWithPadding doing the padding; the shape
StackOverflow answers about "custom dataset with Trainer" often have. Qwen3 classifier.

    python batchencoding_rows.py QWEN3_DIR cls_train.csv OUT
"""
import csv
import sys

import torch
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


class ReviewDataset(torch.utils.data.Dataset):
    def __init__(self, path, tokenizer):
        with open(path, newline="") as f:
            self.rows = list(csv.DictReader(f))
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        item = self.tokenizer(row["text"], truncation=True, max_length=64)
        item["labels"] = int(row["label"])
        return item


if __name__ == "__main__":
    model_dir, csv_path, out = sys.argv[1:4]
    set_seed(5)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    train_ds = ReviewDataset(csv_path, tokenizer)
    print(type(train_ds[0]).__name__, train_ds[0])
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=8, learning_rate=1e-3,
                             logging_steps=1, save_strategy="no", report_to="none", seed=5)
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, data_collator=DataCollatorWithPadding(tokenizer))
    trainer.train()
