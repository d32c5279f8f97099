"""datasets' own streaming mode feeding a causal LM: load_dataset("json", ..., streaming=True) gives a
datasets.IterableDataset (not a torch one), shuffled through a seeded buffer (.shuffle(seed, buffer_size)),
chat rows rendered with the tokenizer's chat template and tokenized lazily in .map(batched=True,
remove_columns=["messages"]), max_steps since the stream has no length, DataCollatorForLanguageModeling(mlm=False).
The settings are an OmegaConf config: YAML defaults in the script merged with a key=value dotlist from the command
line (OmegaConf.from_cli), the Hydra-less config style of research codebases. A Qwen3 causal LM, grad accum 2.

    python hf_streaming_omegaconf.py model=QWEN3_DIR data=chat.jsonl out=OUT [train.max_steps=8 ...]
"""
import torch
from datasets import load_dataset
from omegaconf import OmegaConf
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments, set_seed)

DEFAULTS = """
model: ???
data: ???
out: ???
seed: 17
max_length: 96
shuffle_buffer: 32
train:
  per_device_train_batch_size: 4
  gradient_accumulation_steps: 2
  learning_rate: 1.0e-3
  max_steps: 8
  lr_scheduler_type: cosine
  warmup_steps: 1
  logging_steps: 1
"""

cfg = OmegaConf.merge(OmegaConf.create(DEFAULTS), OmegaConf.from_cli())
print(OmegaConf.to_yaml(cfg))
set_seed(cfg.seed)

tokenizer = AutoTokenizer.from_pretrained(cfg.model)
model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)

stream = load_dataset("json", data_files=cfg.data, split="train", streaming=True)
stream = stream.shuffle(seed=cfg.seed, buffer_size=cfg.shuffle_buffer)


def render(batch):
    texts = [tokenizer.apply_chat_template(m, tokenize=False) for m in batch["messages"]]
    return tokenizer(texts, truncation=True, max_length=cfg.max_length)


stream = stream.map(render, batched=True, batch_size=16, remove_columns=["messages"])

args = TrainingArguments(output_dir=cfg.out, save_strategy="no", report_to="none", seed=cfg.seed,
                         **OmegaConf.to_container(cfg.train))
trainer = Trainer(model=model, args=args, train_dataset=stream, processing_class=tokenizer,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
print("steps", trainer.state.global_step)
