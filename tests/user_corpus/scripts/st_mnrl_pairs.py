"""Fine-tuning an embedding model with sentence-transformers' own trainer, the way its "Training Overview" and the
train-sentence-transformers blog post do it: SentenceTransformer(<a plain BERT checkpoint>) (no modules.json, so
sentence-transformers adds mean pooling itself), a datasets.Dataset of (anchor, positive) text pairs,
MultipleNegativesRankingLoss (in-batch negatives, scale 20), SentenceTransformerTrainingArguments with
batch_sampler=BatchSamplers.NO_DUPLICATES, warmup_steps=0.1 (a ratio), gradient accumulation 2, and the trained
model saved with model.save_pretrained. The trainer's own collator tokenizes each text column at batch time into
anchor_input_ids / positive_input_ids (no input_ids, no labels).

    python st_mnrl_pairs.py BERT_DIR cls_train.csv OUT
"""
import random
import sys

import pandas as pd
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

model_dir, csv_path, output_dir = sys.argv[1:4]

model = SentenceTransformer(model_dir, device="cpu")
model.max_seq_length = 48

# (anchor, positive): two texts of the same topic
df = pd.read_csv(csv_path)
rng = random.Random(42)
groups = df.groupby("label")["text"].apply(list).to_dict()
anchors, positives = [], []
for text, label in zip(df["text"], df["label"]):
    anchors.append(text)
    positives.append(rng.choice([t for t in groups[label] if t != text]))
train_dataset = Dataset.from_dict({"anchor": anchors, "positive": positives})

loss = MultipleNegativesRankingLoss(model)

args = SentenceTransformerTrainingArguments(
    output_dir=output_dir,
    max_steps=8,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=2e-3,
    warmup_steps=0.1,  # a ratio, as transformers 5 takes it
    batch_sampler=BatchSamplers.NO_DUPLICATES,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=42,
)

trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss)
trainer.train()

model.save_pretrained(f"{output_dir}/final")
emb = model.encode(["my invoice was charged twice", "the parcel is late"])
print("embedding shape:", emb.shape)
