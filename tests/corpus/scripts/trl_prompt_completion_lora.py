"""TRL SFT on prompt-completion rows (the loss on the completion only, TRL's default), a peft LoraConfig handed
to the SFTTrainer, bf16 off on a CPU.
    python trl_prompt_completion_lora.py MODEL pc.jsonl OUT"""
import sys

from datasets import load_dataset
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

MODEL, DATA, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
LORA = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM")

ds = load_dataset("json", data_files=DATA, split="train")
args = SFTConfig(OUT, max_steps=8, per_device_train_batch_size=4, learning_rate=2e-4, logging_steps=1,
                 report_to="none", save_strategy="no", use_cpu=True, bf16=False, seed=0, max_length=64)
trainer = SFTTrainer(model=MODEL, args=args, train_dataset=ds, peft_config=LORA)
trainer.model.print_trainable_parameters()
trainer.train()
