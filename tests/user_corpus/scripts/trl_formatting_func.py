"""Alpaca instruction rows through TRL's SFTTrainer with a formatting_func (the way TRL's docs and many blog posts
turn instruction/input/output columns into one training text), SFTConfig(max_length=...), a model path handed to
SFTTrainer as a string with model_init_kwargs, and completion-only loss left to its default (these are text rows:
every token is scored).

    python trl_formatting_func.py QWEN3_DIR alpaca.json OUT
"""
import sys

from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

model_id, data_file, out_dir = sys.argv[1:4]


def formatting_func(example):
    if example["input"]:
        return f"instruction {example['instruction']} input {example['input']} response {example['output']}"
    return f"instruction {example['instruction']} response {example['output']}"


dataset = load_dataset("json", data_files=data_file, split="train")
config = SFTConfig(
    output_dir=out_dir,
    max_length=80,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=2e-3,
    max_steps=8,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    bf16=False,
    seed=11,
    model_init_kwargs={"dtype": "float32"},
)
trainer = SFTTrainer(model=model_id, args=config, train_dataset=dataset, formatting_func=formatting_func)
trainer.train()
