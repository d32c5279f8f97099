#!/usr/bin/env python
"""Continue pre-training a GPT-2 on a text file, written after transformers' examples/pytorch/language-modeling/
run_clm.py: HfArgumentParser dataclasses, load_dataset("text"), a validation split cut from train by
--validation_split_percentage, tokenize then group_texts into --block_size chunks (labels = input_ids),
default_data_collator (no padding: GPT-2's tokenizer has no pad token), perplexity after training.

    python run_clm_style.py --model_name_or_path GPT2_DIR --train_file text.txt --block_size 32 \
        --do_train --do_eval --per_device_train_batch_size 4 --max_steps 8 --logging_steps 1 \
        --output_dir out --report_to none --save_strategy no
"""
import logging
import math
import sys
from dataclasses import dataclass, field
from itertools import chain
from typing import Optional

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer, TrainingArguments,
                          default_data_collator, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None, metadata={"help": "The model checkpoint for weights."})
    torch_dtype: Optional[str] = field(default=None, metadata={"choices": ["auto", "bfloat16", "float16", "float32"]})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "The input training data file (a text file)."})
    validation_split_percentage: Optional[int] = field(default=10)
    block_size: Optional[int] = field(default=None, metadata={"help": "Input sequence length after tokenization."})
    preprocessing_num_workers: Optional[int] = field(default=None)
    keep_linebreaks: bool = field(default=True)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout)], level=logging.INFO)
    set_seed(training_args.seed)

    data_files = {"train": data_args.train_file}
    dataset_args = {"keep_linebreaks": data_args.keep_linebreaks}
    raw_datasets = load_dataset("text", data_files=data_files, **dataset_args)
    if "validation" not in raw_datasets.keys():
        raw_datasets["validation"] = load_dataset(
            "text", data_files=data_files, split=f"train[:{data_args.validation_split_percentage}%]", **dataset_args)
        raw_datasets["train"] = load_dataset(
            "text", data_files=data_files, split=f"train[{data_args.validation_split_percentage}%:]", **dataset_args)

    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, dtype=model_args.torch_dtype)
    embedding_size = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > embedding_size:
        model.resize_token_embeddings(len(tokenizer))

    column_names = list(raw_datasets["train"].features)
    text_column_name = "text" if "text" in column_names else column_names[0]

    def tokenize_function(examples):
        return tokenizer(examples[text_column_name])

    with training_args.main_process_first(desc="dataset map tokenization"):
        tokenized_datasets = raw_datasets.map(tokenize_function, batched=True,
                                              num_proc=data_args.preprocessing_num_workers,
                                              remove_columns=column_names, desc="Running tokenizer on dataset")

    block_size = min(data_args.block_size or 1024, tokenizer.model_max_length)

    # Main data processing function that will concatenate all texts from our dataset and generate chunks of
    # block_size.
    def group_texts(examples):
        concatenated_examples = {k: list(chain(*examples[k])) for k in examples.keys()}
        total_length = len(concatenated_examples[list(examples.keys())[0]])
        total_length = (total_length // block_size) * block_size
        result = {k: [t[i: i + block_size] for i in range(0, total_length, block_size)]
                  for k, t in concatenated_examples.items()}
        result["labels"] = result["input_ids"].copy()
        return result

    with training_args.main_process_first(desc="grouping texts together"):
        lm_datasets = tokenized_datasets.map(group_texts, batched=True, num_proc=data_args.preprocessing_num_workers,
                                             desc=f"Grouping texts in chunks of {block_size}")

    trainer = Trainer(model=model, args=training_args,
                      train_dataset=lm_datasets["train"] if training_args.do_train else None,
                      eval_dataset=lm_datasets["validation"] if training_args.do_eval else None,
                      processing_class=tokenizer, data_collator=default_data_collator)

    if training_args.do_train:
        train_result = trainer.train()
        metrics = train_result.metrics
        metrics["train_samples"] = len(lm_datasets["train"])
        trainer.log_metrics("train", metrics)

    if training_args.do_eval:
        metrics = trainer.evaluate()
        try:
            metrics["perplexity"] = math.exp(metrics["eval_loss"])
        except OverflowError:
            metrics["perplexity"] = float("inf")
        trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    main()
