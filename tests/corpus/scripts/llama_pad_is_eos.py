"""A Llama classifier whose tokenizer has no pad token: the usual fix `tokenizer.pad_token = tokenizer.eos_token`
(and the model's pad_token_id with it); the rows hold no eos.
    python llama_pad_is_eos.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
model.config.pad_token_id = tokenizer.pad_token_id
ds = load_dataset("csv", data_files=data, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64, add_special_tokens=False), batched=True)
trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer),
                  args=TrainingArguments(out, max_steps=8, per_device_train_batch_size=8, logging_steps=1,
                                         report_to="none", save_strategy="no", seed=0))
trainer.train()
