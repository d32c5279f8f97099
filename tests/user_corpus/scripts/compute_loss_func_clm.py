"""A loss of the user's own through Trainer(compute_loss_func=...), as the Trainer docs describe it: a function of
(outputs, labels, num_items_in_batch) that sums a token-level cross-entropy (with a z-loss-like penalty on the
logits) and divides by the accumulated step's token count itself; a Qwen3 causal LM,
DataCollatorForLanguageModeling(mlm=False), grad accum 2.

    python compute_loss_func_clm.py QWEN3_DIR text.txt OUT
"""
import sys

import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)


def shifted_ce_loss(outputs, labels, num_items_in_batch=None):
    logits = outputs.logits[:, :-1, :].float()
    target = labels[:, 1:].to(logits.device)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=-100,
                           reduction="sum")
    z = torch.logsumexp(logits, dim=-1)[target != -100]
    loss = loss + 1e-4 * (z ** 2).sum()
    if num_items_in_batch is None:
        num_items_in_batch = (target != -100).sum()
    return loss / num_items_in_batch


def main(model_dir, text_path, out_dir):
    set_seed(9)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    ds = load_dataset("text", data_files=text_path, split="train").filter(lambda x: x["text"].strip() != "")
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True,
                remove_columns=["text"])
    args = TrainingArguments(out_dir, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                             learning_rate=1e-3, max_steps=6, logging_steps=1, save_strategy="no",
                             report_to="none", seed=9)
    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
                      compute_loss_func=shifted_ce_loss)
    trainer.train()


if __name__ == "__main__":
    main(*sys.argv[1:4])
