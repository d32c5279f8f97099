"""The Trainer handed its own optimizer and scheduler, as in the docs' "optimizers" argument and
run_glue_no_trainer.py: AdamW with the usual two parameter groups (no weight decay on biases and LayerNorm
weights), a cosine schedule with warmup built for the step count the script works out itself, both passed as
Trainer(optimizers=(optimizer, lr_scheduler)); a Qwen3 decoder classifier on ragged rows, DataCollatorWithPadding,
grad accum 2.

    python own_optimizer_scheduler.py QWEN3_DIR cls_train.csv OUT
"""
import math
import sys

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, get_cosine_schedule_with_warmup, set_seed)

model_dir, csv_path, out_dir = sys.argv[1:4]
set_seed(11)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
raw = load_dataset("csv", data_files=csv_path, split="train")
train_ds = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True,
                   remove_columns=["text"])

model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)

batch_size, grad_accum, epochs = 8, 2, 1
steps_per_epoch = math.ceil(len(train_ds) / (batch_size * grad_accum))
num_training_steps = min(steps_per_epoch * epochs, 8)

no_decay = ["bias", "norm.weight"]
grouped = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(grouped, lr=2e-3, betas=(0.9, 0.98), eps=1e-6)
lr_scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=num_training_steps)

args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=batch_size,
                         gradient_accumulation_steps=grad_accum, max_steps=num_training_steps, logging_steps=1,
                         save_strategy="no", report_to="none", seed=11)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer), optimizers=(optimizer, lr_scheduler))
trainer.train()
print("final lr", lr_scheduler.get_last_lr())
