"""Mixing two labelled sources with datasets.interleave_datasets (sampling probabilities 0.75/0.25, a seed,
stopping_strategy="all_exhausted" so the small source is repeated), tokenised after mixing, then
.with_format("torch", columns=["input_ids", "attention_mask", "label"]) so only the model's columns come out as
tensors (the text column stays in the dataset, hidden). Ragged rows padded by DataCollatorWithPadding; a Qwen3
decoder classifier; a sentence-transformers-style argparse command line.

    python interleave_with_format.py --model QWEN3_DIR --main cls_train.csv --extra cls_dev.csv --out OUT
"""
import argparse

from datasets import interleave_datasets, load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--main", required=True)
ap.add_argument("--extra", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--seed", type=int, default=7)
opt = ap.parse_args()
set_seed(opt.seed)

main_ds = load_dataset("csv", data_files=opt.main, split="train")
extra_ds = load_dataset("csv", data_files=opt.extra, split="train")
mixed = interleave_datasets([main_ds, extra_ds], probabilities=[0.75, 0.25], seed=opt.seed,
                            stopping_strategy="all_exhausted")
print(f"mixed {len(main_ds)} + {len(extra_ds)} rows into {len(mixed)}")

tok = AutoTokenizer.from_pretrained(opt.model)
mixed = mixed.map(lambda batch: tok(batch["text"], truncation=True, max_length=56), batched=True)
mixed = mixed.with_format("torch", columns=["input_ids", "attention_mask", "label"])

model = AutoModelForSequenceClassification.from_pretrained(opt.model, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
targs = TrainingArguments(output_dir=opt.out, per_device_train_batch_size=16, max_steps=6, learning_rate=2e-3,
                          warmup_steps=1, logging_steps=1, save_strategy="no", report_to="none", seed=opt.seed)
Trainer(model=model, args=targs, train_dataset=mixed, data_collator=DataCollatorWithPadding(tok)).train()
