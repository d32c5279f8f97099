"""Prompt/completion SFT done by hand: Dataset.from_generator yields rows tokenised in the generator (the prompt's
labels set to -100, the completion's kept, eos appended) and a length column of the script's own, "n_tok";
train_sampling_strategy="batch_rebalance" reads it (length_column_name="n_tok"); num_train_epochs=0.7 (a fraction
under one epoch, no max_steps) with dataloader_drop_last=True; DataCollatorForSeq2Seq(label_pad_token_id=-100,
pad_to_multiple_of=4) on a causal LM (Qwen3 checkpoint); remove_unused_columns=True drops n_tok before the collator.

    python generator_rebalance_sft.py QWEN3_DIR pc.jsonl OUT
"""
import json
import sys

from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

model_dir, jsonl, out_dir = sys.argv[1:4]
set_seed(9)
tokenizer = AutoTokenizer.from_pretrained(model_dir)


def rows(path):
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            p = tokenizer(r["prompt"], add_special_tokens=False)["input_ids"]
            c = tokenizer(" " + r["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            ids = (p + c)[:80]
            labels = ([-100] * len(p) + c)[:80]
            yield {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels, "n_tok": len(ids)}


ds = Dataset.from_generator(rows, gen_kwargs={"path": jsonl})
model = AutoModelForCausalLM.from_pretrained(model_dir)
args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=6,
    gradient_accumulation_steps=2,
    num_train_epochs=0.7,
    dataloader_drop_last=True,
    train_sampling_strategy="batch_rebalance",
    length_column_name="n_tok",
    learning_rate=1e-3,
    lr_scheduler_type="cosine",
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
    seed=9,
)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100, pad_to_multiple_of=4),
                  processing_class=tokenizer)
result = trainer.train()
print("steps", trainer.state.global_step, "epoch", trainer.state.epoch, "rows", len(ds))
