"""An imbalanced-classes fine-tune with a WeightedLossTrainer: compute_loss pops "labels" out of the inputs before
the forward, so the model returns logits only, and applies nn.CrossEntropyLoss(weight=...) with inverse-frequency
class weights computed from the training labels (the widely copied snippet from the HF forums). The data are
downsampled to make the classes unequal; BERT classifier.

    python class_weighted_trainer.py BERT_DIR cls_train.csv OUT
"""
import sys

import numpy as np
import pandas as pd
import torch
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(21)

df = pd.read_csv(CSV)
df = pd.concat([df[df.label == k].head(n) for k, n in zip(range(5), [30, 20, 12, 8, 4])]).reset_index(drop=True)
counts = np.bincount(df["label"], minlength=5)
class_weights = torch.tensor(len(df) / (5 * np.maximum(counts, 1)), dtype=torch.float)
print("class weights", class_weights)

tokenizer = AutoTokenizer.from_pretrained(MODEL)
ds = Dataset.from_pandas(df).map(lambda e: tokenizer(e["text"], truncation=True, max_length=64), batched=True)
ds = ds.remove_columns(["text"])


class WeightedLossTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.get("logits")
        loss_fct = torch.nn.CrossEntropyLoss(weight=class_weights.to(logits.device))
        loss = loss_fct(logits.view(-1, self.model.config.num_labels), labels.view(-1))
        return (loss, outputs) if return_outputs else loss


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
args = TrainingArguments(OUT, per_device_train_batch_size=8, learning_rate=2e-3, max_steps=8, logging_steps=1,
                         save_strategy="no", report_to="none", seed=21)
trainer = WeightedLossTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer,
                              data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
