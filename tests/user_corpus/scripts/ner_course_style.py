"""Token classification (NER) the way the Hugging Face course's chapter 7 and run_ner.py do it: words pre-split
into `tokens` with string `ner_tags`, tokenized with is_split_into_words=True, each word's label on its first
sub-token and -100 on the rest and on [CLS]/[SEP] (align_labels_with_tokens), DataCollatorForTokenClassification
pads the labels with -100, id2label/label2id on the config. Top-level code, positional arguments.

    python ner_course_style.py BERT_DIR ner.jsonl OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification, Trainer,
                          TrainingArguments, set_seed)

model_checkpoint, data_file, output_dir = sys.argv[1], sys.argv[2], sys.argv[3]
set_seed(42)

raw_datasets = load_dataset("json", data_files=data_file)["train"].train_test_split(test_size=0.2, seed=42)
label_names = sorted({tag for tags in raw_datasets["train"]["ner_tags"] for tag in tags})
id2label = {i: label for i, label in enumerate(label_names)}
label2id = {v: k for k, v in id2label.items()}

tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def align_labels_with_tokens(labels, word_ids):
    new_labels = []
    current_word = None
    for word_id in word_ids:
        if word_id != current_word:
            # Start of a new word!
            current_word = word_id
            label = -100 if word_id is None else labels[word_id]
            new_labels.append(label)
        elif word_id is None:
            # Special token
            new_labels.append(-100)
        else:
            # Same word as previous token
            new_labels.append(-100)
    return new_labels


def tokenize_and_align_labels(examples):
    tokenized_inputs = tokenizer(examples["tokens"], truncation=True, is_split_into_words=True, max_length=64)
    all_labels = examples["ner_tags"]
    new_labels = []
    for i, labels in enumerate(all_labels):
        word_ids = tokenized_inputs.word_ids(i)
        new_labels.append(align_labels_with_tokens([label2id[t] for t in labels], word_ids))
    tokenized_inputs["labels"] = new_labels
    return tokenized_inputs


tokenized_datasets = raw_datasets.map(tokenize_and_align_labels, batched=True,
                                      remove_columns=raw_datasets["train"].column_names)
data_collator = DataCollatorForTokenClassification(tokenizer=tokenizer)


def compute_metrics(eval_preds):
    logits, labels = eval_preds
    predictions = np.argmax(logits, axis=-1)
    mask = labels != -100
    return {"token_accuracy": float((predictions[mask] == labels[mask]).mean())}


model = AutoModelForTokenClassification.from_pretrained(model_checkpoint, id2label=id2label, label2id=label2id)

args = TrainingArguments(
    output_dir,
    eval_strategy="no",
    save_strategy="no",
    learning_rate=2e-3,
    max_steps=10,
    per_device_train_batch_size=8,
    weight_decay=0.01,
    logging_steps=1,
    report_to="none",
)
trainer = Trainer(model=model, args=args, train_dataset=tokenized_datasets["train"],
                  eval_dataset=tokenized_datasets["test"], data_collator=data_collator,
                  compute_metrics=compute_metrics, processing_class=tokenizer)
trainer.train()
print(trainer.evaluate())
