"""run_glue style (transformers/examples/pytorch/text-classification): HfArgumentParser over dataclasses, rows
padded to --max_seq_length when tokenised (--pad_to_max_length, the example's default), a BERT classifier,
gradient accumulation, evaluation after training.
    python glue_style.py --model_name_or_path BERT --train_file cls.csv --output_dir out"""
import sys
from dataclasses import dataclass, field

import numpy as np
from datasets import load_dataset
from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, HfArgumentParser, Trainer,
                          TrainingArguments, default_data_collator, set_seed)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "checkpoint"})


@dataclass
class DataArguments:
    train_file: str = field(default=None)
    max_seq_length: int = field(default=32)
    pad_to_max_length: bool = field(default=True)


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    set_seed(training_args.seed)
    raw = load_dataset("csv", data_files={"train": data_args.train_file})
    labels = sorted(set(raw["train"]["label"]))
    config = AutoConfig.from_pretrained(model_args.model_name_or_path, num_labels=len(labels), finetuning_task="cls")
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path, config=config)
    padding = "max_length" if data_args.pad_to_max_length else False

    def preprocess(examples):
        result = tokenizer(examples["text"], padding=padding, max_length=data_args.max_seq_length, truncation=True)
        result["label"] = examples["label"]
        return result

    train = raw["train"].map(preprocess, batched=True, remove_columns=["text"])
    split = train.train_test_split(test_size=0.1, seed=0)

    def compute_metrics(p):
        return {"accuracy": float((np.argmax(p.predictions, axis=1) == p.label_ids).mean())}

    trainer = Trainer(model=model, args=training_args, train_dataset=split["train"], eval_dataset=split["test"],
                      processing_class=tokenizer, data_collator=default_data_collator, compute_metrics=compute_metrics)
    result = trainer.train()
    trainer.log_metrics("train", result.metrics)
    metrics = trainer.evaluate()
    trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    sys.exit(main())
