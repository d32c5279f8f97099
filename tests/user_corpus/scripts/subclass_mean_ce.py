"""A Trainer subclass that computes its own loss on a causal LM, as blog posts on "custom loss with the HF
Trainer" show: compute_loss runs the model without labels, shifts logits and labels itself and takes
CrossEntropyLoss's mean over the non -100 tokens of each micro-batch (ignoring num_items_in_batch), with
gradient_accumulation_steps 2 and DataCollatorForLanguageModeling(mlm=False) padding and masking.

    python subclass_mean_ce.py QWEN3_DIR text.txt OUT
"""
import sys

import torch
from datasets import load_dataset
from torch import nn
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)


class CausalLMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs["labels"]
        outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
        logits = outputs.logits[:, :-1, :].contiguous()
        targets = labels[:, 1:].contiguous()
        loss = nn.CrossEntropyLoss(ignore_index=-100)(logits.view(-1, logits.size(-1)), targets.view(-1))
        return (loss, outputs) if return_outputs else loss


def main():
    model_dir, text_file, out = sys.argv[1:4]
    set_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ds = load_dataset("text", data_files=text_file, split="train")
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                             learning_rate=1e-3, max_steps=6, logging_steps=1, save_strategy="no", report_to="none",
                             seed=0)
    trainer = CausalLMTrainer(model=model, args=args, train_dataset=ds,
                              data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
    trainer.train()


if __name__ == "__main__":
    main()
