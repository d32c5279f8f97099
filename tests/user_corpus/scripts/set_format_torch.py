"""datasets.Dataset.set_format("torch") before training, as many tutorials do: tokenize with a lambda in map()
(no padding, so rows keep their own length), rename "label" to "labels", set_format("torch", columns=[...]) so
each row comes back as torch tensors of different lengths, DataCollatorWithPadding pads them; the Trainer's
remove_unused_columns left at its default.

    python set_format_torch.py MODEL_DIR cls_train.csv OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments, set_seed)


def main(model_path, csv_path, out_dir):
    set_seed(3)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    ds = load_dataset("csv", data_files=csv_path, split="train")
    ds = ds.map(lambda x: tokenizer(x["text"], truncation=True, max_length=72), batched=True)
    ds = ds.rename_column("label", "labels")
    ds.set_format("torch", columns=["input_ids", "attention_mask", "labels"])
    print(type(ds[0]["input_ids"]), ds[0]["input_ids"].shape)

    model = AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=5)
    args = TrainingArguments(out_dir, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8,
                             logging_steps=1, save_strategy="no", report_to="none", seed=3)
    trainer = Trainer(model, args, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer=tokenizer))
    trainer.train()


if __name__ == "__main__":
    main(*sys.argv[1:])
