"""Seq2SeqTrainer evaluating by generation during training, as the translation/summarization course chapters do:
Seq2SeqTrainingArguments(predict_with_generate=True, generation_max_length=..., generation_num_beams=2),
eval_strategy="steps", a compute_metrics that decodes predictions (replacing -100 by pad in the labels first) and
scores exact match and unigram F1; a BART checkpoint, DataCollatorForSeq2Seq(model=...).

    python seq2seq_generate_metrics.py BART_DIR sum.jsonl OUT
"""
import sys
from collections import Counter

import numpy as np
from datasets import load_dataset
from transformers import (AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, Seq2SeqTrainer,
                          Seq2SeqTrainingArguments)

model_dir, data_path, out_dir = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)

raw = load_dataset("json", data_files=data_path, split="train").train_test_split(test_size=16, seed=0)


def preprocess(examples):
    inputs = tokenizer(examples["document"], max_length=64, truncation=True)
    inputs["labels"] = tokenizer(text_target=examples["summary"], max_length=16, truncation=True)["input_ids"]
    return inputs


tokenized = raw.map(preprocess, batched=True, remove_columns=raw["train"].column_names)


def unigram_f1(pred, ref):
    p, r = pred.split(), ref.split()
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def compute_metrics(eval_preds):
    preds, labels = eval_preds
    if isinstance(preds, tuple):
        preds = preds[0]
    preds = np.where(preds != -100, preds, tokenizer.pad_token_id)
    decoded_preds = tokenizer.batch_decode(preds, skip_special_tokens=True)
    labels = np.where(labels != -100, labels, tokenizer.pad_token_id)
    decoded_labels = tokenizer.batch_decode(labels, skip_special_tokens=True)
    f1 = [unigram_f1(p.strip(), l.strip()) for p, l in zip(decoded_preds, decoded_labels)]
    exact = [p.strip() == l.strip() for p, l in zip(decoded_preds, decoded_labels)]
    gen_len = [np.count_nonzero(pr != tokenizer.pad_token_id) for pr in preds]
    return {"unigram_f1": round(float(np.mean(f1)), 4), "exact_match": float(np.mean(exact)),
            "gen_len": float(np.mean(gen_len))}


args = Seq2SeqTrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, per_device_eval_batch_size=8,
                                learning_rate=2e-3, max_steps=6, eval_strategy="steps", eval_steps=3,
                                predict_with_generate=True, generation_max_length=12, generation_num_beams=2,
                                logging_steps=1, save_strategy="no", report_to="none", seed=4)
trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=tokenized["train"],
                         eval_dataset=tokenized["test"], processing_class=tokenizer,
                         data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
                         compute_metrics=compute_metrics)
trainer.train()
print(trainer.evaluate(max_length=12, num_beams=1))
