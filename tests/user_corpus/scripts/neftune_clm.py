"""Instruction tuning with NEFTune, the one-flag regulariser from the paper's README: TrainingArguments(
neftune_noise_alpha=5) makes the Trainer add uniform noise to the input embeddings while training (scaled by
alpha / sqrt(sequence length x hidden size)). Alpaca-style prompts built by hand with labels = input_ids, padded
per batch by DataCollatorForSeq2Seq, a Qwen3 causal LM, grad accum 2.

    python neftune_clm.py QWEN3_DIR alpaca.json OUT
"""
import json
import sys

from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

model_dir, data_file, out_dir = sys.argv[1:4]
set_seed(42)

PROMPT = "instruction {instruction} input {input} response {output}"

with open(data_file) as f:
    records = json.load(f)

tokenizer = AutoTokenizer.from_pretrained(model_dir)


def tokenize(example):
    enc = tokenizer(PROMPT.format(**example) + tokenizer.eos_token, truncation=True, max_length=96)
    enc["labels"] = list(enc["input_ids"])
    return enc


ds = Dataset.from_list(records).map(tokenize, remove_columns=["instruction", "input", "output"])

model = AutoModelForCausalLM.from_pretrained(model_dir)
args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=1e-3,
    max_steps=8,
    logging_steps=1,
    neftune_noise_alpha=5,
    save_strategy="no",
    report_to="none",
    seed=42,
)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForSeq2Seq(tokenizer, padding=True), processing_class=tokenizer)
trainer.train()
