"""AdaLoRA on the Trainer as PEFT's docs ask of a training loop (conditional_generation/peft_adalora_seq2seq.py calls
`model.base_model.update_and_allocate(global_step)` after each backward): AdaLoraConfig with init_r 12 pruned to
target_r 4, tinit/tfinal/deltaT and total_step = max_steps; a TrainerCallback's on_optimizer_step (after the optimizer
step, before the gradients are zeroed) calls update_and_allocate so the rank budget reads this step's gradients;
prompt/completion rows with the prompt masked to -100, DataCollatorForSeq2Seq padding labels with -100, grad accum 2.

    python peft_adalora_clm.py QWEN3_DIR pc.jsonl OUT
"""
import sys

from datasets import load_dataset
from peft import AdaLoraConfig, TaskType, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainerCallback,
                          TrainingArguments, set_seed)

model_dir, data_path, out_dir = sys.argv[1:4]
set_seed(8)
max_steps = 8
tokenizer = AutoTokenizer.from_pretrained(model_dir)


def build(row):
    prompt = tokenizer(row["prompt"])["input_ids"]
    answer = tokenizer(row["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": prompt + answer, "attention_mask": [1] * (len(prompt) + len(answer)),
            "labels": [-100] * len(prompt) + answer}


train = load_dataset("json", data_files=data_path, split="train").map(build, remove_columns=["prompt", "completion"])

model = AutoModelForCausalLM.from_pretrained(model_dir)
config = AdaLoraConfig(task_type=TaskType.CAUSAL_LM, init_r=12, target_r=4, tinit=2, tfinal=2, deltaT=1,
                       beta1=0.85, beta2=0.85, orth_reg_weight=0.5, lora_alpha=32, lora_dropout=0.0,
                       target_modules=["q_proj", "v_proj"], total_step=max_steps)
model = get_peft_model(model, config)
model.print_trainable_parameters()


class RankAllocation(TrainerCallback):
    def on_optimizer_step(self, args, state, control, model=None, **kwargs):
        model.base_model.update_and_allocate(state.global_step)


args = TrainingArguments(out_dir, per_device_train_batch_size=4, gradient_accumulation_steps=2, learning_rate=5e-3,
                         max_steps=max_steps, logging_steps=1, save_strategy="no", report_to="none", seed=8)
trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                  data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100),
                  callbacks=[RankAllocation()])
trainer.train()
pattern = model.peft_config["default"].rank_pattern or {}
print("ranks kept:", sum(sum(kept) for kept in pattern.values()), "of", 12 * len(pattern))
