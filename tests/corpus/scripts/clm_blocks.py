"""run_clm style (transformers/examples/pytorch/language-modeling): a text file tokenised, concatenated and cut
into blocks (group_texts), labels copied from input_ids, default_data_collator, GPT-2 (no pad token).
    python clm_blocks.py --model_name_or_path GPT2 --train_file text.txt --block_size 32 --output_dir out"""
import sys
from dataclasses import dataclass, field
from itertools import chain

from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer, TrainingArguments,
                          default_data_collator, set_seed)


@dataclass
class Args:
    model_name_or_path: str = field(default=None)
    train_file: str = field(default=None)
    block_size: int = field(default=32)


def main():
    args, training_args = HfArgumentParser((Args, TrainingArguments)).parse_args_into_dataclasses()
    set_seed(training_args.seed)
    raw = load_dataset("text", data_files={"train": args.train_file})
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
    tokenized = raw.map(lambda ex: tokenizer(ex["text"]), batched=True, remove_columns=["text"])
    block_size = args.block_size

    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
        total = (len(concatenated[list(examples.keys())[0]]) // block_size) * block_size
        result = {k: [t[i: i + block_size] for i in range(0, total, block_size)] for k, t in concatenated.items()}
        result["labels"] = result["input_ids"].copy()
        return result

    lm = tokenized.map(group_texts, batched=True)
    trainer = Trainer(model=model, args=training_args, train_dataset=lm["train"], processing_class=tokenizer,
                      data_collator=default_data_collator)
    trainer.train()


if __name__ == "__main__":
    sys.exit(main())
