"""Resume from a checkpoint picked by hand (the docs' train(resume_from_checkpoint="out/checkpoint-4"), e.g. the last
good one before a loss spike): a first run of 6 steps saving every 2 steps, then a fresh model and Trainer with
max_steps=10 resuming from checkpoint-4 (not the latest, checkpoint-6), so steps 5-6 are redone. An uninterrupted
reference run of 10 steps in a third Trainer so the resumed losses can be compared. Qwen3 classifier,
DataCollatorWithPadding, grad accum 2, linear schedule with warm-up.

    python resume_specific_ckpt.py QWEN3_DIR cls_train.csv OUT
"""
import os
import sys
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("csv", data_files=CSV)["train"].map(lambda b: tok(b["text"], truncation=True), batched=True,
                                                      remove_columns=["text"])

def make(out, max_steps):
    set_seed(31)
    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                             learning_rate=1e-3, warmup_steps=2, max_steps=max_steps, logging_steps=1,
                             save_strategy="steps", save_steps=2, report_to="none", seed=31)
    return Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tok))

losses = lambda t: [e["loss"] for e in t.state.log_history if "loss" in e]
t1 = make(OUT, 6)
t1.train()
print("FIRST", losses(t1))
t2 = make(OUT, 10)
t2.train(resume_from_checkpoint=os.path.join(OUT, "checkpoint-4"))
print("RESUMED", losses(t2))
t3 = make(OUT + "_ref", 10)
t3.train()
print("REF", losses(t3))
print("LOSSES", losses(t1) + losses(t2) + losses(t3))
