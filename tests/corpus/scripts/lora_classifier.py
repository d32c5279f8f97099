"""A LoRA classifier on a decoder LM, the way the field report's account classifier is written: HfArgumentParser,
the model from a checkpoint or built from a config with random weights (run_clm's --config_name), built on the GPU
when there is one, peft's get_peft_model with r=16 on every linear layer, rows tokenised without padding and
padded per batch by DataCollatorWithPadding. The GPU run (experiments/dropin) gives it Qwen3-4B's config.
    python lora_classifier.py --config_name DIR --tokenizer_name DIR --train_file cls.csv --output_dir out ..."""
from dataclasses import dataclass, field

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                          HfArgumentParser, Trainer, TrainingArguments, set_seed)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default=None)
    config_name: str = field(default=None, metadata={"help": "train from scratch: random weights of this config"})
    tokenizer_name: str = field(default=None)
    lora_r: int = field(default=16)


@dataclass
class DataArguments:
    train_file: str = field(default=None)
    max_seq_length: int = field(default=320)


def main():
    model_args, data_args, training_args = HfArgumentParser(
        (ModelArguments, DataArguments, TrainingArguments)).parse_args_into_dataclasses()
    set_seed(training_args.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    raw = load_dataset("csv", data_files={"train": data_args.train_file})["train"]
    num_labels = len(set(raw["label"]))
    dtype = torch.bfloat16 if training_args.bf16 else torch.float32
    if model_args.config_name:
        config = AutoConfig.from_pretrained(model_args.config_name, num_labels=num_labels)
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # a 4B random init on a CPU takes minutes
            model = AutoModelForSequenceClassification.from_config(config, dtype=dtype)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path,
                                                                   num_labels=num_labels, dtype=dtype)
    model.config.pad_token_id = tokenizer.pad_token_id
    model = get_peft_model(model, LoraConfig(task_type="SEQ_CLS", r=model_args.lora_r, lora_alpha=2 * model_args.lora_r,
                                             target_modules="all-linear"))
    train = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=data_args.max_seq_length),
                    batched=True, remove_columns=["text"])
    trainer = Trainer(model=model, args=training_args, train_dataset=train, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer))
    trainer.train()


if __name__ == "__main__":
    main()
