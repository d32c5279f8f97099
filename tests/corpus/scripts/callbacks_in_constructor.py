"""A classifier with gradient accumulation 2 whose callbacks are passed in the Trainer(...) call, a lr scheduler
with its own kwargs, warmup as a ratio, and group_by_length-style sampling left off.
    python callbacks_in_constructor.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          PrinterCallback, Trainer, TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=data, split="train").map(lambda b: tok(b["text"]), batched=True)
args = TrainingArguments(out, per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=10,
                         lr_scheduler_type="cosine_with_min_lr", lr_scheduler_kwargs={"min_lr": 1e-6},
                         warmup_steps=0.1, logging_steps=1, report_to="none", save_strategy="no", seed=0)
trainer = Trainer(model=AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4), args=args,
                  train_dataset=ds, data_collator=DataCollatorWithPadding(tok), callbacks=[PrinterCallback()])
trainer.train()
