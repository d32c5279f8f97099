"""A T5-era recipe on a decoder classifier: optim="adafactor" (transformers' Adafactor at a fixed learning rate),
lr_scheduler_type="cosine_with_restarts" with lr_scheduler_kwargs={"num_cycles": 2}, a fractional
num_train_epochs=1.5 and no max_steps (the step count comes from the epoch length), disable_tqdm=True, and the
callbacks changed after construction: the PrinterCallback removed (the console stays quiet) and a callback of the
script's own added that keeps the learning rates.

    python epochs_adafactor_restarts.py QWEN3_DIR short.csv OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, PrinterCallback,
                          Trainer, TrainerCallback, TrainingArguments, set_seed)


class LearningRates(TrainerCallback):
    def __init__(self):
        self.rates = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "learning_rate" in logs:
            self.rates.append(logs["learning_rate"])


model_dir, csv_file, out_dir = sys.argv[1:4]
set_seed(8)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=csv_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=3)

args = TrainingArguments(
    output_dir=out_dir,
    num_train_epochs=1.5,
    per_device_train_batch_size=16,
    gradient_accumulation_steps=2,
    optim="adafactor",
    learning_rate=1e-3,
    lr_scheduler_type="cosine_with_restarts",
    lr_scheduler_kwargs={"num_cycles": 2},
    warmup_steps=1,
    logging_steps=1,
    disable_tqdm=True,
    save_strategy="no",
    report_to="none",
    seed=8,
)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer))
trainer.remove_callback(PrinterCallback)
rates = LearningRates()
trainer.add_callback(rates)
trainer.train()
print(f"{trainer.state.global_step} steps over {trainer.state.epoch:.2f} epochs; learning rates", rates.rates)
