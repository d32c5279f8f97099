"""Chat SFT trained on the assistant's turns only, as TRL 1.x spells it: SFTConfig(assistant_only_loss=True) on
{"messages": [...]} rows, with the script's own ChatML template carrying {% generation %} markers (TRL needs them to
build the assistant mask; the stop token <|im_end|> sits inside them so the model learns to stop), the tokenizer
and a LoRA-free model handed in, eos_token set to the template's stop token.

    python trl_assistant_only_loss.py QWEN3_DIR chat.jsonl OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

model_dir, data_file, out_dir = sys.argv[1:4]
torch.manual_seed(5)

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "<|im_start|>assistant\n{% generation %}{{ message['content'] }}<|im_end|>{% endgeneration %}\n"
    "{% else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

tokenizer = AutoTokenizer.from_pretrained(model_dir)
tokenizer.chat_template = CHAT_TEMPLATE
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
dataset = load_dataset("json", data_files=data_file, split="train")

args = SFTConfig(
    output_dir=out_dir,
    assistant_only_loss=True,
    eos_token="<|im_end|>",
    max_length=96,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    learning_rate=2e-3,
    lr_scheduler_type="constant_with_warmup",
    warmup_steps=2,
    max_steps=8,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    bf16=False,
    seed=5,
)
trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
trainer.train()
