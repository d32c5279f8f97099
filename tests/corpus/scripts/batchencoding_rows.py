"""A Dataset whose rows are the tokenizer's BatchEncoding (a Mapping, not a dict), labels added to it.
    python batchencoding_rows.py MODEL cls.csv OUT"""
import csv
import sys

import torch
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)


class Encoded(torch.utils.data.Dataset):
    def __init__(self, path, tokenizer):
        with open(path) as f:
            self.rows = list(csv.DictReader(f))
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        enc = self.tokenizer(self.rows[i]["text"], truncation=True, max_length=64)
        enc["labels"] = int(self.rows[i]["label"])
        return enc


if __name__ == "__main__":
    model_dir, data, out = sys.argv[1:4]
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
    args = TrainingArguments(out, max_steps=8, per_device_train_batch_size=8, logging_steps=1, report_to="none",
                             save_strategy="no", seed=0)
    Trainer(model=model, args=args, train_dataset=Encoded(data, tok), data_collator=DataCollatorWithPadding(tok)).train()
