"""R-Drop consistency training in a Trainer subclass: compute_loss runs the classifier twice on the same batch
(two dropout masks, so torch's random stream moves twice a step), adds a symmetric KL between the two
predictions to their mean cross-entropy, logs its parts every logging step through self.log from inside
compute_loss, and returns (loss, outputs) with extra keys (the second logits and the KL) when asked for outputs;
prediction_step's evaluation reads them. DataCollatorWithPadding, a BERT classifier, eval every 4 steps.

    python rdrop_extra_outputs.py BERT_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

MODEL, TRAIN, DEV, OUT = sys.argv[1:5]
ALPHA = 4.0
set_seed(8)


class RDropTrainer(Trainer):
    def __init__(self, *args, alpha: float = 1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.alpha = alpha
        self._parts = {"ce": 0.0, "kl": 0.0, "n": 0}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        first = model(**inputs)
        second = model(**inputs)
        ce = 0.5 * (F.cross_entropy(first.logits, labels) + F.cross_entropy(second.logits, labels))
        p, q = F.log_softmax(first.logits, -1), F.log_softmax(second.logits, -1)
        kl = 0.5 * (F.kl_div(p, q, log_target=True, reduction="batchmean")
                    + F.kl_div(q, p, log_target=True, reduction="batchmean"))
        loss = ce + self.alpha * kl
        if model.training:
            self._parts["ce"] += ce.item()
            self._parts["kl"] += kl.item()
            self._parts["n"] += 1
            if self.state.global_step % self.args.logging_steps == 0 and self._parts["n"]:
                n = self._parts.pop("n")
                self.log({k: v / n for k, v in self._parts.items()})
                self._parts = {"ce": 0.0, "kl": 0.0, "n": 0}
        outputs = {"logits": first.logits, "logits_second": second.logits, "kl": kl.detach()}
        return (loss, outputs) if return_outputs else loss


tokenizer = AutoTokenizer.from_pretrained(MODEL)
raw = load_dataset("csv", data_files={"train": TRAIN, "validation": DEV})
data = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])


def compute_metrics(p):
    logits = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
    return {"accuracy": float((np.argmax(logits, -1) == p.label_ids).mean())}


model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5, hidden_dropout_prob=0.2)
args = TrainingArguments(OUT, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8, logging_steps=1,
                         eval_strategy="steps", eval_steps=4, per_device_eval_batch_size=16, save_strategy="no",
                         report_to="none", seed=8)
trainer = RDropTrainer(model=model, args=args, train_dataset=data["train"], eval_dataset=data["validation"],
                       processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                       compute_metrics=compute_metrics, alpha=ALPHA)
trainer.train()
