"""Short rows (5-35 tokens) at batch 8 with gradient accumulation 2 on a decoder classifier: padding-free
batches must keep 16 rows a step, and the Trainer's doubled loss (transformers#47688) shows up here.
    python short_rows_accum.py MODEL short.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

set_seed(0)
model_dir, data, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
train = load_dataset("csv", data_files=data, split="train").map(lambda b: tokenizer(b["text"]), batched=True,
                                                                 remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=3)
args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=10,
                         learning_rate=5e-4, logging_steps=1, report_to="none", save_strategy="no", seed=0)
Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer)).train()
