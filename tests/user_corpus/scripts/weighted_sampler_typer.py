"""Class-balanced sampling for an imbalanced classifier: a Trainer subclass overrides get_train_dataloader
outright and returns its own DataLoader with a torch WeightedRandomSampler (inverse class frequency, replacement,
a seeded generator), the batch size, collator and worker settings read back from the Trainer, the loader passed
through self.accelerator.prepare as forum answers advise. The data are made imbalanced on purpose (most rows of
classes 1-4 dropped). A typer command line (typed function parameters become options), a Qwen3 decoder classifier,
DataCollatorWithPadding, grad accum 2.

    python weighted_sampler_typer.py --model QWEN3_DIR --csv cls_train.csv --out OUT
"""
import collections

import torch
import typer
from datasets import load_dataset
from torch.utils.data import DataLoader, WeightedRandomSampler
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


class BalancedTrainer(Trainer):
    def __init__(self, *args, sample_weights=None, sampler_seed=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.sample_weights = torch.as_tensor(sample_weights, dtype=torch.double)
        self.sampler_seed = sampler_seed

    def get_train_dataloader(self):
        sampler = WeightedRandomSampler(self.sample_weights, num_samples=len(self.sample_weights), replacement=True,
                                        generator=torch.Generator().manual_seed(self.sampler_seed))
        loader = DataLoader(self.train_dataset, batch_size=self._train_batch_size, sampler=sampler,
                            collate_fn=self.data_collator, num_workers=self.args.dataloader_num_workers,
                            pin_memory=self.args.dataloader_pin_memory, drop_last=self.args.dataloader_drop_last)
        return self.accelerator.prepare(loader)


def main(model: str = typer.Option(...), csv: str = typer.Option(...), out: str = typer.Option(...),
         steps: int = 8, seed: int = 29, keep_minor: int = 6):
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model)
    ds = load_dataset("csv", data_files=csv, split="train")
    seen, keep = collections.Counter(), []
    for i, y in enumerate(ds["label"]):  # class 0 kept whole, the others down to keep_minor rows each
        seen[y] += 1
        if y == 0 or seen[y] <= keep_minor:
            keep.append(i)
    ds = ds.select(keep)
    counts = collections.Counter(ds["label"])
    typer.echo(f"class counts {dict(sorted(counts.items()))}")
    weights = [1.0 / counts[y] for y in ds["label"]]
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True,
                remove_columns=["text"])

    clf = AutoModelForSequenceClassification.from_pretrained(model, num_labels=5)
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                             learning_rate=1e-3, max_steps=steps, logging_steps=1, save_strategy="no",
                             report_to="none", seed=seed)
    trainer = BalancedTrainer(model=clf, args=args, train_dataset=ds, processing_class=tokenizer,
                              data_collator=DataCollatorWithPadding(tokenizer), sample_weights=weights,
                              sampler_seed=seed)
    trainer.train()


if __name__ == "__main__":
    typer.run(main)
