"""datasets with set_format("torch"): the rows reach the Trainer as dicts of tensors, the collator pads them.
    python set_format_torch.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)


def main():
    model_name, csv_file, out = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    ds = load_dataset("csv", data_files=csv_file, split="train")
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
    ds = ds.rename_column("label", "labels")
    ds.set_format("torch")
    model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=4)
    args = TrainingArguments(out, per_device_train_batch_size=8, max_steps=8, logging_steps=1, report_to="none",
                             save_strategy="no", seed=0, learning_rate=1e-3)
    Trainer(model, args, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer),
            processing_class=tokenizer).train()


main()
