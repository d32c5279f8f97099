"""The blog-post style: a torch Dataset over a pandas frame whose __getitem__ returns a dict of tensors (the
tokenizer called with return_tensors="pt", padding="max_length", then squeezed), a decoder classifier, constants
at the top.
    python torch_tensor_rows.py MODEL cls.csv OUT"""
import sys

import pandas as pd
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

MODEL_NAME, CSV, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
MAX_LEN = 48
BATCH_SIZE = 8


class TextDataset(torch.utils.data.Dataset):
    def __init__(self, df, tokenizer):
        self.texts, self.labels, self.tokenizer = df["text"].tolist(), df["label"].tolist(), tokenizer

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, idx):
        enc = self.tokenizer(self.texts[idx], padding="max_length", truncation=True, max_length=MAX_LEN,
                             return_tensors="pt")
        item = {k: v.squeeze(0) for k, v in enc.items()}
        item["labels"] = torch.tensor(self.labels[idx], dtype=torch.long)
        return item


df = pd.read_csv(CSV)
tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME)
model = AutoModelForSequenceClassification.from_pretrained(MODEL_NAME, num_labels=df["label"].nunique())
model.config.pad_token_id = tokenizer.pad_token_id
training_args = TrainingArguments(output_dir=OUT, num_train_epochs=1, max_steps=8, per_device_train_batch_size=BATCH_SIZE,
                                  logging_steps=1, report_to="none", save_strategy="no", seed=0)
trainer = Trainer(model=model, args=training_args, train_dataset=TextDataset(df, tokenizer))
trainer.train()
