"""PEFT's sequence_classification notebooks (P_Tuning, Prompt_Tuning) on the Trainer, with a decoder classifier in
place of RoBERTa: one script, the method picked on the command line as the notebooks differ only in their config
(PromptEncoderConfig: p-tuning's MLP prompt encoder; PromptTuningConfig: virtual token embeddings; prefix tuning
needs past_key_values in the classifier's forward, which transformers' decoder classifiers don't take), task_type
SEQ_CLS (the `score` head trained too), rows tokenized without padding, DataCollatorWithPadding(padding="longest"),
a learning rate of 1e-2, grad accum 2.

    python peft_prompt_learning_cls.py --method p_tuning|prompt_tuning MODEL_DIR cls_train.csv OUT
"""
import argparse

from datasets import load_dataset
from peft import PromptEncoderConfig, PromptTuningConfig, TaskType, get_peft_model
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)

parser = argparse.ArgumentParser()
parser.add_argument("--method", choices=["p_tuning", "prompt_tuning"], required=True)
parser.add_argument("model_name_or_path")
parser.add_argument("train_file")
parser.add_argument("output_dir")
cli = parser.parse_args()
set_seed(5)

if cli.method == "p_tuning":
    peft_config = PromptEncoderConfig(task_type=TaskType.SEQ_CLS, num_virtual_tokens=10, encoder_hidden_size=32)
else:
    peft_config = PromptTuningConfig(task_type=TaskType.SEQ_CLS, num_virtual_tokens=10)
lr = 1e-2

padding_side = "left" if any(k in cli.model_name_or_path for k in ("gpt", "opt", "bloom")) else "right"
tokenizer = AutoTokenizer.from_pretrained(cli.model_name_or_path, padding_side=padding_side)
if getattr(tokenizer, "pad_token_id") is None:
    tokenizer.pad_token_id = tokenizer.eos_token_id

datasets = load_dataset("csv", data_files={"train": cli.train_file})


def tokenize_function(examples):
    return tokenizer(examples["text"], truncation=True, max_length=None)


tokenized_datasets = datasets.map(tokenize_function, batched=True, remove_columns=["text"])
tokenized_datasets = tokenized_datasets.rename_column("label", "labels")
data_collator = DataCollatorWithPadding(tokenizer=tokenizer, padding="longest")

model = AutoModelForSequenceClassification.from_pretrained(cli.model_name_or_path, num_labels=5)
model.config.pad_token_id = tokenizer.pad_token_id
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()

training_args = TrainingArguments(output_dir=cli.output_dir, learning_rate=lr, per_device_train_batch_size=8,
                                  gradient_accumulation_steps=2, max_steps=6, weight_decay=0.01, logging_steps=1,
                                  save_strategy="no", report_to="none", seed=5)
trainer = Trainer(model=model, args=training_args, train_dataset=tokenized_datasets["train"],
                  processing_class=tokenizer, data_collator=data_collator)
trainer.train()
