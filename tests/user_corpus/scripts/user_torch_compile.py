"""The user's own torch.compile through TrainingArguments: torch_compile=True with torch_compile_backend (the
Trainer compiles the whole model itself; "aot_eager" here so a CPU-only machine needs no C compiler, "inductor"
being the default on a GPU). Chat rows rendered with the tokenizer's chat template, labels = input_ids with the
padding masked by DataCollatorForLanguageModeling(mlm=False), a Qwen3 causal LM.

    python user_torch_compile.py QWEN3_DIR chat.jsonl OUT [BACKEND]
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

model_dir, data_file, out_dir = sys.argv[1:4]
backend = sys.argv[4] if len(sys.argv) > 4 else "aot_eager"
set_seed(13)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
ds = load_dataset("json", data_files=data_file, split="train")
ds = ds.map(lambda r: tokenizer(tokenizer.apply_chat_template(r["messages"], tokenize=False), truncation=True,
                                max_length=80), remove_columns=["messages"])
model = AutoModelForCausalLM.from_pretrained(model_dir)
args = TrainingArguments(out_dir, per_device_train_batch_size=8, max_steps=6, learning_rate=1e-3, logging_steps=1,
                         torch_compile=True, torch_compile_backend=backend, save_strategy="no", report_to="none",
                         seed=13)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
