"""bitsandbytes' 8-bit optimizers chosen by name in TrainingArguments (optim="adamw_bnb_8bit", or
"paged_adamw_8bit" as the QLoRA notebooks write it; on a CPU bitsandbytes falls back to unpaged), a LoRA causal LM
over chat rows rendered with the tokenizer's chat template, DataCollatorForLanguageModeling(mlm=False), a
constant schedule with warm-up, grad accum 2.

    python bnb_8bit_optim.py QWEN3_DIR chat.jsonl OUT adamw_bnb_8bit
"""
import sys

from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

MODEL, DATA, OUT = sys.argv[1:4]
OPTIM = sys.argv[4] if len(sys.argv) > 4 else "adamw_bnb_8bit"
set_seed(3)

tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("json", data_files=DATA, split="train")
ds = ds.map(lambda ex: tok(tok.apply_chat_template(ex["messages"], tokenize=False), truncation=True, max_length=96),
            remove_columns=ds.column_names)

model = AutoModelForCausalLM.from_pretrained(MODEL)
model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, task_type="CAUSAL_LM",
                                         target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                         "up_proj", "down_proj"]))
model.print_trainable_parameters()
args = TrainingArguments(OUT, optim=OPTIM, per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=8,
                         learning_rate=2e-3, lr_scheduler_type="constant_with_warmup", warmup_steps=2,
                         logging_steps=1, save_strategy="no", report_to="none", seed=3)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
print(type(trainer.create_optimizer()).__name__)
trainer.train()
