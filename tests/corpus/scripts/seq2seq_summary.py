"""run_summarization style: Seq2SeqTrainer, Seq2SeqTrainingArguments, text_target= for the labels,
DataCollatorForSeq2Seq padding labels with -100, a BART checkpoint.
    python seq2seq_summary.py MODEL sum.jsonl OUT"""
import sys

from datasets import load_dataset
from transformers import (AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, Seq2SeqTrainer,
                          Seq2SeqTrainingArguments)

model_name, data_file, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(model_name)
model = AutoModelForSeq2SeqLM.from_pretrained(model_name)
raw = load_dataset("json", data_files={"train": data_file})["train"]


def preprocess_function(examples):
    model_inputs = tokenizer(examples["document"], max_length=64, truncation=True)
    labels = tokenizer(text_target=examples["summary"], max_length=16, truncation=True)
    model_inputs["labels"] = labels["input_ids"]
    return model_inputs


train = raw.map(preprocess_function, batched=True, remove_columns=raw.column_names)
args = Seq2SeqTrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=8, learning_rate=1e-3,
                                logging_steps=1, report_to="none", save_strategy="no", predict_with_generate=False,
                                seed=0)
trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                         data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100))
trainer.train()
