"""TRL SFT with packing=True on plain text rows: TRL packs sequences itself (its batches are padding-free), the
model and tokenizer loaded by the script, gradient accumulation 2.
    python trl_packing.py MODEL sft_folder OUT"""
import sys

from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer


def main(model_dir, data_dir, out):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    dataset = load_dataset(data_dir, split="train")
    config = SFTConfig(output_dir=out, packing=True, max_length=64, per_device_train_batch_size=2,
                       gradient_accumulation_steps=2, max_steps=8, logging_steps=1, report_to="none",
                       save_strategy="no", use_cpu=True, bf16=False, seed=0)
    SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer).train()


if __name__ == "__main__":
    main(*sys.argv[1:4])
