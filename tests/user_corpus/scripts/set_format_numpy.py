"""set_format("numpy") on a BERT classifier's data, the shape some JAX/Keras-trained users keep when moving to
the Trainer: every row padded to a fixed length at map time (numpy needs rectangular columns), num_proc=2 in
map, the columns picked with set_format("numpy", columns=...), default_data_collator turning the numpy arrays into
tensors.

    python set_format_numpy.py BERT_DIR cls_train.csv OUT
"""
import argparse

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments,
                          default_data_collator, set_seed)

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("train_csv")
parser.add_argument("output_dir")
parser.add_argument("--seq_len", type=int, default=48)
args = parser.parse_args()

set_seed(11)
tok = AutoTokenizer.from_pretrained(args.model)
dataset = load_dataset("csv", data_files={"train": args.train_csv})["train"]


def encode(batch):
    enc = tok(batch["text"], padding="max_length", truncation=True, max_length=args.seq_len)
    enc["labels"] = batch["label"]
    return enc


dataset = dataset.map(encode, batched=True, num_proc=2, remove_columns=dataset.column_names)
dataset.set_format("numpy", columns=["input_ids", "token_type_ids", "attention_mask", "labels"])
print(dataset[:2]["input_ids"].shape, dataset[0]["labels"].dtype)

model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=5)
trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir=args.output_dir, per_device_train_batch_size=8, learning_rate=2e-3,
                           max_steps=8, logging_steps=1, save_strategy="no", report_to="none", seed=11),
    train_dataset=dataset,
    data_collator=default_data_collator,
)
trainer.train()
