"""Adversarial training the competition way: FGM (fast gradient method) in a Trainer subclass that overrides
training_step. The step runs the usual forward and backward through super(), then nudges the word embeddings
along their gradient, runs a second forward and backward on the same inputs (its gradients add to the first's),
and puts the embeddings back. A Qwen3 classifier with its embeddings trainable, DataCollatorWithPadding given
through processing_class alone (the Trainer makes it).

    python fgm_training_step.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import pandas as pd
import torch
from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(5)
tokenizer = AutoTokenizer.from_pretrained(MODEL)
ds = Dataset.from_pandas(pd.read_csv(CSV)).map(lambda b: tokenizer(b["text"], truncation=True, max_length=64),
                                              batched=True, remove_columns=["text"])


class FGM:
    def __init__(self, model, epsilon=0.5, name="embed_tokens"):
        self.model, self.epsilon, self.name, self.backup = model, epsilon, name, {}

    def attack(self):
        for n, p in self.model.named_parameters():
            if p.requires_grad and self.name in n and p.grad is not None:
                self.backup[n] = p.data.clone()
                norm = torch.norm(p.grad)
                if norm != 0 and not torch.isnan(norm):
                    p.data.add_(self.epsilon * p.grad / norm)

    def restore(self):
        for n, p in self.model.named_parameters():
            if n in self.backup:
                p.data = self.backup[n]
        self.backup = {}


class FGMTrainer(Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        fgm = FGM(model)
        fgm.attack()
        inputs = self._prepare_inputs(inputs)
        with self.compute_loss_context_manager():
            adv_loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
        self.accelerator.backward(adv_loss / self.args.gradient_accumulation_steps)
        fgm.restore()
        return loss


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tokenizer.pad_token_id
args = TrainingArguments(OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=6,
                         learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none", seed=5)
FGMTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer).train()
