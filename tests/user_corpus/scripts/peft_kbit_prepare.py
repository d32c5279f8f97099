"""The QLoRA recipe's model preparation without bitsandbytes' GPU kernels (a CPU machine, no quantization_config):
prepare_model_for_kbit_training(model, use_gradient_checkpointing=True) as QLoRA notebooks call it (it freezes the
base, casts non-quantized weights to fp32, enables input gradients and gradient checkpointing), then a LoRA on
"all-linear"; prompt/completion rows with the prompt masked to -100, DataCollatorForSeq2Seq, grad accum 4,
gradient_checkpointing=True also in TrainingArguments, paged-free plain AdamW.

    python peft_kbit_prepare.py QWEN3_DIR pc.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments,
                          set_seed)

model_dir, data_path, out_dir = sys.argv[1:4]
set_seed(17)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)
model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True,
                                        gradient_checkpointing_kwargs={"use_reentrant": False})
model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear",
                                         task_type="CAUSAL_LM"))
model.print_trainable_parameters()


def build(row):
    prompt = tokenizer(row["prompt"])["input_ids"]
    answer = tokenizer(row["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": prompt + answer, "labels": [-100] * len(prompt) + answer}


train = load_dataset("json", data_files=data_path, split="train").map(build, remove_columns=["prompt", "completion"])
args = TrainingArguments(out_dir, per_device_train_batch_size=2, gradient_accumulation_steps=4, learning_rate=2e-3,
                         max_steps=6, gradient_checkpointing=True,
                         gradient_checkpointing_kwargs={"use_reentrant": False}, logging_steps=1,
                         save_strategy="no", report_to="none", seed=17)
trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                  data_collator=DataCollatorForSeq2Seq(tokenizer, padding=True, label_pad_token_id=-100))
trainer.train()
