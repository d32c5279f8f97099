"""Label smoothing through Trainer(compute_loss_func=...) on a classifier, written to be correct under gradient
accumulation the way the Trainer docs ask: sum of the per-row smoothed cross-entropies divided by
num_items_in_batch (the rows of the whole accumulated step). A focal-style weight on the hard rows.
Qwen3 decoder classifier, DataCollatorWithPadding (pad_to_multiple_of=8), grad accum 4, batch 4.

    python loss_func_smoothing_cls.py QWEN3_DIR cls_train.csv OUT
"""
import sys
import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(21)
tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("csv", data_files=CSV)["train"].rename_column("label", "labels")
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)

def smoothed_focal_loss(outputs, labels, num_items_in_batch=None):
    logits = outputs["logits"].float()
    ce = F.cross_entropy(logits, labels, label_smoothing=0.1, reduction="none")
    p = torch.exp(-F.cross_entropy(logits, labels, reduction="none")).detach()
    loss = ((1 - p) ** 1.0 * ce).sum()
    return loss / num_items_in_batch if num_items_in_batch is not None else loss / labels.numel()

args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=4, gradient_accumulation_steps=4,
                         learning_rate=1e-3, max_steps=8, logging_steps=1, save_strategy="no", report_to="none",
                         seed=21, warmup_steps=2)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorWithPadding(tok, pad_to_multiple_of=8), compute_loss_func=smoothed_focal_loss)
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
