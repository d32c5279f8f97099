#!/usr/bin/env python
"""Abstractive summarization with a BART checkpoint, cut down from transformers' examples/pytorch/summarization/
run_summarization.py: Seq2SeqTrainingArguments from the command line, --text_column/--summary_column, a
--source_prefix, tokenizer(text_target=...) for the labels, DataCollatorForSeq2Seq padding labels with -100 and
building decoder_input_ids from the model, Seq2SeqTrainer.

    python run_summarization_style.py --model_name_or_path BART_DIR --train_file sum.jsonl --output_dir out \
        --per_device_train_batch_size 4 --max_steps 8 --logging_steps 1 --report_to none --save_strategy no
"""
import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

from datasets import load_dataset
from transformers import (AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, HfArgumentParser,
                          Seq2SeqTrainer, Seq2SeqTrainingArguments, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None)
    text_column: Optional[str] = field(default="document")
    summary_column: Optional[str] = field(default="summary")
    max_source_length: Optional[int] = field(default=64)
    max_target_length: Optional[int] = field(default=16)
    pad_to_max_length: bool = field(default=False)
    ignore_pad_token_for_loss: bool = field(default=True)
    source_prefix: Optional[str] = field(default="")
    max_train_samples: Optional[int] = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(handlers=[logging.StreamHandler(sys.stdout)], level=logging.WARNING)
    set_seed(training_args.seed)

    raw_datasets = load_dataset("json", data_files={"train": data_args.train_file})
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path)
    if model.config.decoder_start_token_id is None:
        raise ValueError("Make sure that `config.decoder_start_token_id` is correctly defined")

    prefix = data_args.source_prefix if data_args.source_prefix is not None else ""
    column_names = raw_datasets["train"].column_names
    text_column, summary_column = data_args.text_column, data_args.summary_column
    max_target_length = data_args.max_target_length
    padding = "max_length" if data_args.pad_to_max_length else False

    def preprocess_function(examples):
        inputs, targets = [], []
        for i in range(len(examples[text_column])):
            if examples[text_column][i] and examples[summary_column][i]:
                inputs.append(examples[text_column][i])
                targets.append(examples[summary_column][i])
        inputs = [prefix + inp for inp in inputs]
        model_inputs = tokenizer(inputs, max_length=data_args.max_source_length, padding=padding, truncation=True)
        labels = tokenizer(text_target=targets, max_length=max_target_length, padding=padding, truncation=True)
        # If we are padding here, replace all tokenizer.pad_token_id in the labels by -100 when we want to ignore
        # padding in the loss.
        if padding == "max_length" and data_args.ignore_pad_token_for_loss:
            labels["input_ids"] = [[(l if l != tokenizer.pad_token_id else -100) for l in label]
                                   for label in labels["input_ids"]]
        model_inputs["labels"] = labels["input_ids"]
        return model_inputs

    train_dataset = raw_datasets["train"]
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples)))
    with training_args.main_process_first(desc="train dataset map pre-processing"):
        train_dataset = train_dataset.map(preprocess_function, batched=True, remove_columns=column_names,
                                          desc="Running tokenizer on train dataset")

    label_pad_token_id = -100 if data_args.ignore_pad_token_for_loss else tokenizer.pad_token_id
    data_collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=label_pad_token_id,
                                           pad_to_multiple_of=8 if training_args.fp16 else None)

    trainer = Seq2SeqTrainer(model=model, args=training_args, train_dataset=train_dataset,
                             processing_class=tokenizer, data_collator=data_collator)
    train_result = trainer.train()
    metrics = train_result.metrics
    metrics["train_samples"] = len(train_dataset)
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)


if __name__ == "__main__":
    main()
