"""A Trainer subclass overriding log() to add figures of its own to every training log (perplexity from the loss,
the wall clock since the start), and a callback that asks for an evaluation and a checkpoint on steps it chooses
(control.should_evaluate / should_save at steps 3 and 6, with eval_strategy and save_strategy left at "no") and
writes its own line through trainer.log(). run_clm-style 32-token blocks, the default data collator, eval set.

    python log_override_eval_callback.py QWEN3_DIR text.txt OUT
"""
import math
import sys
import time
from itertools import chain

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments,
                          default_data_collator, set_seed)

MODEL, TEXT, OUT = sys.argv[1:4]
BLOCK = 32
set_seed(13)

tok = AutoTokenizer.from_pretrained(MODEL)
raw = load_dataset("text", data_files=TEXT, split="train").train_test_split(test_size=0.1, seed=13)


def group(batch):
    ids = list(chain(*batch["input_ids"]))
    n = len(ids) // BLOCK * BLOCK
    blocks = [ids[i:i + BLOCK] for i in range(0, n, BLOCK)]
    return {"input_ids": blocks, "attention_mask": [[1] * BLOCK for _ in blocks], "labels": [b[:] for b in blocks]}


lm = raw.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
lm = lm.map(group, batched=True, remove_columns=lm["train"].column_names)


class LoggingTrainer(Trainer):
    started = time.time()

    def log(self, logs, start_time=None):
        if "loss" in logs:
            logs["perplexity"] = math.exp(min(logs["loss"], 20))
            logs["elapsed_s"] = round(time.time() - self.started, 2)
        if "eval_loss" in logs:
            logs["eval_perplexity"] = math.exp(min(logs["eval_loss"], 20))
        super().log(logs, start_time)


class EvalOnChosenSteps(TrainerCallback):
    def __init__(self, steps):
        self.steps, self.trainer = set(steps), None

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in self.steps:
            control.should_evaluate = True
            control.should_save = True
            if self.trainer is not None:
                self.trainer.log({"chosen_step": state.global_step})
        return control


callback = EvalOnChosenSteps([3, 6])
model = AutoModelForCausalLM.from_pretrained(MODEL)
args = TrainingArguments(OUT, per_device_train_batch_size=4, per_device_eval_batch_size=8, max_steps=8,
                         learning_rate=1e-3, logging_steps=1, eval_strategy="no", save_strategy="no",
                         report_to="none", seed=13)
trainer = LoggingTrainer(model=model, args=args, train_dataset=lm["train"], eval_dataset=lm["test"],
                         data_collator=default_data_collator, callbacks=[callback])
callback.trainer = trainer
trainer.train()
print([e for e in trainer.state.log_history if "eval_loss" in e or "chosen_step" in e])
