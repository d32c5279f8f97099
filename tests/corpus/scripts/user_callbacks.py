"""Callbacks of the user's own: one that prints the loss each log, one that stops training at a step, added with
trainer.add_callback after construction; pad_token_id fixed on the model's config by hand.
    python user_callbacks.py MODEL cls.csv OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainerCallback, TrainingArguments)


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print(f"step {state.global_step}: loss {logs['loss']:.4f}")


class StopAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = True
        return control


model_dir, data, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=data, split="train").map(lambda b: tok(b["text"]), batched=True)
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=4)
model.config.pad_token_id = tok.pad_token_id
trainer = Trainer(model=model, args=TrainingArguments(out, max_steps=20, per_device_train_batch_size=8,
                                                      logging_steps=1, report_to="none", save_strategy="no", seed=0),
                  train_dataset=ds, data_collator=DataCollatorWithPadding(tok))
trainer.add_callback(PrintLoss())
trainer.add_callback(StopAt(10))
trainer.train()
