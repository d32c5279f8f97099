"""Curriculum learning with a Trainer subclass that overrides _get_train_sampler: the rows are served shortest
first (a SequentialSampler over a dataset sorted by length), the recipe forum threads give for "how do I stop the
Trainer shuffling". Lines of text tokenized for a causal LM, DataCollatorForLanguageModeling(mlm=False), grad
accum 2.

    python custom_sampler_subclass.py QWEN3_DIR text.txt OUT
"""
import sys

from datasets import load_dataset
from torch.utils.data import SequentialSampler
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)


class CurriculumTrainer(Trainer):
    def _get_train_sampler(self, train_dataset=None):
        return SequentialSampler(train_dataset if train_dataset is not None else self.train_dataset)


model_dir, text_file, out_dir = sys.argv[1:4]
set_seed(21)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("text", data_files=text_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
ds = ds.map(lambda r: {"length": len(r["input_ids"])}).sort("length").remove_columns("length")
print("shortest rows:", [len(ds[i]["input_ids"]) for i in range(4)], "longest:", len(ds[-1]["input_ids"]))

model = AutoModelForCausalLM.from_pretrained(model_dir)
args = TrainingArguments(out_dir, per_device_train_batch_size=8, gradient_accumulation_steps=2, max_steps=6,
                         learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none", seed=21)
trainer = CurriculumTrainer(model=model, args=args, train_dataset=ds,
                            data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
