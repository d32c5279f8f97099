"""A streamed data set: datasets' IterableDataset (load_dataset(..., streaming=True)) mapped on the fly, so
max_steps is required and nothing can be read ahead.
    python iterable_stream.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
stream = load_dataset("csv", data_files=data, split="train", streaming=True)
stream = stream.map(lambda r: tok(r["text"], truncation=True, max_length=64), remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
args = TrainingArguments(out, max_steps=8, per_device_train_batch_size=8, logging_steps=1, report_to="none",
                         save_strategy="no", seed=0)
Trainer(model=model, args=args, train_dataset=stream, data_collator=DataCollatorWithPadding(tok)).train()
