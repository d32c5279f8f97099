"""A collator of my own in place of DataCollatorWithPadding, the way forum answers write one: a small dataclass that
pops each row's label, pads the rest with tokenizer.pad(padding="longest") and stacks the labels as a long tensor.
Rows tokenized in map() without padding, the "text" column left in (the Trainer drops it before the collator sees
the rows); a Qwen3 checkpoint as a 5-class classifier, batch 8, grad accum 2, linear schedule.

    python own_padding_collator.py QWEN3_DIR cls_train.csv OUT
"""
import sys
from dataclasses import dataclass

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, PreTrainedTokenizerBase, Trainer,
                          TrainingArguments, set_seed)


@dataclass
class PadCollator:
    tokenizer: PreTrainedTokenizerBase
    max_length: int = 64

    def __call__(self, features):
        labels = [f.pop("label") for f in features]
        batch = self.tokenizer.pad(features, padding="longest", max_length=self.max_length, return_tensors="pt")
        batch["labels"] = torch.tensor(labels, dtype=torch.long)
        return batch


def main():
    model_dir, csv_path, out_dir = sys.argv[1:4]
    set_seed(7)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    raw = load_dataset("csv", data_files=csv_path, split="train")
    train_ds = raw.map(lambda batch: tokenizer(batch["text"], truncation=True, max_length=64), batched=True)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
    model.config.pad_token_id = tokenizer.pad_token_id
    args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                             learning_rate=1e-3, lr_scheduler_type="linear", max_steps=8, logging_steps=1,
                             save_strategy="no", report_to="none", seed=7)
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, data_collator=PadCollator(tokenizer))
    trainer.train()


if __name__ == "__main__":
    main()
