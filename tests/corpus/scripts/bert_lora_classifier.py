"""PEFT's sequence-classification example style: a BERT encoder with LoRA on query/value and the classifier head
in modules_to_save, fp32, a linear schedule with warmup, padding by the collator to a multiple of 8.
    python bert_lora_classifier.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from peft import LoraConfig, TaskType, get_peft_model
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

model_dir, data, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
dataset = load_dataset("csv", data_files={"train": data})
tokenized = dataset.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=64), batched=True,
                        remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
peft_config = LoraConfig(task_type=TaskType.SEQ_CLS, r=8, lora_alpha=16, lora_dropout=0.1,
                         target_modules=["query", "value"])
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()
training_args = TrainingArguments(output_dir=out, learning_rate=1e-3, per_device_train_batch_size=8, max_steps=8,
                                  warmup_steps=2, lr_scheduler_type="linear", logging_steps=1, report_to="none",
                                  save_strategy="no", seed=0)
trainer = Trainer(model=model, args=training_args, train_dataset=tokenized["train"], processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8))
trainer.train()
