"""Alpaca-LoRA style instruction tuning (tloen/alpaca-lora's finetune.py, peft's examples/olora_finetuning): a
Llama checkpoint whose tokenizer has no pad token, so `tokenizer.pad_token_id = 0` (unk) and left padding; the
Alpaca prompt template; prompt tokens masked to -100 when train_on_inputs is False; eos appended by hand;
get_peft_model with a LoraConfig on q_proj/v_proj; DataCollatorForSeq2Seq(pad_to_multiple_of=8); a train() with
keyword defaults called from argparse.

    python peft_alpaca_lora.py --base_model LLAMA_DIR --data_path alpaca.json --output_dir OUT
"""
import argparse

import torch
import transformers
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer


def generate_prompt(instruction, input=None, label=None):
    if input:
        res = ("Below is an instruction that describes a task, paired with an input that provides further context. "
               f"Write a response that appropriately completes the request.\n\n### Instruction:\n{instruction}\n\n"
               f"### Input:\n{input}\n\n### Response:\n")
    else:
        res = ("Below is an instruction that describes a task. Write a response that appropriately completes the "
               f"request.\n\n### Instruction:\n{instruction}\n\n### Response:\n")
    if label:
        res = f"{res}{label}"
    return res


def train(
    base_model: str = "",
    data_path: str = "yahma/alpaca-cleaned",
    output_dir: str = "./lora-alpaca",
    batch_size: int = 8,
    micro_batch_size: int = 4,
    max_steps: int = 6,
    learning_rate: float = 3e-3,
    cutoff_len: int = 96,
    val_set_size: int = 16,
    lora_r: int = 8,
    lora_alpha: int = 16,
    lora_dropout: float = 0.05,
    lora_target_modules=("q_proj", "v_proj"),
    train_on_inputs: bool = False,
    add_eos_token: bool = True,
    group_by_length: bool = False,
    seed: int = 42,
):
    gradient_accumulation_steps = batch_size // micro_batch_size
    transformers.set_seed(seed)

    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    tokenizer.pad_token_id = 0  # unk. we want this to be different from the eos token
    tokenizer.padding_side = "left"  # Allow batched inference

    def tokenize(prompt, add_eos_token=True):
        result = tokenizer(prompt, truncation=True, max_length=cutoff_len, padding=False, return_tensors=None)
        if (result["input_ids"][-1] != tokenizer.eos_token_id and len(result["input_ids"]) < cutoff_len
                and add_eos_token):
            result["input_ids"].append(tokenizer.eos_token_id)
            result["attention_mask"].append(1)
        result["labels"] = result["input_ids"].copy()
        return result

    def generate_and_tokenize_prompt(data_point):
        full_prompt = generate_prompt(data_point["instruction"], data_point["input"], data_point["output"])
        tokenized_full_prompt = tokenize(full_prompt)
        if not train_on_inputs:
            user_prompt = generate_prompt(data_point["instruction"], data_point["input"])
            tokenized_user_prompt = tokenize(user_prompt, add_eos_token=add_eos_token)
            user_prompt_len = len(tokenized_user_prompt["input_ids"])
            if add_eos_token:
                user_prompt_len -= 1
            tokenized_full_prompt["labels"] = ([-100] * user_prompt_len
                                               + tokenized_full_prompt["labels"][user_prompt_len:])
        return tokenized_full_prompt

    config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, target_modules=list(lora_target_modules),
                        lora_dropout=lora_dropout, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(model, config)
    model.print_trainable_parameters()

    data = load_dataset("json", data_files=data_path)
    train_val = data["train"].train_test_split(test_size=val_set_size, shuffle=True, seed=42)
    train_data = train_val["train"].shuffle(seed=seed).map(generate_and_tokenize_prompt)
    val_data = train_val["test"].shuffle(seed=seed).map(generate_and_tokenize_prompt)

    trainer = transformers.Trainer(
        model=model,
        train_dataset=train_data,
        eval_dataset=val_data,
        args=transformers.TrainingArguments(
            per_device_train_batch_size=micro_batch_size,
            gradient_accumulation_steps=gradient_accumulation_steps,
            warmup_steps=1,
            max_steps=max_steps,
            learning_rate=learning_rate,
            logging_steps=1,
            optim="adamw_torch",
            eval_strategy="no",
            save_strategy="no",
            output_dir=output_dir,
            train_sampling_strategy="group_by_length" if group_by_length else "random",  # transformers 5
            report_to="none",
            seed=seed,
        ),
        data_collator=transformers.DataCollatorForSeq2Seq(tokenizer, pad_to_multiple_of=8, return_tensors="pt",
                                                          padding=True),
    )
    model.config.use_cache = False
    trainer.train()
    model.save_pretrained(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base_model", type=str, required=True)
    parser.add_argument("--data_path", type=str, required=True)
    parser.add_argument("--output_dir", type=str, default="./lora-alpaca")
    parser.add_argument("--max_steps", type=int, default=6)
    parser.add_argument("--train_on_inputs", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    train(**vars(args))
