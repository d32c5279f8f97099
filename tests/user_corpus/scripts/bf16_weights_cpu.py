"""bf16 on a laptop without a GPU: the model loaded with torch_dtype=torch.bfloat16 (or, with --default-dtype,
torch.set_default_dtype(torch.bfloat16) before anything is built: from_pretrained then keeps the checkpoint's
float32, and tensors the Trainer makes itself, its loss accumulator among them, come out bf16),
TrainingArguments(bf16=True, use_cpu=True), an alpaca-style instruction set with the prompt masked to -100,
DataCollatorForSeq2Seq, grad accum 2.

    python bf16_weights_cpu.py QWEN3_DIR alpaca.json OUT [--default-dtype]
"""
import json
import sys

import torch
from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

MODEL, DATA, OUT = sys.argv[1:4]
DEFAULT_DTYPE = "--default-dtype" in sys.argv[4:]
set_seed(19)
if DEFAULT_DTYPE:
    torch.set_default_dtype(torch.bfloat16)

tok = AutoTokenizer.from_pretrained(MODEL)
with open(DATA) as f:
    rows = json.load(f)


def encode(ex):
    prompt = f"instruction {ex['instruction']} " + (f"input {ex['input']} " if ex["input"] else "") + "response "
    p = tok(prompt)["input_ids"]
    full = tok(prompt + ex["output"])["input_ids"][:96] + [tok.eos_token_id]
    return {"input_ids": full, "attention_mask": [1] * len(full), "labels": [-100] * len(p) + full[len(p):]}


ds = Dataset.from_list(rows).map(encode, remove_columns=["instruction", "input", "output"])
if DEFAULT_DTYPE:
    model = AutoModelForCausalLM.from_pretrained(MODEL)
else:
    model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16)
print("weights", next(model.parameters()).dtype)
args = TrainingArguments(OUT, bf16=True, use_cpu=True, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                         max_steps=8, learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none",
                         seed=19)
trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                  data_collator=DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100))
trainer.train()
