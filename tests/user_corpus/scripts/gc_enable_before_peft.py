"""Gradient checkpointing switched on by hand on the base model before PEFT wraps it, the way QLoRA-era notebooks
do it: model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}) and
model.enable_input_require_grads(), then get_peft_model, and a TrainingArguments that never mentions
gradient_checkpointing. Prompt/completion rows with the prompt masked to -100, DataCollatorForSeq2Seq,
torch_empty_cache_steps=2 and average_tokens_across_devices=True copied from a GPU recipe, gradient accumulation 2.

    python gc_enable_before_peft.py QWEN3_DIR pc.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

model_name, data_file, output_dir = sys.argv[1], sys.argv[2], sys.argv[3]
set_seed(1234)

tokenizer = AutoTokenizer.from_pretrained(model_name)
model = AutoModelForCausalLM.from_pretrained(model_name)
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
model.enable_input_require_grads()
model.config.use_cache = False

peft_config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM")
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()


def tokenize(row):
    prompt = tokenizer(row["prompt"])["input_ids"]
    answer = tokenizer(row["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": prompt + answer, "attention_mask": [1] * (len(prompt) + len(answer)),
            "labels": [-100] * len(prompt) + answer}


train = load_dataset("json", data_files=data_file, split="train").map(tokenize, remove_columns=["prompt", "completion"])

training_args = TrainingArguments(
    output_dir=output_dir,
    per_device_train_batch_size=4,
    gradient_accumulation_steps=2,
    max_steps=6,
    learning_rate=2e-3,
    lr_scheduler_type="constant",
    torch_empty_cache_steps=2,
    average_tokens_across_devices=True,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=1234,
)
trainer = Trainer(model=model, args=training_args, train_dataset=train,
                  data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, padding=True))
trainer.train()
print("checkpointing on:", model.base_model.model.is_gradient_checkpointing)
