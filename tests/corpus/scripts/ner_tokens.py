"""run_ner style: word-level tags aligned to tokens (the first token of a word keeps its tag, the rest -100),
DataCollatorForTokenClassification, a BERT token classifier.
    python ner_tokens.py MODEL ner.jsonl ner_labels.json OUT"""
import json
import sys

from datasets import load_dataset
from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification,
                          Trainer, TrainingArguments)

model_dir, data_file, labels_file, out = sys.argv[1:5]
label_list = json.load(open(labels_file))
tokenizer = AutoTokenizer.from_pretrained(model_dir)
raw = load_dataset("json", data_files=data_file)["train"]


def tokenize_and_align_labels(examples):
    tokenized = tokenizer(examples["tokens"], truncation=True, is_split_into_words=True)
    labels = []
    for i, tags in enumerate(examples["ner_tags"]):
        word_ids = tokenized.word_ids(batch_index=i)
        previous, row = None, []
        for w in word_ids:
            row.append(-100 if w is None or w == previous else tags[w])
            previous = w
        labels.append(row)
    tokenized["labels"] = labels
    return tokenized


train = raw.map(tokenize_and_align_labels, batched=True, remove_columns=raw.column_names)
model = AutoModelForTokenClassification.from_pretrained(
    model_dir, num_labels=len(label_list), id2label=dict(enumerate(label_list)),
    label2id={l: i for i, l in enumerate(label_list)})
args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=8, learning_rate=1e-3,
                         logging_steps=1, report_to=[], save_strategy="no", seed=0)
trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                  data_collator=DataCollatorForTokenClassification(tokenizer))
trainer.train()
