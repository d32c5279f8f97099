"""Layer-wise learning-rate decay, the Kaggle NLP competition favourite: a Trainer subclass overrides
create_optimizer to build AdamW parameter groups itself (the head at the full rate, each encoder layer below it at
0.8x the one above, the embeddings lowest; no weight decay on biases and LayerNorm), then leaves the scheduler to
the Trainer. A BERT classifier from a masked-LM checkpoint (new head), fixed-length padding in the tokenizer call,
gradient accumulation 2, eval at the end with accuracy.

    python llrd_create_optimizer.py BERT_DIR cls_train.csv OUT
"""
import sys

import numpy as np
import pandas as pd
import torch
from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL, CSV, OUT = sys.argv[1:4]
SEED = 42
set_seed(SEED)

df = pd.read_csv(CSV)
train_df, valid_df = df.iloc[:128].reset_index(drop=True), df.iloc[128:].reset_index(drop=True)
tokenizer = AutoTokenizer.from_pretrained(MODEL)


def tokenize(batch):
    return tokenizer(batch["text"], padding="max_length", truncation=True, max_length=64)


train_ds = Dataset.from_pandas(train_df).map(tokenize, batched=True).rename_column("label", "labels")
valid_ds = Dataset.from_pandas(valid_df).map(tokenize, batched=True).rename_column("label", "labels")

model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)


class LLRDTrainer(Trainer):
    def create_optimizer(self, model=None):
        if self.optimizer is not None:
            return self.optimizer
        lr, decay, wd = self.args.learning_rate, 0.8, self.args.weight_decay
        no_decay = ("bias", "LayerNorm.weight")
        layers = [self.model.bert.embeddings] + list(self.model.bert.encoder.layer)
        groups = [{"params": [p for n, p in self.model.named_parameters() if "bert" not in n], "lr": lr,
                   "weight_decay": 0.0}]
        for depth, layer in enumerate(reversed(layers)):
            layer_lr = lr * decay ** (depth + 1)
            named = list(layer.named_parameters())
            groups.append({"params": [p for n, p in named if not any(nd in n for nd in no_decay)],
                           "lr": layer_lr, "weight_decay": wd})
            groups.append({"params": [p for n, p in named if any(nd in n for nd in no_decay)],
                           "lr": layer_lr, "weight_decay": 0.0})
        self.optimizer = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)
        return self.optimizer


def compute_metrics(p):
    return {"accuracy": float((np.argmax(p.predictions, axis=1) == p.label_ids).mean())}


args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, per_device_eval_batch_size=16,
                         gradient_accumulation_steps=2, max_steps=6, learning_rate=5e-3, weight_decay=0.01,
                         warmup_steps=1, lr_scheduler_type="linear", logging_steps=1, save_strategy="no",
                         report_to="none", seed=SEED)
trainer = LLRDTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=valid_ds,
                      processing_class=tokenizer, compute_metrics=compute_metrics)
trainer.train()
print("group rates:", sorted({round(g["lr"], 6) for g in trainer.optimizer.param_groups}))
print(trainer.evaluate())
