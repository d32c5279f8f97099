"""A notebook's way: the Trainer is built, and then the cells go on changing the
callbacks (remove_callback(PrinterCallback), add_callback of a loss keeper, pop_callback of the ProgressCallback)
and run trainer.train() twice, the second after bumping args.max_steps (the TrainingArguments object the
script built and passed) and trainer.args.learning_rate by hand (a cell
run again, not a resume). Causal LM (Qwen3 checkpoint), DataCollatorForLanguageModeling(mlm=False), logging_first_step,
max_steps well under one epoch.

    python notebook_train_twice.py QWEN3_DIR text.txt OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, PrinterCallback,
                          ProgressCallback, Trainer, TrainerCallback, TrainingArguments, set_seed)


class LossKeeper(TrainerCallback):
    def __init__(self):
        self.losses = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append((state.global_step, logs["loss"]))


model_dir, text_file, out_dir = sys.argv[1:4]
set_seed(3)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("text", data_files=text_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
model = AutoModelForCausalLM.from_pretrained(model_dir)

args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=4, max_steps=4, learning_rate=1e-3,
                         logging_steps=3, logging_first_step=True, save_strategy="no", report_to="none",
                         use_cpu=True, seed=3)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False), processing_class=tokenizer)

# next cell
trainer.remove_callback(PrinterCallback)
keeper = LossKeeper()
trainer.add_callback(keeper)
trainer.pop_callback(ProgressCallback)
first = trainer.train()
print("first", first.global_step, first.training_loss)
print("lrs", [(e["step"], e["learning_rate"]) for e in trainer.state.log_history if "loss" in e])
all_losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]

# next cell: "train a bit more"
args.max_steps = 6  # the notebook's `args` object, the one handed to the Trainer
trainer.args.learning_rate = 5e-4
second = trainer.train()
print("second", second.global_step, second.training_loss)
print("lrs", [(e["step"], e["learning_rate"]) for e in trainer.state.log_history if "loss" in e])
all_losses += [e["loss"] for e in trainer.state.log_history if "loss" in e]
print("keeper", keeper.losses)
