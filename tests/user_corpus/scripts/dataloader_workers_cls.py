"""A classifier fed by DataLoader worker processes, the flags people add when the GPU waits on data:
dataloader_num_workers=2, dataloader_persistent_workers=True, dataloader_prefetch_factor=2 and
dataloader_pin_memory (on where there is a GPU to pin for). Ragged rows padded per batch by DataCollatorWithPadding
(its tokenizer runs in the workers), a Qwen3 classifier, grad accum 2, the seed and data_seed both set.

    python dataloader_workers_cls.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

if __name__ == "__main__":
    model_dir, csv_file, out_dir = sys.argv[1:4]
    set_seed(3)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ds = load_dataset("csv", data_files=csv_file, split="train")
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True,
                remove_columns=["text"])
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
    args = TrainingArguments(
        output_dir=out_dir,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        learning_rate=1e-3,
        max_steps=8,
        logging_steps=1,
        dataloader_num_workers=2,
        dataloader_persistent_workers=True,
        dataloader_prefetch_factor=2,
        dataloader_pin_memory=torch.cuda.is_available(),
        save_strategy="no",
        report_to="none",
        seed=3,
        data_seed=17,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer))
    trainer.train()
