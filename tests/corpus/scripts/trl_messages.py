"""TRL's SFTTrainer on conversational rows ({"messages": [...]}), the chat template applied by TRL, the model
passed as a path (TRL loads it), the quickstart of TRL's docs.
    python trl_messages.py MODEL chat.jsonl OUT"""
import sys

from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

model, data, out = sys.argv[1:4]
dataset = load_dataset("json", data_files=data, split="train")
training_args = SFTConfig(output_dir=out, max_steps=8, per_device_train_batch_size=4, logging_steps=1,
                          report_to="none", save_strategy="no", bf16=False, use_cpu=True, seed=0, max_length=64)
trainer = SFTTrainer(model=model, args=training_args, train_dataset=dataset)
trainer.train()
