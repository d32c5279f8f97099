"""A decoder classifier built from a Qwen3Config (random weights), evaluated during training on a fraction of the run
(eval_strategy="steps", eval_steps=0.5, eval_delay=2) with include_for_metrics=["inputs", "loss"]: compute_metrics
reads the eval inputs (mean length of the real tokens) and the per-batch losses; eval_do_concat_batches=False (the
predictions arrive as a list of batches), eval_accumulation_steps=2; trainer.predict() on the dev set with
metric_key_prefix="test" after training.

    python eval_inputs_metrics_cls.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from transformers import (AutoTokenizer, DataCollatorWithPadding, Qwen3Config, Qwen3ForSequenceClassification,
                          Trainer, TrainingArguments, set_seed)

tok_dir, train_csv, dev_csv, out_dir = sys.argv[1:5]
set_seed(21)
tokenizer = AutoTokenizer.from_pretrained(tok_dir)
raw = load_dataset("csv", data_files={"train": train_csv, "dev": dev_csv})
ds = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])

config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=128,
                     pad_token_id=tokenizer.pad_token_id, num_labels=5)
model = Qwen3ForSequenceClassification(config)


def compute_metrics(p):
    preds = p.predictions if isinstance(p.predictions, list) else [p.predictions]
    labels = p.label_ids if isinstance(p.label_ids, list) else [p.label_ids]
    inputs = p.inputs if isinstance(p.inputs, list) else [p.inputs]
    correct = sum(int((np.argmax(x, -1) == y).sum()) for x, y in zip(preds, labels))
    total = sum(len(y) for y in labels)
    real = [float((np.asarray(i) != tokenizer.pad_token_id).sum(-1).mean()) for i in inputs]
    losses = p.losses if isinstance(p.losses, list) else [p.losses]
    return {"accuracy": correct / total, "mean_real_len": float(np.mean(real)),
            "mean_batch_loss": float(np.mean([np.mean(l) for l in losses]))}


args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=8,
    max_steps=8,
    learning_rate=2e-3,
    eval_strategy="steps",
    eval_steps=0.5,
    eval_delay=2,
    include_for_metrics=["inputs", "loss"],
    eval_do_concat_batches=False,
    eval_accumulation_steps=2,
    logging_steps=2,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
    seed=21,
)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["dev"],
                  data_collator=DataCollatorWithPadding(tokenizer), processing_class=tokenizer,
                  compute_metrics=compute_metrics)
trainer.train()
out = trainer.predict(ds["dev"], metric_key_prefix="test")
print("predict", out.metrics)
print("evals", [{k: v for k, v in e.items() if k.startswith("eval_")} for e in trainer.state.log_history
                if "eval_loss" in e])
