"""Several LoRA adapters on one model, as PEFT's multi_adapter_examples and docs load them: get_peft_model makes
"default" (r=4, attention only), add_adapter("mlp", r=16 on the MLP projections) adds a second, set_adapter("mlp")
makes it the one trained (the first stays frozen, its weights unused); chat rows rendered with the tokenizer's chat
template, DataCollatorForLanguageModeling(mlm=False); the trained adapter saved by name.

    python peft_multi_adapter.py QWEN3_DIR chat.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig, TaskType, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

model_dir, data_path, out_dir = sys.argv[1:4]
set_seed(13)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)
model = get_peft_model(model, LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8,
                                         target_modules=["q_proj", "v_proj"]))
model.add_adapter("mlp", LoraConfig(task_type=TaskType.CAUSAL_LM, r=16, lora_alpha=16,
                                    target_modules=["gate_proj", "up_proj", "down_proj"]))
model.set_adapter("mlp")
print("active:", model.active_adapter)
model.print_trainable_parameters()

ds = load_dataset("json", data_files=data_path, split="train")
ds = ds.map(lambda x: tokenizer(tokenizer.apply_chat_template(x["messages"], tokenize=False), truncation=True,
                                max_length=64), remove_columns=["messages"])
args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, learning_rate=2e-3, max_steps=6,
                         logging_steps=1, save_strategy="no", report_to="none", seed=13)
trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
model.save_pretrained(out_dir, selected_adapters=["mlp"])
