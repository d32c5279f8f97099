"""Pre-training-style token accounting: TrainingArguments(include_num_input_tokens_seen=True) has the Trainer
count the input tokens it feeds (every position, padding included: its "all" mode) and log num_input_tokens_seen
with each loss; the script prints the count at the end. Lines of a text file
tokenized with truncation, DataCollatorForLanguageModeling(mlm=False) padding each batch, a Llama without a pad
token (pad = eos).

    python tokens_seen_clm.py LLAMA_DIR text.txt OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

model_dir, text_file, out_dir = sys.argv[1:4]
set_seed(7)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
tokenizer.pad_token = tokenizer.eos_token

raw = load_dataset("text", data_files={"train": text_file})["train"]
ds = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])

model = AutoModelForCausalLM.from_pretrained(model_dir)
args = TrainingArguments(out_dir, per_device_train_batch_size=8, max_steps=8, learning_rate=1e-3, logging_steps=1,
                         include_num_input_tokens_seen=True, save_strategy="no",
                         report_to="none", seed=7)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
result = trainer.train()
seen = [e["num_input_tokens_seen"] for e in trainer.state.log_history if "num_input_tokens_seen" in e]
print("num_input_tokens_seen:", seen)
assert seen == sorted(seen) and seen[-1] == trainer.state.num_input_tokens_seen > 0, seen
