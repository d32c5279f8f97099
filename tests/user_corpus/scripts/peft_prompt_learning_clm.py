"""PEFT's causal_language_modeling notebooks (peft_prompt_tuning_clm, peft_prefix_tuning_clm) moved onto the
Trainer, the method picked on the command line: PromptTuningConfig with TEXT init (8 virtual tokens prepended to
every row as input embeddings) or PrefixTuningConfig (30 virtual tokens as past_key_values in every layer); rows
built as "text : ... Label : <class>" with the prompt masked to -100, left-padded by hand to max_length (pad = the
tokenizer's pad, attention 0), default_data_collator, a high prompt-tuning learning rate.

    python peft_prompt_learning_clm.py prompt_tuning|prefix_tuning QWEN3_DIR cls_train.csv OUT
"""
import sys

from datasets import load_dataset
from peft import PrefixTuningConfig, PromptTuningConfig, PromptTuningInit, TaskType, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, default_data_collator,
                          set_seed)

method, model_name_or_path, csv_path, out_dir = sys.argv[1:5]
set_seed(11)
max_length = 48
classes = ["password", "invoice", "screen", "parcel", "rain"]
if method == "prefix_tuning":
    peft_config = PrefixTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=30)
else:
    peft_config = PromptTuningConfig(task_type=TaskType.CAUSAL_LM, prompt_tuning_init=PromptTuningInit.TEXT,
                                     num_virtual_tokens=8,
                                     prompt_tuning_init_text="please verify the price of my parcel",
                                     tokenizer_name_or_path=model_name_or_path)
tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
if tokenizer.pad_token_id is None:
    tokenizer.pad_token_id = tokenizer.eos_token_id


def preprocess_function(examples):
    batch_size = len(examples["text"])
    inputs = [f"text : {' '.join(x.split()[:30])} Label : " for x in examples["text"]]
    targets = [classes[y] for y in examples["label"]]
    model_inputs = tokenizer(inputs)
    labels = tokenizer(targets, add_special_tokens=False)
    for i in range(batch_size):
        sample_input_ids = model_inputs["input_ids"][i]
        label_input_ids = labels["input_ids"][i] + [tokenizer.eos_token_id]
        model_inputs["input_ids"][i] = sample_input_ids + label_input_ids
        labels["input_ids"][i] = [-100] * len(sample_input_ids) + label_input_ids
        model_inputs["attention_mask"][i] = [1] * len(model_inputs["input_ids"][i])
    for i in range(batch_size):
        sample_input_ids = model_inputs["input_ids"][i]
        label_input_ids = labels["input_ids"][i]
        pad = max_length - len(sample_input_ids)
        model_inputs["input_ids"][i] = ([tokenizer.pad_token_id] * pad + sample_input_ids)[:max_length]
        model_inputs["attention_mask"][i] = ([0] * pad + model_inputs["attention_mask"][i])[:max_length]
        labels["input_ids"][i] = ([-100] * pad + label_input_ids)[:max_length]
    model_inputs["labels"] = labels["input_ids"]
    return model_inputs


dataset = load_dataset("csv", data_files=csv_path, split="train")
train_dataset = dataset.map(preprocess_function, batched=True, remove_columns=dataset.column_names)

model = AutoModelForCausalLM.from_pretrained(model_name_or_path)
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()

args = TrainingArguments(out_dir, per_device_train_batch_size=8, learning_rate=3e-2, max_steps=8, logging_steps=1,
                         save_strategy="no", report_to="none", seed=11)
trainer = Trainer(model=model, args=args, train_dataset=train_dataset, data_collator=default_data_collator)
trainer.train()
