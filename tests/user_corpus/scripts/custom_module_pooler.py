"""A model of one's own that is not a PreTrainedModel: an nn.Module wrapping AutoModel (a BERT encoder) with
masked mean pooling, dropout and a linear head, whose forward takes input_ids, attention_mask and labels and
returns a plain dict {"loss", "logits"} (the sentence-embedding fine-tune pattern from blog posts). It has no
.config, no save_pretrained and no gradient_checkpointing_enable; the Trainer takes it and saves its state_dict.
Tokenised with padding to the longest row of each batch by DataCollatorWithPadding.

    python custom_module_pooler.py BERT_DIR cls_train.csv OUT
"""
import sys

import pandas as pd
import torch
from datasets import Dataset
from torch import nn
from transformers import AutoModel, AutoTokenizer, DataCollatorWithPadding, Trainer, TrainingArguments, set_seed

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(5)


class MeanPoolClassifier(nn.Module):
    def __init__(self, name: str, num_labels: int):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(name)
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(self.encoder.config.hidden_size, num_labels)
        self.num_labels = num_labels

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        logits = self.head(self.dropout(pooled))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


tokenizer = AutoTokenizer.from_pretrained(MODEL)
df = pd.read_csv(CSV)
ds = Dataset.from_pandas(df).map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True,
                                 remove_columns=["text"])
ds = ds.rename_column("label", "labels")

model = MeanPoolClassifier(MODEL, num_labels=5)
args = TrainingArguments(OUT, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8, logging_steps=1,
                         save_strategy="no", report_to="none", seed=5)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
trainer.save_model(OUT)
print("saved", sorted(p.name for p in __import__("pathlib").Path(OUT).iterdir())[:4])
