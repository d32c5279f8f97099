"""The model compiled by the script before the Trainer sees it: `model = torch.compile(model)` (a blog post's
one-line speedup; "aot_eager" here so a CPU-only machine needs no C compiler), bf16 autocast on the CPU
(`bf16=True, use_cpu=True`), `logging_strategy="steps"` with `logging_first_step`, a Qwen3 classifier whose rows
are padded by DataCollatorWithPadding. remove_unused_columns=False, as the Trainer's error asks: the compiled
module's forward takes (*args, **kwargs), so the Trainer would drop every column.

    python compiled_before_trainer.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

model_dir, csv_file, out_dir = sys.argv[1:4]
set_seed(17)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
data = load_dataset("csv", data_files=csv_file, split="train")
data = data.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
model.config.pad_token_id = tokenizer.pad_token_id
model = torch.compile(model, backend="aot_eager")
args = TrainingArguments(out_dir, per_device_train_batch_size=8, max_steps=6, learning_rate=1e-3, bf16=True,
                         use_cpu=True, logging_strategy="steps", logging_steps=2, logging_first_step=True,
                         remove_unused_columns=False, save_strategy="no", report_to="none", seed=17)
trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
