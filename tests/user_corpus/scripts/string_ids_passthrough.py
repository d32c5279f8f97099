"""Hard-example mining: every row keeps its string id (the CSV's row number as "ex-00042"), remove_unused_columns
=False, and the collator wraps DataCollatorWithPadding, carrying the ids through as a plain Python list beside the
tensors. The Trainer subclass's compute_loss pops the ids, computes a per-example loss (reduction='none') and
keeps a running record of each id's loss, which the script writes to hardest.json after training. A decoder
classifier, datasets.Dataset from a CSV, grad accum 2.

    python string_ids_passthrough.py QWEN3_DIR cls_train.csv OUT
"""
import json
import os
import sys

import torch.nn.functional as F
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(17)

tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("csv", data_files=CSV, split="train")
ds = ds.map(lambda b, idx: {**tok(b["text"], truncation=True, max_length=64),
                            "example_id": [f"ex-{i:05d}" for i in idx]},
            batched=True, with_indices=True, remove_columns=["text"])


class CollatorWithIds:
    def __init__(self, tokenizer):
        self.pad = DataCollatorWithPadding(tokenizer)

    def __call__(self, features):
        ids = [f["example_id"] for f in features]
        batch = self.pad([{k: v for k, v in f.items() if k != "example_id"} for f in features])
        batch["example_id"] = ids
        return batch


class MiningTrainer(Trainer):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen_losses = {}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids = inputs.pop("example_id")
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        per_example = F.cross_entropy(outputs.logits, labels, reduction="none")
        if model.training:
            for i, value in zip(ids, per_example.detach().tolist()):
                self.seen_losses[i] = value
        loss = per_example.mean()
        return (loss, outputs) if return_outputs else loss


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
args = TrainingArguments(OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=6,
                         learning_rate=2e-3, logging_steps=1, save_strategy="no", report_to="none",
                         remove_unused_columns=False, seed=17)
trainer = MiningTrainer(model=model, args=args, train_dataset=ds, data_collator=CollatorWithIds(tok))
trainer.train()
hardest = sorted(trainer.seen_losses.items(), key=lambda kv: -kv[1])[:10]
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "hardest.json"), "w") as f:
    json.dump(hardest, f, indent=1)
print(f"{len(trainer.seen_losses)} examples seen; hardest {hardest[0]}")
