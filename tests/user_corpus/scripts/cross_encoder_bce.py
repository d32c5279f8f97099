"""Training a reranker with sentence-transformers' CrossEncoderTrainer, as its cross-encoder training overview
does: CrossEncoder(<a plain BERT checkpoint>, num_labels=1) (a fresh one-logit classification head), (query,
passage, label) rows with 1 for a passage of the query's topic and 0 for one of another topic (a "hard negative"
per query), BinaryCrossEntropyLoss with pos_weight, CrossEncoderTrainingArguments with gradient accumulation 2 and
dataloader_drop_last. The trainer's collator hands the loss raw text lists (tokenised inside the loss, as pairs
with token_type_ids), so the batches hold no input_ids at all: only `query`, `passage` and `label`.

    python cross_encoder_bce.py BERT_DIR cls_train.csv OUT
"""
import random
import sys

import pandas as pd
import torch
from datasets import Dataset
from transformers import set_seed
from sentence_transformers import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

model_dir, csv_path, output_dir = sys.argv[1:4]

set_seed(7)  # the fresh head is drawn before the trainer seeds
model = CrossEncoder(model_dir, num_labels=1, max_length=64, device="cpu")

df = pd.read_csv(csv_path)
rng = random.Random(7)
by_label = df.groupby("label")["text"].apply(list).to_dict()
rows = {"query": [], "passage": [], "label": []}
for text, label in zip(df["text"], df["label"]):
    query = " ".join(text.split()[:6])
    other = rng.choice([lab for lab in by_label if lab != label])
    for passage, target in ((rng.choice(by_label[label]), 1.0), (rng.choice(by_label[other]), 0.0)):
        rows["query"].append(query)
        rows["passage"].append(passage)
        rows["label"].append(target)
train_dataset = Dataset.from_dict(rows).shuffle(seed=7)

loss = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(1.0))

args = CrossEncoderTrainingArguments(
    output_dir=output_dir,
    max_steps=8,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=2e-3,
    warmup_steps=1,
    dataloader_drop_last=True,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=7,
)
trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss)
trainer.train()

scores = model.predict([("invoice refund", "my card was charged a fee"), ("invoice refund", "rain and snow today")])
print("scores:", [round(float(s), 3) for s in scores])
