"""A bi-encoder trained with in-batch negatives on the Trainer, the way people do dense-retrieval fine-tunes
before reaching for sentence-transformers: notebook style (constants at the top, everything at top level). Each row
is a (query, positive) pair of texts of the same topic; the rows are tokenized into two sets of columns
(q_input_ids/q_attention_mask and p_input_ids/p_attention_mask, no plain "input_ids", no labels at all); a collator
of the script's own pads each side with tokenizer.pad; the model is an nn.Module around one shared BERT encoder
(mean pooling, cosine similarities times a scale of 20) whose forward builds the targets itself (row i's positive
is column i) and returns {"loss", "scores"}. The Trainer drops the raw text columns by the forward's signature.

    python biencoder_inbatch.py BERT_DIR cls_train.csv OUT
"""
import random
import sys

import pandas as pd
import torch
import torch.nn.functional as F
from datasets import Dataset
from torch import nn
from transformers import AutoModel, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL_DIR, CSV, OUT = sys.argv[1:4]
SEED = 21
MAX_LEN = 40
BATCH = 8
STEPS = 8
SCALE = 20.0

set_seed(SEED)
tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)

# (query, positive) pairs: each text with another text of its own label, drawn with a fixed rng
df = pd.read_csv(CSV)
rng = random.Random(SEED)
by_label = df.groupby("label")["text"].apply(list).to_dict()
pairs = []
for text, label in zip(df["text"], df["label"]):
    others = [t for t in by_label[label] if t != text]
    pairs.append({"query": text, "positive": rng.choice(others)})
ds = Dataset.from_list(pairs)


def encode(batch):
    q = tokenizer(batch["query"], truncation=True, max_length=MAX_LEN)
    p = tokenizer(batch["positive"], truncation=True, max_length=MAX_LEN)
    return {"q_input_ids": q["input_ids"], "q_attention_mask": q["attention_mask"],
            "p_input_ids": p["input_ids"], "p_attention_mask": p["attention_mask"]}


ds = ds.map(encode, batched=True)  # query/positive text columns stay: the Trainer removes them


def pair_collator(rows):
    out = {}
    for side in ("q", "p"):
        padded = tokenizer.pad([{"input_ids": r[f"{side}_input_ids"], "attention_mask": r[f"{side}_attention_mask"]}
                                for r in rows], padding="longest", return_tensors="pt")
        out[f"{side}_input_ids"] = padded["input_ids"]
        out[f"{side}_attention_mask"] = padded["attention_mask"]
    return out


class BiEncoder(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(name)

    def embed(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return F.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0), dim=-1)

    def forward(self, q_input_ids, q_attention_mask, p_input_ids, p_attention_mask):
        q = self.embed(q_input_ids, q_attention_mask)
        p = self.embed(p_input_ids, p_attention_mask)
        scores = SCALE * q @ p.T
        targets = torch.arange(scores.size(0), device=scores.device)
        return {"loss": F.cross_entropy(scores, targets), "scores": scores}


model = BiEncoder(MODEL_DIR)
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=BATCH, learning_rate=2e-3, max_steps=STEPS,
                         warmup_steps=1, logging_steps=1, save_strategy="no", report_to="none", seed=SEED)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=pair_collator)
trainer.train()

model.eval()
with torch.no_grad():
    batch = pair_collator([ds[i] for i in range(8)])
    scores = model(**batch)["scores"]
print("top-1 of the first 8 in-batch:", float((scores.argmax(-1) == torch.arange(8)).float().mean()))
