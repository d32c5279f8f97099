"""TRL SFT with padding_free=True and no packing: each batch is the step's rows laid end to end in one sequence,
position_ids restarting at 0 for each (TRL's collator drops the attention mask), completion-only loss on
prompt/completion rows, LoRA through peft_config, the model passed as a path with its dtype in model_init_kwargs.

    python trl_padding_free_lora.py QWEN3_DIR pc.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

model_dir, data_file, out = sys.argv[1:4]
dataset = load_dataset("json", data_files=data_file, split="train")
config = SFTConfig(output_dir=out, padding_free=True, max_length=None, per_device_train_batch_size=8,
                   gradient_accumulation_steps=1, max_steps=6, learning_rate=2e-3, logging_steps=1,
                   model_init_kwargs={"dtype": "float32"}, save_strategy="no", report_to="none", bf16=False, seed=4)
trainer = SFTTrainer(model=model_dir, args=config, train_dataset=dataset,
                     peft_config=LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"))
trainer.train()
