"""A multi-task classifier: one decoder body, two heads (the ticket's topic, 5 classes, and whether it is urgent,
2 classes), written as an nn.Module of the script's own. The collator nests both targets under one key, so a batch
is {"input_ids", "attention_mask", "labels": {"topic": t1, "urgent": t2}}; a Trainer subclass's compute_loss takes
the dict apart and sums the two cross-entropies with a weight. Pandas for the data, grad accum 2.

    python multitask_dict_labels.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(5)
URGENT_WORDS = {"late", "lost", "broken", "locked", "storm", "refund"}

df = pd.read_csv(CSV)
df["urgent"] = df.text.map(lambda t: int(bool(URGENT_WORDS & set(t.split()))))
print(df.urgent.value_counts().to_dict())
tok = AutoTokenizer.from_pretrained(MODEL)


class Tickets(torch.utils.data.Dataset):
    def __init__(self, frame):
        self.enc = tok(list(frame.text), truncation=True, max_length=64)
        self.topic, self.urgent = list(frame.label), list(frame.urgent)

    def __len__(self):
        return len(self.topic)

    def __getitem__(self, i):
        return {"input_ids": self.enc["input_ids"][i], "topic": self.topic[i], "urgent": self.urgent[i]}


def collate(rows):
    batch = tok.pad([{"input_ids": r["input_ids"]} for r in rows], return_tensors="pt")
    batch["labels"] = {"topic": torch.tensor([r["topic"] for r in rows]),
                       "urgent": torch.tensor([r["urgent"] for r in rows])}
    return batch


class MultiHead(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.body = AutoModel.from_pretrained(name)
        h = self.body.config.hidden_size
        self.topic_head, self.urgent_head = nn.Linear(h, 5), nn.Linear(h, 2)

    def forward(self, input_ids, attention_mask):
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = attention_mask.sum(1) - 1  # right padding: the last real token
        pooled = hidden[torch.arange(hidden.size(0)), last]
        return {"topic": self.topic_head(pooled), "urgent": self.urgent_head(pooled)}


class MultiTaskTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        loss = F.cross_entropy(out["topic"], labels["topic"]) + 0.5 * F.cross_entropy(out["urgent"], labels["urgent"])
        return (loss, out) if return_outputs else loss


args = TrainingArguments(OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=6,
                         learning_rate=2e-3, logging_steps=1, save_strategy="no", report_to="none",
                         remove_unused_columns=False, seed=5)
trainer = MultiTaskTrainer(model=MultiHead(MODEL), args=args, train_dataset=Tickets(df), data_collator=collate)
trainer.train()
