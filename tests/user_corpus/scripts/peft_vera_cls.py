"""PEFT's sequence_classification/VeRA notebook on the Trainer with a decoder classifier: VeraConfig(r=64) on the
attention projections (one pair of frozen random matrices shared by every layer, trained scaling vectors),
modules_to_save=["score"] so the new classification head trains in full beside the adapters, a higher learning
rate for the head than for the vectors (two optimizer parameter groups handed to the Trainer), rows tokenized
without padding, DataCollatorWithPadding, grad accum 2.

    python peft_vera_cls.py QWEN3_DIR cls_train.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from peft import TaskType, VeraConfig, get_peft_model
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

model_name_or_path, train_file, output_dir = sys.argv[1:4]
set_seed(6)
tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
datasets = load_dataset("csv", data_files=train_file, split="train")
tokenized = datasets.map(lambda x: tokenizer(x["text"], truncation=True, max_length=64), batched=True,
                         remove_columns=["text"]).rename_column("label", "labels")

model = AutoModelForSequenceClassification.from_pretrained(model_name_or_path, num_labels=5)
peft_config = VeraConfig(task_type=TaskType.SEQ_CLS, r=64, target_modules=["q_proj", "o_proj"],
                         modules_to_save=["score"], vera_dropout=0.0)
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()

head = [p for n, p in model.named_parameters() if p.requires_grad and "score" in n]
vectors = [p for n, p in model.named_parameters() if p.requires_grad and "score" not in n]
optimizer = torch.optim.AdamW([{"params": vectors, "lr": 2e-2}, {"params": head, "lr": 4e-3}])

args = TrainingArguments(output_dir, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=6,
                         logging_steps=1, save_strategy="no", report_to="none", seed=6)
trainer = Trainer(model=model, args=args, train_dataset=tokenized, processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer), optimizers=(optimizer, None))
trainer.train()
