"""Teaching a base model a chat format of one's own, the Kaggle/blog way: new special tokens (a [PAD] and role
markers) added to a Llama tokenizer that has no pad, resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8)
(so the embedding holds more rows than the tokenizer has ids), then LoRA with modules_to_save=["embed_tokens",
"lm_head"] so the new rows are trained in full copies. Rows built by hand with the user turn masked to -100, padded
by DataCollatorForSeq2Seq; gradient accumulation 2.

    python added_tokens_resize_lora.py LLAMA_DIR chat.jsonl OUT
"""
import argparse

from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

parser = argparse.ArgumentParser()
parser.add_argument("model_path")
parser.add_argument("data_file")
parser.add_argument("output_dir")
args = parser.parse_args()
set_seed(5)

tokenizer = AutoTokenizer.from_pretrained(args.model_path)
num_added = tokenizer.add_special_tokens({"pad_token": "[PAD]",
                                          "additional_special_tokens": ["<|user|>", "<|assistant|>"]})
print(f"added {num_added} tokens, vocabulary now {len(tokenizer)}")

model = AutoModelForCausalLM.from_pretrained(args.model_path)
model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8)
model.config.pad_token_id = tokenizer.pad_token_id

config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                    modules_to_save=["embed_tokens", "lm_head"], task_type="CAUSAL_LM")
model = get_peft_model(model, config)
model.print_trainable_parameters()


def build(example):
    user, reply = example["messages"][0]["content"], example["messages"][1]["content"]
    prompt_ids = tokenizer(f"<|user|> {user} <|assistant|>")["input_ids"]
    reply_ids = tokenizer(f" {reply}", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    input_ids = (prompt_ids + reply_ids)[:80]
    labels = ([-100] * len(prompt_ids) + reply_ids)[:80]
    return {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "labels": labels}


data = load_dataset("json", data_files=args.data_file, split="train")
data = data.map(build, remove_columns=data.column_names)

trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir=args.output_dir, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                           max_steps=6, learning_rate=3e-3, warmup_steps=1, logging_steps=1, save_strategy="no",
                           report_to="none", seed=5),
    train_dataset=data,
    data_collator=DataCollatorForSeq2Seq(tokenizer, padding=True, label_pad_token_id=-100),
)
trainer.train()
model.save_pretrained(f"{args.output_dir}/adapter")
tokenizer.save_pretrained(f"{args.output_dir}/adapter")
