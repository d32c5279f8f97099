"""PEFT-style instruction tuning (peft's examples, alpaca-lora): get_peft_model on a causal LM, the prompt's tokens
masked to -100 in the labels, DataCollatorForSeq2Seq padding to a multiple of 8, a Llama tokenizer with no pad
token (pad = eos, padding on the right).
    python peft_alpaca.py MODEL alpaca.jsonl OUT"""
import sys

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments

base_model, data_path, output_dir = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(base_model)
tokenizer.pad_token = tokenizer.eos_token
tokenizer.padding_side = "right"
model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
model.config.pad_token_id = tokenizer.pad_token_id
model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.05,
                                         bias="none", task_type="CAUSAL_LM"))


def generate_and_tokenize_prompt(row):
    prompt = f"{row['instruction']} {row['input']} assistant :"
    full = tokenizer(prompt + " " + row["output"] + tokenizer.eos_token, truncation=True, max_length=64)
    n_prompt = len(tokenizer(prompt)["input_ids"])
    full["labels"] = [-100] * n_prompt + full["input_ids"][n_prompt:]
    return full


data = load_dataset("json", data_files=data_path)["train"].map(generate_and_tokenize_prompt)
data = data.remove_columns(["instruction", "input", "output"])
trainer = Trainer(model=model, train_dataset=data,
                  args=TrainingArguments(per_device_train_batch_size=4, gradient_accumulation_steps=2, warmup_steps=1,
                                         max_steps=8, learning_rate=3e-4, logging_steps=1, output_dir=output_dir,
                                         save_strategy="no", report_to="none", seed=0),
                  data_collator=DataCollatorForSeq2Seq(tokenizer, pad_to_multiple_of=8, return_tensors="pt",
                                                       padding=True))
model.config.use_cache = False
trainer.train()
