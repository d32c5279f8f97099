"""A Trainer subclass with its own compute_loss: a shifted mean cross-entropy on a causal LM (it ignores
num_items_in_batch), gradient accumulation 2, rows padded to a fixed length when tokenised.
    python subclass_mean_loss.py MODEL text.txt OUT"""
import sys

import torch.nn.functional as F
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments


class LMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits[:, :-1, :]
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100)
        return (loss, outputs) if return_outputs else loss


model_dir, text_file, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("text", data_files=text_file, split="train")


def encode(batch):
    enc = tokenizer(batch["text"], padding="max_length", truncation=True, max_length=40)
    enc["labels"] = [[t if m else -100 for t, m in zip(ids, mask)] for ids, mask in zip(enc["input_ids"], enc["attention_mask"])]
    return enc


ds = ds.map(encode, batched=True, remove_columns=["text"])
trainer = LMTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), train_dataset=ds,
                    args=TrainingArguments(out, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                                           max_steps=8, logging_steps=1, report_to="none", save_strategy="no", seed=0))
trainer.train()
