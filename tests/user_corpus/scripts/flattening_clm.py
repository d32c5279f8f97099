"""Padding-free causal LM training with transformers' own DataCollatorWithFlattening (the "packing with
position_ids" blog post): each line of a text file tokenized on its own (eos appended, no padding), labels left to
the collator, which concatenates a batch into one row with position_ids restarting at 0 and -100 at each
boundary; a Qwen3 checkpoint, sdpa attention.

    python flattening_clm.py QWEN3_DIR text.txt OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorWithFlattening, Trainer,
                          TrainingArguments)

model_dir, text_path, out_dir = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa")

ds = load_dataset("text", data_files=text_path, split="train")
ds = ds.filter(lambda x: len(x["text"].strip()) > 0)


def tokenize(batch):
    enc = tokenizer(batch["text"], truncation=True, max_length=63)
    enc["input_ids"] = [ids + [tokenizer.eos_token_id] for ids in enc["input_ids"]]
    return {"input_ids": enc["input_ids"]}


ds = ds.map(tokenize, batched=True, remove_columns=["text"])

args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8,
                         logging_steps=1, save_strategy="no", report_to="none", seed=5)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithFlattening())
trainer.train()
