"""Streaming-style training from a torch.utils.data.IterableDataset that reads a CSV line by line and tokenizes
on the fly (the data never fits in memory in the real case), so the Trainer needs max_steps; a Qwen3 classifier,
DataCollatorWithPadding. No set_seed of its own: it relies on TrainingArguments(seed=...) and on the Trainer
calling set_seed before it builds the model through model_init.

    python iterable_stream.py QWEN3_DIR cls_train.csv OUT
"""
import csv
import sys

from torch.utils.data import IterableDataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)


class CsvStream(IterableDataset):
    def __init__(self, path, tokenizer, max_length=64):
        self.path, self.tokenizer, self.max_length = path, tokenizer, max_length

    def __iter__(self):
        with open(self.path, newline="") as f:
            for row in csv.DictReader(f):
                enc = self.tokenizer(row["text"], truncation=True, max_length=self.max_length)
                yield {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                       "labels": int(row["label"])}


model_dir, csv_path, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)


def model_init():
    return AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)


args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=12, learning_rate=1e-3,
                         logging_steps=1, save_strategy="no", report_to="none", seed=8)
trainer = Trainer(model_init=model_init, args=args, train_dataset=CsvStream(csv_path, tokenizer),
                  data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
