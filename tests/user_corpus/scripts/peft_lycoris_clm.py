"""The LyCORIS-family and IA3 adapters of PEFT on a causal LM, the way PEFT's docs swap one config for another in
an otherwise unchanged LoRA script: LoHaConfig (Hadamard product of two low-rank pairs), LoKrConfig (Kronecker
product) or IA3Config (learned scaling vectors on k/v and the MLP's down projection, feedforward_modules saying which
scale the input), get_peft_model, text lines tokenized with truncation, DataCollatorForLanguageModeling(mlm=False),
grad accum 2.

    python peft_lycoris_clm.py --method loha|lokr|ia3 --model QWEN3_DIR --data text.txt --output_dir OUT
"""
import argparse

from datasets import load_dataset
from peft import IA3Config, LoHaConfig, LoKrConfig, TaskType, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

parser = argparse.ArgumentParser()
parser.add_argument("--method", choices=["loha", "lokr", "ia3"], default="loha")
parser.add_argument("--model", required=True)
parser.add_argument("--data", required=True)
parser.add_argument("--output_dir", required=True)
cli = parser.parse_args()
set_seed(21)

targets = ["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"]
configs = {
    "loha": LoHaConfig(task_type=TaskType.CAUSAL_LM, r=4, alpha=8, target_modules=targets, module_dropout=0.0),
    "lokr": LoKrConfig(task_type=TaskType.CAUSAL_LM, r=4, alpha=8, target_modules=targets, decompose_factor=-1),
    "ia3": IA3Config(task_type=TaskType.CAUSAL_LM, target_modules=["k_proj", "v_proj", "down_proj"],
                     feedforward_modules=["down_proj"]),
}
tokenizer = AutoTokenizer.from_pretrained(cli.model)
model = AutoModelForCausalLM.from_pretrained(cli.model)
model = get_peft_model(model, configs[cli.method])
model.print_trainable_parameters()

raw = load_dataset("text", data_files=cli.data, split="train")
train = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])
train = train.filter(lambda r: len(r["input_ids"]) > 1)

args = TrainingArguments(output_dir=cli.output_dir, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                         learning_rate=5e-3, max_steps=6, logging_steps=1, save_strategy="no", report_to="none",
                         seed=21)
trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                  data_collator=DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False))
trainer.train()
model.save_pretrained(cli.output_dir)
