"""The most copied causal-LM tokenisation from notebooks: tokenizer(..., padding="max_length", truncation=True,
max_length=64) and labels = input_ids.copy() in the map (so the pad tokens are scored too: nobody sets them to
-100), set_format("torch"), default_data_collator; a Qwen3 CLM, grad accum 2, fp32.

    python clm_maxlen_labels_copy.py QWEN3_DIR text.txt OUT
"""
import sys
from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, default_data_collator,
                          set_seed)

MODEL, TXT, OUT = sys.argv[1:4]
set_seed(37)
tok = AutoTokenizer.from_pretrained(MODEL)

def tokenize(b):
    enc = tok(b["text"], padding="max_length", truncation=True, max_length=64)
    enc["labels"] = [ids.copy() for ids in enc["input_ids"]]
    return enc

ds = load_dataset("text", data_files=TXT)["train"].map(tokenize, batched=True, remove_columns=["text"])
ds.set_format("torch")
model = AutoModelForCausalLM.from_pretrained(MODEL)
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=1e-3, max_steps=8, logging_steps=1, save_strategy="no", report_to="none", seed=37)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=default_data_collator)
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
