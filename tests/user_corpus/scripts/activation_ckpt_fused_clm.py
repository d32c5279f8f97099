"""Pre-training a small Llama from a LlamaConfig (random init in the script) with transformers 5's new names:
activation_checkpointing=True with activation_checkpointing_kwargs={"use_reentrant": False, "every_n_layers": 2}
(only every 2nd decoder layer recomputed), optim="adamw_torch_fused", torch_empty_cache_steps=2, logging_steps=0.25
(a ratio of the run), dataloader_drop_last=True, grad accum 2; tokenizer without a pad token (pad = eos),
DataCollatorForLanguageModeling(mlm=False).

    python activation_ckpt_fused_clm.py LLAMA_NOPAD_DIR text.txt OUT
"""
import sys

from datasets import load_dataset
from transformers import (AutoTokenizer, DataCollatorForLanguageModeling, LlamaConfig, LlamaForCausalLM, Trainer,
                          TrainingArguments, set_seed)

tok_dir, text_file, out_dir = sys.argv[1:4]
set_seed(5)
tokenizer = AutoTokenizer.from_pretrained(tok_dir)
tokenizer.pad_token = tokenizer.eos_token
ds = load_dataset("text", data_files=text_file, split="train")
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True, remove_columns=["text"])

config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id)
model = LlamaForCausalLM(config)

args = TrainingArguments(
    output_dir=out_dir,
    per_device_train_batch_size=4,
    gradient_accumulation_steps=2,
    max_steps=8,
    learning_rate=1e-3,
    warmup_steps=2,
    optim="adamw_torch_fused",
    activation_checkpointing=True,
    activation_checkpointing_kwargs={"use_reentrant": False, "every_n_layers": 2},
    torch_empty_cache_steps=2,
    logging_steps=0.25,
    dataloader_drop_last=True,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
    seed=5,
)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
result = trainer.train()
print(result.metrics)
