"""datasets with set_format("numpy") and columns padded at map time to the longest row of each map batch
(padding="longest"): the rows are numpy arrays.
    python set_format_numpy.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

model_name, csv_file, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_name)
ds = load_dataset("csv", data_files=csv_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], padding="longest", truncation=True, max_length=64), batched=True,
            batch_size=1000, remove_columns=["text"])
ds.set_format("numpy", columns=["input_ids", "attention_mask", "label"])
model = AutoModelForSequenceClassification.from_pretrained(model_name, num_labels=4)
trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer,
                  args=TrainingArguments(output_dir=out, max_steps=8, per_device_train_batch_size=8, logging_steps=1,
                                         report_to="none", save_strategy="no", seed=0))
trainer.train()
