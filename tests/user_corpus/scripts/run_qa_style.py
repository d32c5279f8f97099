"""Extractive question answering in examples/pytorch/question-answering/run_qa.py's style: question and context
tokenised as a pair with truncation="only_second", long contexts split into overlapping features (stride,
return_overflowing_tokens), offset_mapping turned into start_positions/end_positions labels (the [CLS] index
where the answer falls outside a feature), padding to max_length at map time, default_data_collator, and
AutoModelForQuestionAnswering (a BERT) whose loss averages the start and end cross-entropies.

    python run_qa_style.py --model_name_or_path BERT_DIR --train_file squad.jsonl --do_train --output_dir OUT ...
"""
import logging
from dataclasses import dataclass, field
from typing import Optional

from datasets import load_dataset
from transformers import (AutoModelForQuestionAnswering, AutoTokenizer, HfArgumentParser, Trainer,
                          TrainingArguments, default_data_collator, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None)
    max_seq_length: int = field(default=384)
    doc_stride: int = field(default=128)
    max_train_samples: Optional[int] = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    set_seed(training_args.seed)

    raw_datasets = load_dataset("json", data_files={"train": data_args.train_file})
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, use_fast=True)
    model = AutoModelForQuestionAnswering.from_pretrained(model_args.model_name_or_path)

    column_names = raw_datasets["train"].column_names
    question_column_name, context_column_name, answer_column_name = "question", "context", "answers"
    pad_on_right = tokenizer.padding_side == "right"
    max_seq_length = min(data_args.max_seq_length, tokenizer.model_max_length)

    def prepare_train_features(examples):
        examples[question_column_name] = [q.lstrip() for q in examples[question_column_name]]
        tokenized_examples = tokenizer(
            examples[question_column_name if pad_on_right else context_column_name],
            examples[context_column_name if pad_on_right else question_column_name],
            truncation="only_second" if pad_on_right else "only_first",
            max_length=max_seq_length,
            stride=data_args.doc_stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding="max_length",
        )
        sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
        offset_mapping = tokenized_examples.pop("offset_mapping")
        tokenized_examples["start_positions"] = []
        tokenized_examples["end_positions"] = []

        for i, offsets in enumerate(offset_mapping):
            input_ids = tokenized_examples["input_ids"][i]
            cls_index = input_ids.index(tokenizer.cls_token_id) if tokenizer.cls_token_id in input_ids else 0
            sequence_ids = tokenized_examples.sequence_ids(i)
            answers = examples[answer_column_name][sample_mapping[i]]
            if len(answers["answer_start"]) == 0:
                tokenized_examples["start_positions"].append(cls_index)
                tokenized_examples["end_positions"].append(cls_index)
                continue
            start_char = answers["answer_start"][0]
            end_char = start_char + len(answers["text"][0])
            token_start_index = 0
            while sequence_ids[token_start_index] != (1 if pad_on_right else 0):
                token_start_index += 1
            token_end_index = len(input_ids) - 1
            while sequence_ids[token_end_index] != (1 if pad_on_right else 0):
                token_end_index -= 1
            if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
                tokenized_examples["start_positions"].append(cls_index)
                tokenized_examples["end_positions"].append(cls_index)
            else:
                while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                    token_start_index += 1
                tokenized_examples["start_positions"].append(token_start_index - 1)
                while offsets[token_end_index][1] >= end_char:
                    token_end_index -= 1
                tokenized_examples["end_positions"].append(token_end_index + 1)
        return tokenized_examples

    train_dataset = raw_datasets["train"]
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(data_args.max_train_samples))
    with training_args.main_process_first(desc="train dataset map pre-processing"):
        train_dataset = train_dataset.map(prepare_train_features, batched=True, remove_columns=column_names,
                                          desc="Running tokenizer on train dataset")
    logger.warning("%d examples became %d features", len(raw_datasets["train"]), len(train_dataset))

    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset, processing_class=tokenizer,
                      data_collator=default_data_collator)
    train_result = trainer.train()
    trainer.log_metrics("train", train_result.metrics)
    trainer.save_state()


if __name__ == "__main__":
    main()
