"""TRL SFT with packing=True on raw text: a plain text file read with load_dataset("text"), the model and
tokenizer loaded by the script (AutoModelForCausalLM / AutoTokenizer), SFTConfig(packing=True, max_length=64) so
TRL packs several documents into each row (best-fit decreasing, padding-free batches with position_ids),
gradient accumulation 2, a cosine schedule with warm-up, function main() with argparse.

    python trl_sft_packing.py --model MODEL_DIR --data text.txt --output_dir OUT
"""
import argparse

from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer


def main():
    parser = argparse.ArgumentParser(description="SFT with packing")
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--max_length", type=int, default=64)
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype="float32")
    dataset = load_dataset("text", data_files={"train": args.data})["train"]

    config = SFTConfig(
        output_dir=args.output_dir,
        packing=True,
        max_length=args.max_length,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=2,
        learning_rate=5e-4,
        lr_scheduler_type="cosine",
        warmup_steps=2,
        max_steps=8,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
        bf16=False,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()


if __name__ == "__main__":
    main()
