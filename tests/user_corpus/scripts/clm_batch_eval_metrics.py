"""Causal LM fine-tuning with streaming evaluation metrics: TrainingArguments(batch_eval_metrics=True) hands
compute_metrics one eval batch at a time (compute_result=True on the last), so a small stateful metric class sums
correct next-token predictions and token counts instead of concatenating every logit; preprocess_logits_for_metrics
keeps the argmax. run_clm's group_texts into 32-token blocks, eval every 3 steps, the cosine schedule with a floor
(lr_scheduler_type="cosine_with_min_lr", lr_scheduler_kwargs={"min_lr_rate": 0.1}), a Qwen3 causal LM.

    python clm_batch_eval_metrics.py --model QWEN3_DIR --text text.txt --out OUT
"""
import argparse
from itertools import chain

import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, default_data_collator


class StreamingAccuracy:
    def __init__(self):
        self.correct, self.total, self.batches = 0, 0, 0

    def __call__(self, eval_pred, compute_result: bool):
        preds, labels = eval_pred.predictions, eval_pred.label_ids
        preds, labels = preds[:, :-1], labels[:, 1:]
        mask = labels != -100
        self.correct += int(((preds == labels) & mask).sum())
        self.total += int(mask.sum())
        self.batches += 1
        if not compute_result:
            return {}
        result = {"token_accuracy": self.correct / max(self.total, 1), "metric_batches": self.batches}
        self.correct, self.total, self.batches = 0, 0, 0
        return result


def preprocess_logits_for_metrics(logits, labels):
    return torch.argmax(logits, dim=-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--block_size", type=int, default=32)
    cfg = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    raw = load_dataset("text", data_files={"train": cfg.text}, split="train").train_test_split(test_size=0.1, seed=0)
    tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])

    def group_texts(examples):
        joined = {k: list(chain(*examples[k])) for k in examples}
        total = len(joined["input_ids"]) // cfg.block_size * cfg.block_size
        blocks = {k: [v[i:i + cfg.block_size] for i in range(0, total, cfg.block_size)] for k, v in joined.items()}
        blocks["labels"] = [b.copy() for b in blocks["input_ids"]]
        return blocks

    lm = tokenized.map(group_texts, batched=True)
    model = AutoModelForCausalLM.from_pretrained(cfg.model)
    args = TrainingArguments(
        output_dir=cfg.out, per_device_train_batch_size=8, per_device_eval_batch_size=4, max_steps=9,
        learning_rate=2e-3, lr_scheduler_type="cosine_with_min_lr", lr_scheduler_kwargs={"min_lr_rate": 0.1},
        warmup_steps=1, eval_strategy="steps", eval_steps=3, batch_eval_metrics=True, logging_steps=1,
        save_strategy="no", report_to="none", seed=21, data_seed=21)
    trainer = Trainer(model=model, args=args, train_dataset=lm["train"], eval_dataset=lm["test"],
                      data_collator=default_data_collator, compute_metrics=StreamingAccuracy(),
                      preprocess_logits_for_metrics=preprocess_logits_for_metrics)
    trainer.train()
    metrics = trainer.evaluate()
    print({k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)})


if __name__ == "__main__":
    main()
