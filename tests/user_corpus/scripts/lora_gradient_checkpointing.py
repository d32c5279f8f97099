"""PEFT LoRA with gradient checkpointing switched on in TrainingArguments, as the PEFT docs' memory tips have it:
get_peft_model on a Qwen3 causal LM, gradient_checkpointing=True with use_reentrant=False, the Trainer calling
gradient_checkpointing_enable (and enable_input_require_grads) on the PEFT model itself; chat rows rendered with
the tokenizer's chat template, DataCollatorForLanguageModeling(mlm=False).

    python lora_gradient_checkpointing.py QWEN3_DIR chat.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig, TaskType, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

model_dir, data_path, out_dir = sys.argv[1:4]
set_seed(2)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)
model.config.use_cache = False
model = get_peft_model(model, LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, lora_dropout=0.0,
                                         target_modules=["q_proj", "v_proj", "up_proj", "down_proj"]))
model.print_trainable_parameters()

ds = load_dataset("json", data_files=data_path, split="train")
ds = ds.map(lambda x: tokenizer(tokenizer.apply_chat_template(x["messages"], tokenize=False), truncation=True,
                                max_length=64), remove_columns=["messages"])

args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, learning_rate=2e-3, max_steps=8,
                         gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False},
                         logging_steps=1, save_strategy="no", report_to="none", seed=2)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
