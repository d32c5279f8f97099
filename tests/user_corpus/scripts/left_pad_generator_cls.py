"""A Llama classifier with the tokenizer's padding_side="left" (copied from generation code, where left padding is
required), pad = eos and model.config.pad_token_id set, the dataset built with Dataset.from_generator over a csv
reader, each text given an explicit eos at the end (so the classifier reads the eos position), DataCollatorWithPadding,
grad accum 2, evaluation with a confusion-matrix-free accuracy at the end.

    python left_pad_generator_cls.py LLAMA_DIR cls_train.csv OUT
"""
import csv
import sys
import numpy as np
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(29)
tok = AutoTokenizer.from_pretrained(MODEL)
tok.pad_token = tok.eos_token
tok.padding_side = "left"

def gen():
    with open(CSV, newline="") as f:
        for row in csv.DictReader(f):
            yield {"text": row["text"] + tok.eos_token, "label": int(row["label"])}

ds = Dataset.from_generator(gen).map(lambda b: tok(b["text"], truncation=True, max_length=64), batched=True,
                                     remove_columns=["text"]).train_test_split(test_size=0.2, seed=29)
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=1e-3, max_steps=8, logging_steps=1, save_strategy="no", report_to="none", seed=29)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=DataCollatorWithPadding(tok),
                  compute_metrics=lambda p: {"acc": float((p.predictions.argmax(-1) == p.label_ids).mean())})
trainer.train()
print("EVAL", trainer.evaluate())
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
