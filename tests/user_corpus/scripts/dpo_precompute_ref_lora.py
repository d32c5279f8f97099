"""DPO from a script of the user's own rather than TRL's CLI: LoRA through peft_config (so the reference is the
model with its adapter off), precompute_ref_log_probs=True to score the reference once before training instead of
every step, two loss types mixed (loss_type=["sigmoid", "sft"] with loss_weights), conversational
prompt/chosen/rejected rows, grad accum 2.

    python dpo_precompute_ref_lora.py QWEN3_DIR pref_conv/ OUT
"""
import sys

from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import DPOConfig, DPOTrainer

MODEL, DATA, OUT = sys.argv[1:4]

tokenizer = AutoTokenizer.from_pretrained(MODEL)
model = AutoModelForCausalLM.from_pretrained(MODEL)
train = load_dataset(DATA, split="train")

config = DPOConfig(output_dir=OUT, per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=6,
                   learning_rate=1e-3, beta=0.1, loss_type=["sigmoid", "sft"], loss_weights=[1.0, 0.2],
                   precompute_ref_log_probs=True, precompute_ref_batch_size=8, max_length=96, logging_steps=1,
                   save_strategy="no", report_to="none", bf16=False, gradient_checkpointing=False, seed=29)
trainer = DPOTrainer(model=model, args=config, train_dataset=train, processing_class=tokenizer,
                     peft_config=LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"))
trainer.train()
print({k: v for k, v in trainer.state.log_history[-2].items() if k.startswith("rewards")})
