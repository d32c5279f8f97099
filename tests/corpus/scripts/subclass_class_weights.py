"""The most copied Trainer subclass: class-weighted cross-entropy for an imbalanced classifier; compute_loss pops
the labels before the forward and returns (loss, outputs).
    python subclass_class_weights.py MODEL cls.csv OUT"""
import sys

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)


class WeightedLossTrainer(Trainer):
    def __init__(self, *args, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights

    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss_fct = torch.nn.CrossEntropyLoss(weight=self.class_weights.to(outputs.logits.device))
        loss = loss_fct(outputs.logits.view(-1, model.config.num_labels), labels.view(-1))
        return (loss, outputs) if return_outputs else loss


model_dir, data, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=data, split="train").map(lambda b: tok(b["text"], truncation=True), batched=True)
counts = torch.bincount(torch.tensor(ds["label"]), minlength=4).float()
weights = counts.sum() / (4 * counts)
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
trainer = WeightedLossTrainer(model=model, args=TrainingArguments(out, max_steps=8, per_device_train_batch_size=8,
                                                                  logging_steps=1, report_to="none",
                                                                  save_strategy="no", seed=0),
                              train_dataset=ds, data_collator=DataCollatorWithPadding(tok), class_weights=weights)
trainer.train()
