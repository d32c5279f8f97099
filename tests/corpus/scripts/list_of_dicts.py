"""No datasets library at all: the train set is a Python list of dicts, tokenised in a list comprehension, the
labels made from strings with a dict.
    python list_of_dicts.py MODEL cls.csv OUT"""
import csv
import sys

from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
rows = list(csv.DictReader(open(data)))
names = sorted({r["label"] for r in rows})
label2id = {n: i for i, n in enumerate(names)}
train = [{**tok(r["text"], truncation=True, max_length=64), "label": label2id[r["label"]]} for r in rows]
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=len(names), label2id=label2id,
                                                           id2label={i: n for n, i in label2id.items()})
trainer = Trainer(model=model, train_dataset=train, data_collator=DataCollatorWithPadding(tok),
                  args=TrainingArguments(out, max_steps=8, per_device_train_batch_size=8, logging_steps=1,
                                         report_to="none", save_strategy="no", seed=0))
trainer.train()
