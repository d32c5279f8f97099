"""Two CSVs tokenised on their own (the main set and the extra one), joined with torch.utils.data.ConcatDataset
rather than datasets.concatenate_datasets, then a torch Subset holding every row but the last 24 for training and
those 24 for evaluation. The "text" column stays in the rows (the Trainer's column-removing collator drops it,
since a ConcatDataset is not a datasets.Dataset), DataCollatorWithPadding, a decoder classifier, eval at the end.

    python concat_datasets_padding.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

import numpy as np
from datasets import load_dataset
from torch.utils.data import ConcatDataset, Subset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, MAIN, EXTRA, OUT = sys.argv[1:5]
set_seed(41)
tok = AutoTokenizer.from_pretrained(MODEL)


def load(path):
    ds = load_dataset("csv", data_files=path, split="train")
    return ds.map(lambda b: tok(b["text"], truncation=True, max_length=64), batched=True)


both = ConcatDataset([load(MAIN), load(EXTRA)])
order = np.random.default_rng(0).permutation(len(both)).tolist()
train_ds, eval_ds = Subset(both, order[:-24]), Subset(both, order[-24:])
print(f"train {len(train_ds)}, eval {len(eval_ds)}")


def accuracy(pred):
    return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
model.config.pad_token_id = tok.pad_token_id
args = TrainingArguments(OUT, per_device_train_batch_size=8, per_device_eval_batch_size=16, max_steps=8,
                         learning_rate=2e-3, logging_steps=1, eval_strategy="no", save_strategy="no",
                         report_to="none", seed=41)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds, processing_class=tok,
                  data_collator=DataCollatorWithPadding(tok), compute_metrics=accuracy)
trainer.train()
print(trainer.evaluate())
