"""A reproducibility-minded classifier run: full_determinism=True, data_seed apart from seed,
accelerator_config={"split_batches": True, "even_batches": False}, skip_memory_metrics=False (the Trainer's memory
tracker reports its deltas in train()'s metrics), enable_jit_checkpoint=True (a SIGTERM handler that saves),
lr_scheduler_type="inverse_sqrt" with warmup_steps=0.2 (a ratio); decoder classifier (Qwen3 checkpoint, a new
score head), DataCollatorWithPadding(pad_to_multiple_of=8), grad accum 2.

    python determinism_split_batches_cls.py QWEN3_DIR short.csv OUT [MAX_STEPS]
"""
import os
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, enable_full_determinism)

model_dir, csv_file, out_dir = sys.argv[1:4]
max_steps = int(sys.argv[4]) if len(sys.argv) > 4 else 6
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("csv", data_files=csv_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])

args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    max_steps=max_steps,
    learning_rate=2e-3,
    lr_scheduler_type="inverse_sqrt",
    warmup_steps=0.2,
    full_determinism=True,
    seed=7,
    data_seed=1234,
    accelerator_config={"split_batches": True, "even_batches": False},
    skip_memory_metrics=False,
    enable_jit_checkpoint=True,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
)
enable_full_determinism(7)  # before the new score head is drawn
model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=3)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8), processing_class=tokenizer)
result = trainer.train()
print("stopped at step", trainer.state.global_step, "of", max_steps, "; checkpoints:",
      sorted(d for d in os.listdir(out_dir) if d.startswith("checkpoint")))
print({k: v for k, v in result.metrics.items() if "mem" in k or "samples" in k or "steps" in k})
