"""TRL SFT on prompt/completion rows with the loss over the whole sequence, as in "train on inputs too" recipes:
SFTConfig(completion_only_loss=False, max_length=None (no truncation), pad_to_multiple_of=8,
dataset_kwargs={"skip_prepare_dataset": False} left in from a template), a LoraConfig on every linear layer passed as
peft_config, the model loaded by the script (float32) and handed to SFTTrainer with the tokenizer
as processing_class; gradient accumulation 2.

    python trl_full_loss_lora.py QWEN3_DIR pc.jsonl OUT
"""
import sys

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

model_id, data_path, output_dir = sys.argv[1:4]

tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(model_id, dtype=torch.float32)
dataset = load_dataset("json", data_files=data_path, split="train")

peft_config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                         target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
sft_config = SFTConfig(
    output_dir=output_dir,
    completion_only_loss=False,
    max_length=None,
    pad_to_multiple_of=8,
    dataset_kwargs={"skip_prepare_dataset": False},
    per_device_train_batch_size=4,
    gradient_accumulation_steps=2,
    max_steps=6,
    learning_rate=2e-3,
    lr_scheduler_type="cosine",
    warmup_steps=1,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    bf16=False,
    seed=3,
)
trainer = SFTTrainer(model=model, args=sft_config, train_dataset=dataset, processing_class=tokenizer,
                     peft_config=peft_config)
trainer.model.print_trainable_parameters()
trainer.train()
