"""A torch Dataset whose items are (text, label) tuples, tokenised per batch by a collate_fn that returns a dict
(the pattern from PyTorch tutorials carried over to the Trainer), remove_unused_columns=False so the Trainer keeps
the tuples as they are, a GPT-2 classifier padded with its eos, gradient accumulation 2, epochs rather than steps.

    python tuple_rows_collate.py GPT2_DIR short.csv OUT
"""
import csv
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(23)


class TextPairs(torch.utils.data.Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.items = [(r["text"], int(r["label"])) for r in csv.DictReader(f)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


tokenizer = AutoTokenizer.from_pretrained(MODEL)
tokenizer.pad_token = tokenizer.eos_token


def collate(batch):
    texts, labels = zip(*batch)
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=48, return_tensors="pt")
    enc["labels"] = torch.tensor(labels)
    return dict(enc)


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=3)
model.config.pad_token_id = tokenizer.pad_token_id
args = TrainingArguments(OUT, num_train_epochs=1, per_device_train_batch_size=16, gradient_accumulation_steps=2,
                         learning_rate=2e-3, logging_steps=1, remove_unused_columns=False, save_strategy="no",
                         report_to="none", seed=23)
Trainer(model=model, args=args, train_dataset=TextPairs(CSV), data_collator=collate).train()
