"""Prompt-completion SFT with LoRA, notebook style (constants at the top, no functions): TRL's SFTTrainer on
{"prompt", "completion"} rows, so only the completion is trained on (completion_only_loss), a peft LoraConfig
handed to SFTTrainer(peft_config=...) which wraps the model itself, print_trainable_parameters().

    python trl_prompt_completion_lora.py MODEL_DIR pc.jsonl OUT
"""
import sys

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

MODEL_ID = sys.argv[1]
DATA = sys.argv[2]
OUTPUT_DIR = sys.argv[3]
LORA_R = 8
LORA_ALPHA = 16
LR = 2e-3
SEED = 1234

torch.manual_seed(SEED)
tokenizer = AutoTokenizer.from_pretrained(MODEL_ID)
model = AutoModelForCausalLM.from_pretrained(MODEL_ID, dtype=torch.float32)

ds = load_dataset("json", data_files=DATA, split="train")
print(ds)
print(ds[0])

peft_config = LoraConfig(
    r=LORA_R,
    lora_alpha=LORA_ALPHA,
    lora_dropout=0.05,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
    bias="none",
    task_type="CAUSAL_LM",
)

sft_config = SFTConfig(
    output_dir=OUTPUT_DIR,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=1,
    learning_rate=LR,
    max_steps=10,
    logging_steps=1,
    max_length=64,
    save_strategy="no",
    report_to="none",
    seed=SEED,
    bf16=False,
)

trainer = SFTTrainer(model=model, args=sft_config, train_dataset=ds, processing_class=tokenizer,
                     peft_config=peft_config)
trainer.model.print_trainable_parameters()
trainer.train()
