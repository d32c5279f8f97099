"""NER on a decoder: GPT2ForTokenClassification (the "GPT-2 for token classification" notebooks), GPT-2 has no pad
token so pad = eos on tokenizer and config, words tokenised with is_split_into_words=True, the label on every
sub-token of a word (label_all_tokens=True, run_ner.py's flag; B- turned to I- on continuation pieces),
DataCollatorForTokenClassification pads labels with -100, grad accum 2, seqeval-free token accuracy.

    python decoder_token_cls.py GPT2_DIR ner.jsonl OUT
"""
import json
import sys
import numpy as np
from datasets import Dataset
from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification, Trainer,
                          TrainingArguments, set_seed)

MODEL, NER, OUT = sys.argv[1:4]
set_seed(5)
rows = [json.loads(l) for l in open(NER)]
labels = sorted({t for r in rows for t in r["ner_tags"]})
label2id = {l: i for i, l in enumerate(labels)}
tok = AutoTokenizer.from_pretrained(MODEL)
tok.pad_token = tok.eos_token

def enc(ex):
    e = tok(ex["tokens"], is_split_into_words=True, truncation=True, max_length=64)
    out, prev = [], None
    for w in e.word_ids():
        if w is None:
            out.append(-100)
        else:
            tag = ex["ner_tags"][w]
            if w == prev and tag.startswith("B-"):
                tag = "I-" + tag[2:]
            out.append(label2id[tag])
        prev = w
    e["labels"] = out
    return e

ds = Dataset.from_list(rows).map(enc, remove_columns=["tokens", "ner_tags"])
split = ds.train_test_split(test_size=0.2, seed=5)
model = AutoModelForTokenClassification.from_pretrained(MODEL, num_labels=len(labels), label2id=label2id,
                                                        id2label={i: l for l, i in label2id.items()})
model.config.pad_token_id = tok.pad_token_id

def metrics(p):
    pred, lab = p.predictions.argmax(-1), p.label_ids
    m = lab != -100
    return {"token_acc": float((pred[m] == lab[m]).mean())}

args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=2e-3, max_steps=8, logging_steps=1, eval_strategy="steps", eval_steps=4,
                         save_strategy="no", report_to="none", seed=5)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=DataCollatorForTokenClassification(tok), compute_metrics=metrics)
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
print("EVALS", [e["eval_loss"] for e in trainer.state.log_history if "eval_loss" in e])
