"""A BERT classifier whose settings live in a CONFIG dict overridable as key=value on the command line (the
homemade alternative to argparse), gradient_accumulation_steps=2, and the user's own callbacks passed in the
Trainer constructor: one that dumps the loss curve to a JSON file at train end, one that prints when the
gradient norm spikes.

    python callbacks_in_constructor.py model=BERT_DIR train=cls_train.csv output_dir=OUT [max_steps=6 ...]
"""
import json
import os
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainerCallback, TrainingArguments, set_seed)

CONFIG = {"model": None, "train": None, "output_dir": "out", "max_steps": 6, "batch_size": 4, "grad_accum": 2,
          "lr": 2e-3, "max_len": 64, "seed": 77}
for arg in sys.argv[1:]:
    key, value = arg.split("=", 1)
    CONFIG[key] = type(CONFIG[key])(value) if CONFIG.get(key) is not None else value


class LossCurveToJson(TrainerCallback):
    def __init__(self, path):
        self.path, self.curve = path, []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.curve.append({"step": state.global_step, "loss": logs["loss"]})

    def on_train_end(self, args, state, control, **kwargs):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "w") as f:
            json.dump(self.curve, f)


class GradSpikeAlert(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and logs.get("grad_norm", 0) > 5.0:
            print(f"gradient spike at step {state.global_step}: {logs['grad_norm']:.2f}")


set_seed(CONFIG["seed"])
tokenizer = AutoTokenizer.from_pretrained(CONFIG["model"])
raw = load_dataset("csv", data_files=CONFIG["train"])["train"]
tokenized = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=CONFIG["max_len"]), batched=True,
                    remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(CONFIG["model"], num_labels=5)

trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir=CONFIG["output_dir"], per_device_train_batch_size=CONFIG["batch_size"],
                           gradient_accumulation_steps=CONFIG["grad_accum"], learning_rate=CONFIG["lr"],
                           max_steps=CONFIG["max_steps"], logging_steps=1, save_strategy="no", report_to=[],
                           seed=CONFIG["seed"]),
    train_dataset=tokenized,
    data_collator=DataCollatorWithPadding(tokenizer),
    callbacks=[LossCurveToJson(os.path.join(CONFIG["output_dir"], "loss_curve.json")), GradSpikeAlert()],
)
trainer.train()
