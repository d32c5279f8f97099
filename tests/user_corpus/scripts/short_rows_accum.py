"""Intent classification on short utterances (5-35 tokens), a batch of 8 with gradient_accumulation_steps=2 for an
effective batch of 16, the data read with the csv module into Dataset.from_dict, tokenized with truncation only
(dynamic padding by the default collator the Trainer picks when given the tokenizer), linear schedule with
warm-up, a Qwen3 checkpoint as classifier.

    python short_rows_accum.py QWEN3_DIR short.csv OUT
"""
import csv
import sys

from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL_DIR, CSV_FILE, OUT_DIR = sys.argv[1:4]
set_seed(123)

with open(CSV_FILE, newline="") as f:
    reader = csv.reader(f)
    next(reader)
    texts, labels = zip(*[(text, int(label)) for text, label in reader])

tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
dataset = Dataset.from_dict({"text": list(texts), "label": list(labels)})
dataset = dataset.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=48), batched=True)
print({k: dataset[0][k] for k in ("text", "label")}, "tokens:", len(dataset[0]["input_ids"]))

model = AutoModelForSequenceClassification.from_pretrained(MODEL_DIR, num_labels=3)
training_args = TrainingArguments(
    output_dir=OUT_DIR,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=1e-3,
    lr_scheduler_type="linear",
    warmup_steps=2,
    max_steps=8,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=123,
)
# processing_class makes the Trainer pad each batch with DataCollatorWithPadding; "text" is dropped by
# remove_unused_columns.
trainer = Trainer(model=model, args=training_args, train_dataset=dataset, processing_class=tokenizer)
trainer.train()
