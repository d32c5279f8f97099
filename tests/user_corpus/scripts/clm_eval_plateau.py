"""A causal LM fine-tune evaluated as run_clm does it: preprocess_logits_for_metrics keeps the argmax (so the
full logits never pile up), compute_metrics scores next-token accuracy on the shifted labels, eval_accumulation_steps
moves predictions to the CPU every 2 eval batches. The learning rate drops when the eval loss stops improving
(lr_scheduler_type="reduce_lr_on_plateau", which needs an evaluation every few steps), gradient clipping is off
(max_grad_norm=0), the fused AdamW, rows padded by DataCollatorForLanguageModeling(mlm=False).

    python clm_eval_plateau.py LLAMA_DIR text.txt OUT
"""
import argparse

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("text")
p.add_argument("out")
a = p.parse_args()

tokenizer = AutoTokenizer.from_pretrained(a.model)
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token
raw = load_dataset("text", data_files=a.text)["train"].train_test_split(test_size=0.15, seed=3)
tokenized = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=72), batched=True,
                    remove_columns=["text"])


def preprocess_logits_for_metrics(logits, labels):
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


def compute_metrics(eval_preds):
    preds, labels = eval_preds
    labels, preds = labels[:, 1:].reshape(-1), preds[:, :-1].reshape(-1)
    mask = labels != -100
    return {"accuracy": float((preds[mask] == labels[mask]).mean())}


model = AutoModelForCausalLM.from_pretrained(a.model)
args = TrainingArguments(a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, eval_accumulation_steps=2,
                         max_steps=8, learning_rate=2e-3, lr_scheduler_type="reduce_lr_on_plateau",
                         lr_scheduler_kwargs={"patience": 0, "factor": 0.5}, eval_strategy="steps", eval_steps=2,
                         max_grad_norm=0, optim="adamw_torch_fused", logging_steps=1, save_strategy="no",
                         report_to="none", seed=3)
trainer = Trainer(model=model, args=args, train_dataset=tokenized["train"], eval_dataset=tokenized["test"],
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False), processing_class=tokenizer,
                  compute_metrics=compute_metrics, preprocess_logits_for_metrics=preprocess_logits_for_metrics)
trainer.train()
print(trainer.evaluate())
