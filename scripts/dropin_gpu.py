"""A user's plain HF Trainer script on a GPU, with or without trainsweep's two added lines (`attach`): does the
drop-in measure a real card's step, and what does it cost there? Qwen3-4B width, 4 layers, random weights, bf16,
sdpa, bs 16, made-up rows of ~211 tokens (account-tax lengths), 60 steps. scripts/gpu_dropin.sh runs it.
    python3 scripts/dropin_gpu.py OUT_DIR plain|attached   # one JSON line: Trainer runtime, the report's figures
"""
import json
import sys
import time

import torch
from datasets import Dataset
from transformers import (DataCollatorWithPadding, Qwen3Config, Qwen3ForSequenceClassification, Trainer,
                          TrainingArguments, set_seed)

from dropin_common import attach, report_fields  # scripts/, beside this file

out, mode = sys.argv[1], sys.argv[2]
set_seed(0)
g = torch.Generator().manual_seed(0)
lengths = torch.normal(211.0, 30.0, (4096,), generator=g).clamp(40, 287).long().tolist()
ids = [torch.randint(3, 8000, (n,), generator=g).tolist() for n in lengths]
data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * n for n in lengths],
                          "label": [i % 280 for i in range(len(ids))]})


class Tok:  # what DataCollatorWithPadding needs of a tokenizer: pad()
    pad_token_id, padding_side, model_input_names = 0, "right", ["input_ids", "attention_mask"]

    def pad(self, features, padding=True, max_length=None, pad_to_multiple_of=None, return_tensors="pt", **kw):
        n = max(len(f["input_ids"]) for f in features)
        batch = {k: torch.tensor([f[k] + [0] * (n - len(f[k])) for f in features])
                 for k in ("input_ids", "attention_mask")}
        batch["labels"] = torch.tensor([f["label"] for f in features])
        return batch


model = Qwen3ForSequenceClassification(Qwen3Config(
    vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=4, num_attention_heads=32,
    num_key_value_heads=8, head_dim=128, num_labels=280, pad_token_id=0, tie_word_embeddings=True,
    attn_implementation="sdpa", torch_dtype=torch.bfloat16)).to(torch.bfloat16)
args = TrainingArguments(output_dir=out, max_steps=60, per_device_train_batch_size=16, learning_rate=1e-4, bf16=True,
                         logging_steps=10, report_to=[], save_strategy="no", seed=0)
trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=DataCollatorWithPadding(Tok()))
if mode == "attached":
    attach(trainer)
t0 = time.perf_counter()
result = trainer.train()
line = {"mode": mode, "wall_s": round(time.perf_counter() - t0, 2), "gpu": torch.cuda.get_device_name(),
        "train_runtime": result.metrics["train_runtime"], "samples_per_s": result.metrics["train_samples_per_second"],
        "train_loss": round(result.training_loss, 4)}
if mode == "attached":
    line |= report_fields(out)
print(json.dumps(line), flush=True)
