#!/usr/bin/env python
"""Fine-tune a BERT classifier on your own CSV files: the way transformers' examples/pytorch/text-classification/
run_glue.py is written and the way people trim it down (HfArgumentParser over three dataclasses, rows padded to
--max_seq_length at map time with --pad_to_max_length, default_data_collator, accuracy, evaluation after train).

    python run_glue_style.py --model_name_or_path BERT_DIR --train_file train.csv --validation_file dev.csv \
        --do_train --do_eval --max_seq_length 48 --per_device_train_batch_size 4 --gradient_accumulation_steps 2 \
        --max_steps 6 --logging_steps 1 --output_dir out --report_to none --save_strategy no
"""
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import datasets
import numpy as np
import transformers
from datasets import load_dataset
from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          EvalPrediction, HfArgumentParser, Trainer, TrainingArguments, default_data_collator,
                          set_seed)

logger = logging.getLogger(__name__)


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A csv or a json file with the training data."})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A csv or a json file for evaluation."})
    max_seq_length: int = field(default=128, metadata={"help": "Longer rows are truncated, shorter ones padded."})
    pad_to_max_length: bool = field(default=True, metadata={"help": "Pad every row to max_seq_length."})
    max_train_samples: Optional[int] = field(default=None)
    max_eval_samples: Optional[int] = field(default=None)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})
    tokenizer_name: Optional[str] = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)

    set_seed(training_args.seed)

    data_files = {"train": data_args.train_file, "validation": data_args.validation_file}
    extension = data_args.train_file.split(".")[-1]
    raw_datasets = load_dataset("csv" if extension == "csv" else "json", data_files=data_files)

    is_regression = raw_datasets["train"].features["label"].dtype in ["float32", "float64"]
    label_list = raw_datasets["train"].unique("label")
    label_list.sort()  # Let's sort it for determinism
    num_labels = 1 if is_regression else len(label_list)

    config = AutoConfig.from_pretrained(model_args.model_name_or_path, num_labels=num_labels)
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path, config=config)

    non_label_column_names = [name for name in raw_datasets["train"].column_names if name != "label"]
    sentence1_key, sentence2_key = (non_label_column_names + [None])[:2]
    padding = "max_length" if data_args.pad_to_max_length else False
    label_to_id = {v: i for i, v in enumerate(label_list)}
    model.config.label2id = label_to_id
    model.config.id2label = {id: label for label, id in config.label2id.items()}
    max_seq_length = min(data_args.max_seq_length, tokenizer.model_max_length)

    def preprocess_function(examples):
        args = (
            (examples[sentence1_key],) if sentence2_key is None else (examples[sentence1_key], examples[sentence2_key])
        )
        result = tokenizer(*args, padding=padding, max_length=max_seq_length, truncation=True)
        if label_to_id is not None and "label" in examples:
            result["label"] = [(label_to_id[l] if l != -1 else -1) for l in examples["label"]]
        return result

    with training_args.main_process_first(desc="dataset map pre-processing"):
        raw_datasets = raw_datasets.map(preprocess_function, batched=True, desc="Running tokenizer on dataset")
    train_dataset = raw_datasets["train"]
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples)))
    eval_dataset = raw_datasets["validation"]
    if data_args.max_eval_samples is not None:
        eval_dataset = eval_dataset.select(range(min(len(eval_dataset), data_args.max_eval_samples)))

    def compute_metrics(p: EvalPrediction):
        preds = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
        preds = np.squeeze(preds) if is_regression else np.argmax(preds, axis=1)
        return {"accuracy": (preds == p.label_ids).astype(np.float32).mean().item()}

    # Data collator will default to DataCollatorWithPadding when the tokenizer is passed to Trainer, so we change
    # it if we already did the padding.
    if data_args.pad_to_max_length:
        data_collator = default_data_collator
    elif training_args.fp16:
        data_collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    else:
        data_collator = None

    trainer = Trainer(model=model, args=training_args,
                      train_dataset=train_dataset if training_args.do_train else None,
                      eval_dataset=eval_dataset if training_args.do_eval else None,
                      compute_metrics=compute_metrics, processing_class=tokenizer, data_collator=data_collator)

    if training_args.do_train:
        train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        metrics = train_result.metrics
        metrics["train_samples"] = len(train_dataset)
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)

    if training_args.do_eval:
        logger.info("*** Evaluate ***")
        metrics = trainer.evaluate(eval_dataset=eval_dataset)
        metrics["eval_samples"] = len(eval_dataset)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)


if __name__ == "__main__":
    main()
