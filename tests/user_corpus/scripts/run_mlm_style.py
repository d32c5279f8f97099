"""Masked-LM pretraining in examples/pytorch/language-modeling/run_mlm.py's style, --line_by_line: each non-empty
line tokenised with return_special_tokens_mask=True, truncated to max_seq_length; DataCollatorForLanguageModeling
(mlm=True, mlm_probability=0.15) draws a new random mask for every batch, sets labels to -100 off the masked
positions and pads each batch; the model is a BertForMaskedLM read with AutoModelForMaskedLM. The evaluation
reports perplexity.

    python run_mlm_style.py --model_name_or_path BERT_DIR --train_file text.txt --line_by_line --do_train \
        --output_dir OUT ...
"""
import math
from dataclasses import dataclass, field
from typing import Optional

from datasets import load_dataset
from transformers import (AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling, HfArgumentParser,
                          Trainer, TrainingArguments, set_seed)


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None)


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None)
    validation_split_percentage: int = field(default=10)
    max_seq_length: Optional[int] = field(default=None)
    line_by_line: bool = field(default=False)
    mlm_probability: float = field(default=0.15)
    pad_to_max_length: bool = field(default=False)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    set_seed(training_args.seed)

    extension = data_args.train_file.split(".")[-1]
    extension = "text" if extension == "txt" else extension
    pct = data_args.validation_split_percentage
    raw_datasets = {
        "train": load_dataset(extension, data_files={"train": data_args.train_file}, split=f"train[{pct}%:]"),
        "validation": load_dataset(extension, data_files={"train": data_args.train_file}, split=f"train[:{pct}%]"),
    }
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(model_args.model_name_or_path)
    embedding_size = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > embedding_size:
        model.resize_token_embeddings(len(tokenizer))

    max_seq_length = min(data_args.max_seq_length or tokenizer.model_max_length, tokenizer.model_max_length)
    padding = "max_length" if data_args.pad_to_max_length else False
    text_column_name = "text"

    def tokenize_function(examples):
        examples[text_column_name] = [line for line in examples[text_column_name]
                                      if len(line) > 0 and not line.isspace()]
        return tokenizer(examples[text_column_name], padding=padding, truncation=True, max_length=max_seq_length,
                         return_special_tokens_mask=True)

    assert data_args.line_by_line, "this copy keeps only run_mlm's --line_by_line path"
    tokenized = {split: ds.map(tokenize_function, batched=True, remove_columns=[text_column_name],
                               desc="Running tokenizer on dataset line_by_line")
                 for split, ds in raw_datasets.items()}

    pad_to_multiple_of_8 = data_args.line_by_line and training_args.fp16 and not data_args.pad_to_max_length
    data_collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm_probability=data_args.mlm_probability,
                                                    pad_to_multiple_of=8 if pad_to_multiple_of_8 else None)

    trainer = Trainer(model=model, args=training_args,
                      train_dataset=tokenized["train"] if training_args.do_train else None,
                      eval_dataset=tokenized["validation"] if training_args.do_eval else None,
                      processing_class=tokenizer, data_collator=data_collator)
    if training_args.do_train:
        train_result = trainer.train()
        trainer.log_metrics("train", train_result.metrics)
    if training_args.do_eval:
        metrics = trainer.evaluate()
        metrics["perplexity"] = math.exp(metrics["eval_loss"]) if metrics["eval_loss"] < 50 else float("inf")
        trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    main()
