"""Kaggle-notebook style decoder classifier: constants at the top, pandas and a stratified split by hand (df.sample per class), a
torch.utils.data.Dataset whose __getitem__ tokenizes one text with padding="max_length" and return_tensors="pt"
and squeezes the batch dimension away (every row a dict of torch tensors, all MAX_LEN long), a Qwen3 checkpoint
loaded with AutoModelForSequenceClassification and its pad_token_id set on the config.

    python torch_dataset_tensors.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

MODEL_NAME = sys.argv[1]
CSV_PATH = sys.argv[2]
OUTPUT_DIR = sys.argv[3]
MAX_LEN = 64
BATCH_SIZE = 8
LEARNING_RATE = 1e-3
SEED = 2024

np.random.seed(SEED)
torch.manual_seed(SEED)

df = pd.read_csv(CSV_PATH)
NUM_CLASSES = df["label"].nunique()
val_df = df.groupby("label", group_keys=False).sample(frac=0.2, random_state=SEED)
train_df = df.drop(val_df.index).sample(frac=1.0, random_state=SEED)


class TextDataset(Dataset):
    def __init__(self, texts, labels, tokenizer, max_len):
        self.texts = texts
        self.labels = labels
        self.tokenizer = tokenizer
        self.max_len = max_len

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, idx):
        text = str(self.texts[idx])
        encoding = self.tokenizer(text, padding="max_length", truncation=True, max_length=self.max_len,
                                  return_tensors="pt")
        return {
            "input_ids": encoding["input_ids"].squeeze(0),
            "attention_mask": encoding["attention_mask"].squeeze(0),
            "labels": torch.tensor(self.labels[idx], dtype=torch.long),
        }


tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME)
model = AutoModelForSequenceClassification.from_pretrained(MODEL_NAME, num_labels=NUM_CLASSES)
model.config.pad_token_id = tokenizer.pad_token_id

train_dataset = TextDataset(train_df["text"].values, train_df["label"].values, tokenizer, MAX_LEN)
val_dataset = TextDataset(val_df["text"].values, val_df["label"].values, tokenizer, MAX_LEN)
print(train_dataset[0])

training_args = TrainingArguments(
    output_dir=OUTPUT_DIR,
    per_device_train_batch_size=BATCH_SIZE,
    per_device_eval_batch_size=BATCH_SIZE,
    learning_rate=LEARNING_RATE,
    max_steps=10,
    logging_steps=1,
    save_strategy="no",
    eval_strategy="no",
    report_to="none",
    seed=SEED,
)


def compute_metrics(p):
    preds = np.argmax(p.predictions, axis=1)
    return {"accuracy": (preds == p.label_ids).mean()}


trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset, eval_dataset=val_dataset,
                  compute_metrics=compute_metrics)
trainer.train()
results = trainer.evaluate()
print(results)
