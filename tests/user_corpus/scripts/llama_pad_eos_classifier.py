"""A Llama checkpoint as a sequence classifier, after the "fine-tune Llama for text classification" blog posts:
the tokenizer has no pad token so pad = eos (the rows themselves hold no eos: Llama's tokenizer adds <s> only),
model.config.pad_token_id = eos, right padding, the whole split padded to its longest row at map time
(padding=True in a batched map with batch_size=None), LlamaForSequenceClassification named directly.

    python llama_pad_eos_classifier.py LLAMA_DIR cls_train.csv OUT
"""
import sys

import torch
from datasets import load_dataset
from transformers import AutoTokenizer, LlamaForSequenceClassification, Trainer, TrainingArguments, set_seed


def main(base_model, data_file, output_dir):
    set_seed(31)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"

    dataset = load_dataset("csv", data_files=data_file, split="train").train_test_split(test_size=0.1, seed=31)
    id2label = {i: f"topic_{i}" for i in range(5)}
    model = LlamaForSequenceClassification.from_pretrained(base_model, num_labels=5, id2label=id2label,
                                                           label2id={v: k for k, v in id2label.items()},
                                                           dtype=torch.float32)
    model.config.pad_token_id = model.config.eos_token_id

    def preprocess(examples):
        return tokenizer(examples["text"], padding=True, truncation=True, max_length=80)

    tokenized = dataset.map(preprocess, batched=True, batch_size=None, remove_columns=["text"])
    # every eos in the padded rows is padding: attention_mask is 0 wherever input_ids is eos
    for row in tokenized["train"]:
        assert all(m == 0 for t, m in zip(row["input_ids"], row["attention_mask"]) if t == tokenizer.eos_token_id)

    training_args = TrainingArguments(output_dir=output_dir, learning_rate=1e-3, per_device_train_batch_size=8,
                                      per_device_eval_batch_size=8, max_steps=8, weight_decay=0.01,
                                      logging_steps=1, eval_strategy="no", save_strategy="no", report_to="none",
                                      seed=31)
    trainer = Trainer(model=model, args=training_args, train_dataset=tokenized["train"],
                      eval_dataset=tokenized["test"], processing_class=tokenizer)
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
