"""Resuming after an interruption, the way the Trainer docs show it: a first run of 4 steps saves a checkpoint
every 2 steps, then (as the relaunched job would) a fresh model and Trainer with max_steps=8 on the same
output_dir call train(resume_from_checkpoint=True), which picks up checkpoint-4's weights, optimizer, scheduler,
RNG states and data position. A Llama causal LM with no pad token (pad = eos), DataCollatorForLanguageModeling.

    python resume_from_checkpoint.py LLAMA_DIR text.txt OUT
"""
import os
import sys

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)
from transformers.trainer_utils import get_last_checkpoint

model_dir, text_path, out_dir = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
tokenizer.pad_token = tokenizer.eos_token
ds = load_dataset("text", data_files=text_path, split="train").filter(lambda x: x["text"].strip() != "")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)


def make_trainer(max_steps):
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=4, learning_rate=1e-3,
                             max_steps=max_steps, lr_scheduler_type="constant", logging_steps=1, save_steps=2,
                             save_strategy="steps", report_to="none", seed=17)
    return Trainer(model=model, args=args, train_dataset=ds, data_collator=collator)


first = make_trainer(4)
first.train()
print("checkpoints:", sorted(d for d in os.listdir(out_dir) if d.startswith("checkpoint-")))

last = get_last_checkpoint(out_dir)
print("resuming from", last)
second = make_trainer(8)
second.train(resume_from_checkpoint=True)
print("resumed losses:", [e["loss"] for e in second.state.log_history if "loss" in e])
