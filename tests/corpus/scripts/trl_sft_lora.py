"""TRL's SFT with LoRA, parsed the way TRL's own scripts are (TrlParser over ScriptArguments, SFTConfig and
ModelConfig, --use_peft --lora_r ...), the model from a checkpoint or built from a config with random weights
(--config_name, built on the GPU when there is one), plain-text rows from a folder load_dataset reads, TRL's
defaults otherwise (no packing). The GPU run (experiments/dropin) gives it Llama-3.2-3B's config.
    python trl_sft_lora.py --config_name DIR --tokenizer_name DIR --dataset_name FOLDER --use_peft --output_dir out"""
from dataclasses import dataclass, field

import torch
from datasets import load_dataset
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_peft_config


@dataclass
class FromScratch:
    config_name: str = field(default=None)
    tokenizer_name: str = field(default=None)


if __name__ == "__main__":
    script_args, training_args, model_args, scratch = TrlParser(
        (ScriptArguments, SFTConfig, ModelConfig, FromScratch)).parse_args_and_config()
    tokenizer = AutoTokenizer.from_pretrained(scratch.tokenizer_name or model_args.model_name_or_path)
    dtype = torch.bfloat16 if training_args.bf16 else torch.float32
    if scratch.config_name:
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(scratch.config_name), dtype=dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, dtype=dtype)
    dataset = load_dataset(script_args.dataset_name, split=script_args.dataset_train_split)
    trainer = SFTTrainer(model=model, args=training_args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=get_peft_config(model_args))
    trainer.train()
