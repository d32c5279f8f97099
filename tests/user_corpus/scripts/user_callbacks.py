"""User callbacks on a GPT-2 classifier: a TrainerCallback that prints each log line with its own formatting and
keeps a loss list, another that changes control (it stops training once the loss has been logged N times), added
with trainer.add_callback after construction; GPT-2 has no pad token, so the two fixes people learn the hard way:
tokenizer.pad_token = tokenizer.eos_token AND model.config.pad_token_id = tokenizer.pad_token_id (without the
second, GPT2ForSequenceClassification refuses batches larger than 1).

    python user_callbacks.py GPT2_DIR short.csv OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainerCallback, TrainingArguments, set_seed)


class PrettyLogger(TrainerCallback):
    def __init__(self):
        self.losses = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append(logs["loss"])
            print(f"[step {state.global_step:>3}] loss={logs['loss']:.4f} lr={logs.get('learning_rate', 0):.2e}")


class StopAfterLogs(TrainerCallback):
    def __init__(self, logger, n):
        self.logger, self.n = logger, n

    def on_step_end(self, args, state, control, **kwargs):
        if len(self.logger.losses) >= self.n:
            print(f"stopping: {self.n} losses logged")
            control.should_training_stop = True
        return control


model_dir, csv_path, out = sys.argv[1:4]
set_seed(4)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
tokenizer.pad_token = tokenizer.eos_token

ds = load_dataset("csv", data_files=csv_path, split="train")
ds = ds.map(lambda x: tokenizer(x["text"], truncation=True, max_length=96), batched=True, remove_columns=["text"])

model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=3)
model.config.pad_token_id = tokenizer.pad_token_id

trainer = Trainer(model=model,
                  args=TrainingArguments(out, per_device_train_batch_size=8, max_steps=20, learning_rate=1e-3,
                                         logging_steps=1, save_strategy="no", report_to="none", seed=4),
                  train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer))
pretty = PrettyLogger()
trainer.add_callback(pretty)
trainer.add_callback(StopAfterLogs(pretty, n=7))
trainer.train()
assert trainer.state.global_step < 20, trainer.state.global_step  # stopped by the callback
