"""Training more after a run finished, on the same Trainer object, as notebook users do when the first budget was
too small: train() for 4 steps saving a checkpoint every 2 steps, then raise trainer.args.max_steps to 8 and call
trainer.train(resume_from_checkpoint=True), which reloads checkpoint-4 (weights, optimizer, scheduler, RNG, data
position) into the same model and goes on to step 8. A Qwen3 decoder classifier, DataCollatorWithPadding,
constant_with_warmup, gradient accumulation 2.

    python resume_same_trainer_twice.py QWEN3_DIR cls_train.csv OUT
"""
import os
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

model_path, csv_file, out = sys.argv[1:4]
set_seed(99)  # before the new score head is drawn
tokenizer = AutoTokenizer.from_pretrained(model_path)
data = load_dataset("csv", data_files=csv_file)["train"]
data = data.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True)

model = AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=5)
model.config.pad_token_id = tokenizer.pad_token_id
args = TrainingArguments(output_dir=out, per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=4,
                         learning_rate=2e-3, lr_scheduler_type="constant_with_warmup", warmup_steps=1,
                         save_strategy="steps", save_steps=2, logging_steps=1, report_to="none", seed=99)
trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                  data_collator=DataCollatorWithPadding(tokenizer))
first = trainer.train()
print("first run:", first.global_step, "steps, loss", round(first.training_loss, 4))
print("saved:", sorted(d for d in os.listdir(out) if d.startswith("checkpoint-")))

trainer.args.max_steps = 8
second = trainer.train(resume_from_checkpoint=True)
print("after resuming:", second.global_step, "steps, loss", round(second.training_loss, 4))
