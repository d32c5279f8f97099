"""A classifier with TrainingArguments(label_smoothing_factor=0.1) and length-grouped batches
(train_sampling_strategy="group_by_length", transformers 5's spelling of group_by_length=True): the Trainer pops
the labels and applies its LabelSmoother to the logits itself; a Qwen3 decoder classifier, dynamic padding by
the Trainer's default collator (processing_class given), a precomputed "length" column.

    python label_smoothing_grouped.py QWEN3_DIR cls_train.csv OUT
"""
import argparse

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments,
                          set_seed)

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("csv")
p.add_argument("out")
p.add_argument("--smoothing", type=float, default=0.1)
a = p.parse_args()
set_seed(21)

tokenizer = AutoTokenizer.from_pretrained(a.model)
ds = load_dataset("csv", data_files=a.csv, split="train")


def prep(batch):
    enc = tokenizer(batch["text"], truncation=True, max_length=72)
    enc["length"] = [len(x) for x in enc["input_ids"]]
    return enc


ds = ds.map(prep, batched=True, remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(a.model, num_labels=5)
args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8,
                         label_smoothing_factor=a.smoothing, train_sampling_strategy="group_by_length",
                         length_column_name="length", logging_steps=1, save_strategy="no", report_to="none",
                         seed=21)
trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
trainer.train()
