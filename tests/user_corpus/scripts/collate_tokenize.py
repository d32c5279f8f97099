"""Tokenize in the collator, not in the dataset: the training set keeps raw {"text", "label"} rows,
remove_unused_columns=False so the Trainer hands them over untouched, and a collate_fn tokenizes each batch with
padding=True, return_tensors="pt" (the pattern from PyTorch-first users and many "custom collate_fn" answers);
Qwen3 classifier, cosine schedule.

    python collate_tokenize.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed


def make_collate_fn(tokenizer, max_length=64):
    def collate_fn(batch):
        enc = tokenizer([ex["text"] for ex in batch], padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt")
        enc["labels"] = torch.tensor([ex["label"] for ex in batch])
        return enc
    return collate_fn


if __name__ == "__main__":
    model_name, data_path, output_dir = sys.argv[1:4]
    set_seed(64)
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    train_ds = load_dataset("csv", data_files=data_path, split="train")
    model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=5)
    args = TrainingArguments(output_dir=output_dir, remove_unused_columns=False, per_device_train_batch_size=8,
                             learning_rate=1e-3, lr_scheduler_type="cosine", max_steps=8, logging_steps=1,
                             save_strategy="no", report_to="none", seed=64)
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, data_collator=make_collate_fn(tokenizer))
    trainer.train()
