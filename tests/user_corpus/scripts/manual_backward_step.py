"""A Trainer subclass that replaces training_step outright, as forum answers show for adding a regulariser: it
puts the model in train mode, prepares the inputs, runs the forward itself, adds a confidence penalty (minus 0.1 x
the mean entropy of the predicted class distribution), divides by the accumulation steps and calls
self.accelerator.backward(loss) itself, returning the detached loss (num_items_in_batch accepted and ignored). A
Qwen3 decoder classifier with DataCollatorWithPadding, gradient accumulation 2.

    python manual_backward_step.py QWEN3_DIR short.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

model_dir, csv_path, out_dir = sys.argv[1:4]
set_seed(8)

tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=csv_path, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=3)
model.config.pad_token_id = tokenizer.pad_token_id


class ConfidencePenaltyTrainer(Trainer):
    beta = 0.1

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        inputs = self._prepare_inputs(inputs)
        with self.compute_loss_context_manager():
            outputs = model(**inputs)
            probs = torch.softmax(outputs.logits, dim=-1)
            entropy = -(probs * torch.log(probs + 1e-9)).sum(-1).mean()
            loss = outputs.loss - self.beta * entropy
        if self.args.gradient_accumulation_steps > 1:
            loss = loss / self.args.gradient_accumulation_steps
        self.accelerator.backward(loss)
        return loss.detach()


args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         max_steps=6, learning_rate=3e-3, logging_steps=1, save_strategy="no", report_to="none",
                         seed=8)
trainer = ConfidencePenaltyTrainer(model=model, args=args, train_dataset=ds,
                                   data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
