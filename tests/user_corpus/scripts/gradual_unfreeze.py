"""ULMFiT-style gradual unfreezing on a Qwen3 classifier: the user builds AdamW over ALL parameters and hands it to
the Trainer (optimizers=(opt, None)), freezes everything but the score head before training, and a callback unfreezes
the top layer at step 2 and the rest at step 4 (requires_grad True; the optimizer already holds them).
max_grad_norm=0.5 so clipping bites. DataCollatorWithPadding, grad accum 2.

    python gradual_unfreeze.py QWEN3_DIR cls_train.csv OUT
"""
import sys
import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainerCallback, TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(11)
tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("csv", data_files=CSV)["train"].map(lambda b: tok(b["text"], truncation=True), batched=True,
                                                      remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for n, p in model.named_parameters():
    p.requires_grad = n.startswith("score")

class Unfreeze(TrainerCallback):
    def on_step_begin(self, args, state, control, model=None, **kw):
        if state.global_step == 2:
            for n, p in model.named_parameters():
                if ".layers.1." in n or n.startswith("model.norm"):
                    p.requires_grad = True
        if state.global_step == 4:
            for p in model.parameters():
                p.requires_grad = True
        print("step", state.global_step, "trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))

args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         max_steps=7, logging_steps=1, max_grad_norm=0.5, save_strategy="no", report_to="none", seed=11)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tok),
                  optimizers=(opt, None), callbacks=[Unfreeze()])
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
print("GRADNORMS", [e["grad_norm"] for e in trainer.state.log_history if "loss" in e])
