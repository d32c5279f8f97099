"""Two evaluation sets passed as a dict (the Trainer logs eval_in_domain_loss and eval_shifted_loss), and training
in two stages on one Trainer: first the classification head alone (the body frozen), then everything unfrozen
and train() called again on the same Trainer with more steps. The best checkpoint is picked by the in-domain loss.
A GPT-2 classifier whose pad token is its eos.

    python two_eval_sets_two_stages.py GPT2_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, TRAIN, DEV, OUT = sys.argv[1:5]
set_seed(8)
tok = AutoTokenizer.from_pretrained(MODEL)
tok.pad_token = tok.eos_token
data = load_dataset("csv", data_files={"train": TRAIN, "dev": DEV})
data = data.map(lambda b: tok(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
shifted = data["dev"].map(lambda r: {"input_ids": r["input_ids"][::-1], "attention_mask": r["attention_mask"]})

model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
for name, param in model.named_parameters():
    param.requires_grad = name.startswith("score")

args = TrainingArguments(OUT, per_device_train_batch_size=8, max_steps=4, learning_rate=5e-3, eval_strategy="steps",
                         eval_steps=2, save_strategy="steps", save_steps=2, load_best_model_at_end=True,
                         metric_for_best_model="eval_in_domain_loss", greater_is_better=False, logging_steps=1,
                         report_to="none", seed=8)
trainer = Trainer(model=model, args=args, train_dataset=data["train"],
                  eval_dataset={"in_domain": data["dev"], "shifted": shifted}, data_collator=DataCollatorWithPadding(tok))
trainer.train()
print("stage 1 done:", trainer.state.best_metric)

for param in model.parameters():
    param.requires_grad = True
trainer.args.max_steps = 8
trainer.args.learning_rate = 5e-4
trainer.train()
print("stage 2 done:", trainer.evaluate())
