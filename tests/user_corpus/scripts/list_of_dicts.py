"""No datasets library at all: the training set is a plain Python list of dicts built in a list comprehension
(input_ids/attention_mask lists and an int label) from json lines read by hand, DataCollatorWithPadding, a
Qwen3 checkpoint as a 2-way classifier.

    python list_of_dicts.py QWEN3_DIR chat.jsonl OUT
"""
import json
import sys

from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

model_dir, data_path, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
set_seed(99)

tokenizer = AutoTokenizer.from_pretrained(model_dir)

with open(data_path) as f:
    conversations = [json.loads(line)["messages"] for line in f]

# Who said the longer thing? 0: the user, 1: the assistant.
train_data = [
    {**tokenizer(c[0]["content"] + " " + c[1]["content"], truncation=True, max_length=64),
     "label": int(len(c[1]["content"]) > len(c[0]["content"]))}
    for c in conversations
]
print(len(train_data), train_data[0])

model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2)

trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8,
                           logging_steps=1, save_strategy="no", report_to="none", seed=99),
    train_dataset=train_data,
    data_collator=DataCollatorWithPadding(tokenizer),
)
trainer.train()
