"""Causal LM fine-tune with a callback that freezes the lower half mid-run and drops the LR by hand, the way forum
answers do it: at step 3 the callback sets requires_grad False on the embeddings and the first decoder layer (their
grads stay None, so AdamW skips them), at step 5 it halves lr_scheduler.base_lrs (the scheduler would overwrite a
param_group's lr otherwise). Qwen3 CLM, DataCollatorForLanguageModeling(mlm=False), grad accum 2.

    python freeze_lr_callback.py QWEN3_DIR text.txt OUT
"""
import sys
from datasets import load_dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainerCallback, TrainingArguments, set_seed)

MODEL, TXT, OUT = sys.argv[1:4]
set_seed(7)
tok = AutoTokenizer.from_pretrained(MODEL)
ds = load_dataset("text", data_files=TXT)["train"].map(lambda b: tok(b["text"], truncation=True, max_length=48),
                                                       batched=True, remove_columns=["text"])
model = AutoModelForCausalLM.from_pretrained(MODEL)
frozen = [p for n, p in model.named_parameters() if "embed_tokens" in n or ".layers.0." in n]
print("trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))

class Unfreeze(TrainerCallback):
    def __init__(self):
        self.optimizer = None
    def on_step_begin(self, args, state, control, lr_scheduler=None, **kw):
        if state.global_step == 3:
            for p in frozen:
                p.requires_grad = False
            print("froze", len(frozen), "tensors at step", state.global_step)
        if state.global_step == 5:
            lr_scheduler.base_lrs = [lr * 0.5 for lr in lr_scheduler.base_lrs]
            print("halved lr at step", state.global_step)

args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=8, gradient_accumulation_steps=2,
                         learning_rate=1e-3, lr_scheduler_type="constant", max_steps=8, logging_steps=1,
                         save_strategy="no", report_to="none", seed=7)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False), callbacks=[Unfreeze()])
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
print("LRS", [e["learning_rate"] for e in trainer.state.log_history if "loss" in e])
