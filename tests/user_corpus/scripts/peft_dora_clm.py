"""PEFT's dora_finetuning/dora_finetuning.py shape: LoraConfig(use_dora=True) on every attention and MLP projection
(DoRA's magnitude vector and normalised weight in each linear's forward), tokenizer.pad_token = eos, rows padded to
max_length at map time with labels = a copy of input_ids (which DataCollatorForLanguageModeling replaces, pad = eos
ids set to -100), each text ending in the eos token; the Trainer gets no tokenizer (processing_class unset), only
the collator holds it.

    python peft_dora_clm.py --base_model LLAMA_DIR --data_path text.txt --output_dir OUT
"""
import argparse

from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)


def train_model(base_model, data_path, output_dir, batch_size, learning_rate, cutoff_len, use_dora, lora_r):
    set_seed(4)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForCausalLM.from_pretrained(base_model)
    lora_config = LoraConfig(use_dora=use_dora, r=lora_r, lora_alpha=2 * lora_r,
                             target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                             "down_proj"], lora_dropout=0.0, bias="none")
    model = get_peft_model(model, lora_config)
    tokenizer.pad_token = tokenizer.eos_token

    dataset = load_dataset("text", data_files={"train": data_path})

    def tokenize_function(examples):
        texts = [t + tokenizer.eos_token for t in examples["text"]]
        inputs = tokenizer(texts, padding="max_length", truncation=True, max_length=cutoff_len)
        inputs["labels"] = inputs["input_ids"].copy()
        return inputs

    tokenized_datasets = dataset.map(tokenize_function, batched=True, remove_columns=dataset["train"].column_names)
    data_collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    training_args = TrainingArguments(output_dir=output_dir, max_steps=6, per_device_train_batch_size=batch_size,
                                      gradient_accumulation_steps=2, warmup_steps=1, weight_decay=0.01,
                                      logging_steps=1, save_strategy="no", learning_rate=learning_rate,
                                      report_to="none", seed=4)
    trainer = Trainer(model=model, args=training_args, train_dataset=tokenized_datasets["train"],
                      data_collator=data_collator)
    trainer.train()
    model.save_pretrained(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Fine-tune with DoRA and PEFT")
    parser.add_argument("--base_model", type=str, required=True)
    parser.add_argument("--data_path", type=str, required=True)
    parser.add_argument("--output_dir", type=str, required=True)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    parser.add_argument("--cutoff_len", type=int, default=64)
    parser.add_argument("--use_dora", action="store_true")
    parser.add_argument("--lora_r", type=int, default=8)
    a = parser.parse_args()
    train_model(a.base_model, a.data_path, a.output_dir, a.batch_size, a.learning_rate, a.cutoff_len, a.use_dora,
                a.lora_r)
