"""Multiple choice in examples/pytorch/multiple-choice/run_swag.py's style: a context (sent1) paired with the
question header (sent2) and each of four endings, tokenised flat and un-flattened back to four choices a row, so
input_ids are [batch, 4, seq]; DataCollatorForMultipleChoice pads every choice of a batch to one width;
AutoModelForMultipleChoice (a BERT) scores the choices and its loss is a 4-way cross-entropy.

    python run_swag_style.py --model_name_or_path BERT_DIR --train_file swag.csv --do_train --output_dir OUT ...
"""
import logging
import sys
from dataclasses import dataclass, field
from itertools import chain
from typing import Optional

import numpy as np
from datasets import load_dataset
from transformers import (AutoConfig, AutoModelForMultipleChoice, AutoTokenizer, DataCollatorForMultipleChoice,
                          HfArgumentParser, Trainer, TrainingArguments, default_data_collator, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None)
    validation_file: Optional[str] = field(default=None)
    max_seq_length: Optional[int] = field(default=None)
    pad_to_max_length: bool = field(default=False)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.WARNING,
                        handlers=[logging.StreamHandler(sys.stdout)])
    set_seed(training_args.seed)

    data_files = {"train": data_args.train_file}
    if data_args.validation_file is not None:
        data_files["validation"] = data_args.validation_file
    raw_datasets = load_dataset(data_args.train_file.split(".")[-1], data_files=data_files)

    config = AutoConfig.from_pretrained(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, use_fast=True)
    model = AutoModelForMultipleChoice.from_pretrained(model_args.model_name_or_path, config=config)

    ending_names = [f"ending{i}" for i in range(4)]
    context_name, question_header_name = "sent1", "sent2"
    max_seq_length = min(data_args.max_seq_length or 1024, tokenizer.model_max_length)

    def preprocess_function(examples):
        first_sentences = [[context] * 4 for context in examples[context_name]]
        question_headers = examples[question_header_name]
        second_sentences = [[f"{header} {examples[end][i]}" for end in ending_names]
                            for i, header in enumerate(question_headers)]
        first_sentences = list(chain(*first_sentences))
        second_sentences = list(chain(*second_sentences))
        tokenized = tokenizer(first_sentences, second_sentences, truncation=True, max_length=max_seq_length,
                              padding="max_length" if data_args.pad_to_max_length else False)
        return {k: [v[i:i + 4] for i in range(0, len(v), 4)] for k, v in tokenized.items()}

    train_dataset = raw_datasets["train"].map(preprocess_function, batched=True)
    eval_dataset = raw_datasets["validation"].map(preprocess_function, batched=True) \
        if "validation" in raw_datasets else None

    data_collator = (default_data_collator if data_args.pad_to_max_length
                     else DataCollatorForMultipleChoice(tokenizer=tokenizer,
                                                        pad_to_multiple_of=8 if training_args.fp16 else None))

    def compute_metrics(eval_predictions):
        predictions, label_ids = eval_predictions
        return {"accuracy": (np.argmax(predictions, axis=1) == label_ids).astype(np.float32).mean().item()}

    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset if training_args.do_train else None,
                      eval_dataset=eval_dataset if training_args.do_eval else None, processing_class=tokenizer,
                      data_collator=data_collator, compute_metrics=compute_metrics)
    if training_args.do_train:
        train_result = trainer.train()
        metrics = train_result.metrics
        metrics["train_samples"] = len(train_dataset)
        trainer.log_metrics("train", metrics)
    if training_args.do_eval:
        trainer.log_metrics("eval", trainer.evaluate())


if __name__ == "__main__":
    main()
