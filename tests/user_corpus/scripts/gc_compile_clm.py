"""Memory and speed flags stacked the way people copy them from a "train faster" blog post: gradient_checkpointing=True
(reentrant off), torch_compile=True (aot_eager backend: no C compiler on a CPU box), group_by_length... no: plain
random order; a Llama checkpoint without a pad token (pad = eos), alpaca rows rendered as one text with eos
appended, DataCollatorForLanguageModeling(mlm=False, pad_to_multiple_of=16). grad accum 2, cosine.

    python gc_compile_clm.py LLAMA_DIR alpaca.json OUT
"""
import json
import sys
from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

MODEL, ALPACA, OUT = sys.argv[1:4]
set_seed(9)
tok = AutoTokenizer.from_pretrained(MODEL)
tok.pad_token = tok.eos_token
rows = json.load(open(ALPACA))
texts = [f"### Instruction:\n{r['instruction']}\n### Input:\n{r['input']}\n### Response:\n{r['output']}{tok.eos_token}"
         for r in rows]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=96), batched=True,
                                            remove_columns=["text"])
model = AutoModelForCausalLM.from_pretrained(MODEL)
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                         learning_rate=1e-3, lr_scheduler_type="cosine", max_steps=6, logging_steps=1,
                         gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False},
                         torch_compile=True, torch_compile_backend="aot_eager", save_strategy="no", report_to="none",
                         seed=9)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False, pad_to_multiple_of=16))
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
