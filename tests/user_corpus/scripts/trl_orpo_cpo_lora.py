"""Preference tuning without a reference model, the way a user picks it up from TRL's docs after DPO: ORPO (an odds-
ratio term on top of the SFT loss) or CPO (SimPO-style, here with loss_type='simpo' and cpo_alpha), both from
trl.experimental, LoRA through peft_config, prompt/chosen/rejected rows loaded from a folder of JSON lines, an
argparse switch between the two, grad accum 2.

    python trl_orpo_cpo_lora.py --method orpo --model QWEN3_DIR --data pref/ --output_dir OUT
"""
import argparse

from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--method", choices=["orpo", "cpo"], default="orpo")
parser.add_argument("--model", required=True)
parser.add_argument("--data", required=True)
parser.add_argument("--output_dir", required=True)
parser.add_argument("--beta", type=float, default=0.1)
opts = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(opts.model)
model = AutoModelForCausalLM.from_pretrained(opts.model)
data = load_dataset(opts.data)  # train.jsonl / test.jsonl
common = dict(output_dir=opts.output_dir, per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=6,
              learning_rate=1e-3, beta=opts.beta, max_length=96, logging_steps=1, save_strategy="no",
              eval_strategy="no", report_to="none", bf16=False, seed=11)
lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")

if opts.method == "orpo":
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    trainer = ORPOTrainer(model=model, args=ORPOConfig(**common), train_dataset=data["train"],
                          processing_class=tokenizer, peft_config=lora)
else:
    from trl.experimental.cpo import CPOConfig, CPOTrainer

    trainer = CPOTrainer(model=model, args=CPOConfig(loss_type="simpo", cpo_alpha=0.5, simpo_gamma=0.5, **common),
                         train_dataset=data["train"], processing_class=tokenizer, peft_config=lora)
trainer.model.print_trainable_parameters()
trainer.train()
trainer.save_model()
