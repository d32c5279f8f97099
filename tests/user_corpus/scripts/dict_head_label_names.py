"""A classifier of the user's own built from a LlamaConfig (random weights, no checkpoint): a PreTrainedModel holding
a LlamaModel and a linear head on the last real token, whose forward returns a plain dict {"logits": ...} with no
loss. The label column is called "target" (TrainingArguments(label_names=["target"])) and a Trainer subclass computes
the cross-entropy in compute_loss. prediction_loss_only=True; trainer.evaluate() before train() and trainer.predict()
after; grad accum 2; DataCollatorWithPadding.

    python dict_head_label_names.py QWEN3_DIR cls_train.csv cls_dev.csv OUT
"""
import sys

import torch
import torch.nn.functional as F
from datasets import load_dataset
from torch import nn
from transformers import (AutoTokenizer, DataCollatorWithPadding, LlamaConfig, LlamaModel, PreTrainedModel, Trainer,
                          TrainingArguments, set_seed)


class LastTokenClassifier(PreTrainedModel):
    config_class = LlamaConfig

    def __init__(self, config, num_classes=5):
        super().__init__(config)
        self.body = LlamaModel(config)
        self.head = nn.Linear(config.hidden_size, num_classes)
        self.post_init()

    def forward(self, input_ids, attention_mask=None):
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = attention_mask.sum(dim=1) - 1  # right padding
        pooled = hidden[torch.arange(hidden.size(0), device=hidden.device), last]
        return {"logits": self.head(pooled)}


class TargetTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        target = inputs.pop("target")
        outputs = model(**inputs)
        loss = F.cross_entropy(outputs["logits"], target)
        return (loss, outputs) if return_outputs else loss


model_dir, train_csv, dev_csv, out_dir = sys.argv[1:5]
set_seed(11)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
raw = load_dataset("csv", data_files={"train": train_csv, "dev": dev_csv})
raw = raw.rename_column("label", "target")
ds = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])

config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                     pad_token_id=tokenizer.pad_token_id)
model = LastTokenClassifier(config)

args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=16,
    gradient_accumulation_steps=2,
    max_steps=6,
    learning_rate=2e-3,
    label_names=["target"],
    prediction_loss_only=True,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
    seed=11,
)
trainer = TargetTrainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["dev"],
                        data_collator=DataCollatorWithPadding(tokenizer), processing_class=tokenizer)
before = trainer.evaluate()
print("eval before", before)
trainer.train()
pred = trainer.predict(ds["dev"])
print("predict", pred.metrics, "predictions", None if pred.predictions is None else type(pred.predictions))
