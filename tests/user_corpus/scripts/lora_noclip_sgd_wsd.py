"""A Llama-2-era LoRA recipe on plain text, as blog posts wrote it for small GPUs: pad = unk (not eos) with right
padding, get_peft_model on q/k/v/o, a micro-batch of 2 and gradient accumulation 4, gradient clipping switched off
with max_grad_norm=0.0 (this transformers refuses None), plain SGD with momentum through optim="sgd" and optim_args, and the warmup-stable-decay
schedule (lr_scheduler_type="warmup_stable_decay", its decay length and floor in lr_scheduler_kwargs).

    python lora_noclip_sgd_wsd.py LLAMA_DIR text.txt OUT
"""
import sys

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)

base, text_file, output_dir = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(11)

tokenizer = AutoTokenizer.from_pretrained(base)
tokenizer.pad_token = tokenizer.unk_token  # "use unk as pad so the model still learns to stop"
tokenizer.padding_side = "right"

dataset = load_dataset("text", data_files={"train": text_file})["train"]
dataset = dataset.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=64), batched=True,
                      remove_columns=dataset.column_names)

model = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
model.config.pad_token_id = tokenizer.pad_token_id
lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, bias="none", task_type="CAUSAL_LM",
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
model = get_peft_model(model, lora)
model.print_trainable_parameters()

training_args = TrainingArguments(
    output_dir=output_dir,
    per_device_train_batch_size=2,
    gradient_accumulation_steps=4,
    max_steps=8,
    learning_rate=0.05,
    optim="sgd",
    optim_args="momentum=0.9,nesterov=True",
    max_grad_norm=0.0,
    lr_scheduler_type="warmup_stable_decay",
    lr_scheduler_kwargs={"num_decay_steps": 3, "min_lr_ratio": 0.1, "decay_type": "linear"},
    warmup_steps=2,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=11,
)
trainer = Trainer(model=model, args=training_args, train_dataset=dataset,
                  data_collator=DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False))
model.config.use_cache = False
trainer.train()
print("final lr:", trainer.lr_scheduler.get_last_lr())
