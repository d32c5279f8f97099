"""An optimizer picked by class, not by name: Trainer(optimizer_cls_and_kwargs=(torch.optim.RAdam, {...})), the
constructor argument newer transformers has for "any torch optimizer, the Trainer's own parameter groups". The
learning rate lives ONLY in the kwargs (lr=3e-3): TrainingArguments.learning_rate stays at its default (5e-5), which
the Trainer then never uses (the scheduler scales the optimizer's own rate). weight_decay=0.05 in TrainingArguments
still splits the groups (no decay on biases and norms). The polynomial schedule with lr_scheduler_kwargs (power 2,
lr_end), dataloader_drop_last=True, a click command line (options with defaults, a --seed), a Qwen3 decoder
classifier on ragged rows padded by DataCollatorWithPadding.

    python optimizer_cls_kwargs_click.py --model QWEN3_DIR --train-csv cls_train.csv --output-dir OUT
"""
import click
import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


@click.command()
@click.option("--model", "model_dir", required=True, help="checkpoint folder")
@click.option("--train-csv", required=True, type=click.Path(exists=True))
@click.option("--output-dir", required=True)
@click.option("--lr", default=3e-3, show_default=True, help="RAdam's learning rate")
@click.option("--steps", default=10, show_default=True)
@click.option("--batch-size", default=8, show_default=True)
@click.option("--seed", default=1234, show_default=True)
def train(model_dir, train_csv, output_dir, lr, steps, batch_size, seed):
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    data = load_dataset("csv", data_files=train_csv, split="train")
    data = data.map(lambda rows: tokenizer(rows["text"], truncation=True, max_length=64), batched=True,
                    remove_columns=["text"])
    click.echo(f"{len(data)} rows, {data.features['label']}")

    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=5)
    args = TrainingArguments(output_dir=output_dir, per_device_train_batch_size=batch_size, max_steps=steps,
                             weight_decay=0.05, lr_scheduler_type="polynomial",
                             lr_scheduler_kwargs={"power": 2.0, "lr_end": 1e-5}, warmup_steps=2,
                             dataloader_drop_last=True, logging_steps=1, save_strategy="no", report_to="none",
                             seed=seed)
    trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer),
                      optimizer_cls_and_kwargs=(torch.optim.RAdam,
                                                {"lr": lr, "betas": (0.9, 0.99), "decoupled_weight_decay": True}))
    result = trainer.train()
    click.echo(f"optimizer {type(getattr(trainer.optimizer, 'optimizer', trainer.optimizer)).__name__}, groups "
               f"{[g['weight_decay'] for g in trainer.optimizer.param_groups]}, last lr "
               f"{trainer.lr_scheduler.get_last_lr()[0]:.2e}, train loss {result.training_loss:.4f}")


if __name__ == "__main__":
    train()
