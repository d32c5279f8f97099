"""On-the-fly tokenisation with Dataset.with_transform (the datasets docs' "format transform": nothing tokenised
up front, each batch of rows tokenised when it is read), remove_unused_columns=False as the Trainer's error tells
you, a baseline trainer.evaluate() BEFORE training (the "what does the untrained model score" habit), then train()
and evaluate() again. Qwen3 decoder classifier, DataCollatorWithPadding, grad accum 2, eval every 3 steps.

    python transform_eval_first.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys
import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, TRAIN, DEV, OUT = sys.argv[1:5]
set_seed(3)
tok = AutoTokenizer.from_pretrained(MODEL)
raw = load_dataset("csv", data_files={"train": TRAIN, "dev": DEV})

def transform(batch):
    enc = tok(batch["text"], truncation=True, max_length=40)
    enc["labels"] = batch["label"]
    return enc

train_ds = raw["train"].with_transform(transform)
dev_ds = raw["dev"].with_transform(transform)
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=1e-3, max_steps=8, logging_steps=1, eval_strategy="steps", eval_steps=3,
                         save_strategy="no", report_to="none", seed=3, remove_unused_columns=False)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=dev_ds,
                  data_collator=DataCollatorWithPadding(tok),
                  compute_metrics=lambda p: {"acc": float((np.argmax(p.predictions, -1) == p.label_ids).mean())})
before = trainer.evaluate()
print("BEFORE", before)
trainer.train()
after = trainer.evaluate()
print("AFTER", after["eval_loss"], after["eval_acc"])
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
print("EVALS", [e["eval_loss"] for e in trainer.state.log_history if "eval_loss" in e])
