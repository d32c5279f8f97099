"""TRL's SFT quickstart on a conversational dataset: rows of {"messages": [{"role", "content"}, ...]} from a
JSONL file, the model passed to SFTTrainer as a path (TRL loads the model and the tokenizer and applies its chat
template), everything else SFTConfig's defaults but the few knobs people set.

    python trl_sft_messages.py MODEL_DIR chat.jsonl OUT
"""
import sys

from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

dataset = load_dataset("json", data_files=sys.argv[2], split="train")

training_args = SFTConfig(
    output_dir=sys.argv[3],
    max_length=96,
    per_device_train_batch_size=4,
    learning_rate=1e-3,
    max_steps=8,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=7,
    bf16=False,  # SFTConfig defaults to bf16=True, which a CPU-only machine refuses
)
trainer = SFTTrainer(model=sys.argv[1], train_dataset=dataset, args=training_args)
trainer.train()
