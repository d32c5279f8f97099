"""Evaluation during training with early stopping, as in the Trainer docs and countless tutorials: eval and save
every 2 steps, load_best_model_at_end with metric_for_best_model="accuracy", EarlyStoppingCallback(patience 2),
save_total_limit=2 (checkpoints really written to output_dir), a validation CSV, compute_metrics with
evaluate-free numpy accuracy, Qwen3 classifier.

    python eval_early_stopping.py --model QWEN3_DIR --train cls_train.csv --valid cls_dev.csv --out OUT
"""
import argparse

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          EarlyStoppingCallback, Trainer, TrainingArguments, set_seed)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--valid", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--patience", type=int, default=2)
    return p.parse_args()


def main():
    a = parse()
    set_seed(17)
    tokenizer = AutoTokenizer.from_pretrained(a.model)
    data = load_dataset("csv", data_files={"train": a.train, "validation": a.valid})
    data = data.map(lambda batch: tokenizer(batch["text"], truncation=True, max_length=64), batched=True)

    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}

    model = AutoModelForSequenceClassification.from_pretrained(a.model, num_labels=5)
    args = TrainingArguments(
        output_dir=a.out,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="steps",
        save_steps=2,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model="accuracy",
        greater_is_better=True,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=20,
        learning_rate=2e-3,
        max_steps=12,
        logging_steps=1,
        report_to="none",
        seed=17,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data["train"], eval_dataset=data["validation"],
                      processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                      compute_metrics=compute_metrics,
                      callbacks=[EarlyStoppingCallback(early_stopping_patience=a.patience)])
    trainer.train()
    print("best checkpoint:", trainer.state.best_model_checkpoint, trainer.state.best_metric)


if __name__ == "__main__":
    main()
