"""A user's TRL SFTTrainer script on a GPU, with or without trainsweep's two added lines (`attach`): does the
drop-in change a real card's training, and does its report agree with a clock of the script's own? Qwen3-4B
width, 4 layers, random weights, bf16, sdpa, LoRA r16 all-linear through `peft_config`, TRL's packing
(max_length 2048, bs 4: ~8k tokens a step), made-up chat-length rows (~N(400, 150) tokens), TRL's other defaults
as a user gets them. scripts/gpu_dropin.sh runs it in P A P A order.
    python3 scripts/dropin_sft_gpu.py OUT_DIR plain|attached   # one JSON line: runtimes, losses, both clocks

The independent clock: the script counts the tokens of every training forward (a forward pre-hook on its own
model, reading the input's shape) and syncs the GPU twice, at the end of step WARM and at the end of training;
tokens of steps WARM+1..N over that time is a throughput no part of trainsweep computed.
"""
import json
import sys
import time

import torch
from datasets import Dataset
from peft import LoraConfig
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM, set_seed
from trl import SFTConfig, SFTTrainer

from dropin_common import ScriptClock, attach, report_fields  # scripts/, beside this file

out, mode = sys.argv[1], sys.argv[2]
STEPS, WARM = 60, 10
set_seed(0)
g = torch.Generator().manual_seed(0)
lengths = torch.normal(400.0, 150.0, (4096,), generator=g).clamp(32, 1024).long().tolist()
data = Dataset.from_dict({"input_ids": [torch.randint(3, 150000, (n,), generator=g).tolist() for n in lengths]})
# a tokenizer for its special tokens only: the rows are token ids already (TRL skips tokenising them)
tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<pad>": 0, "<unk>": 1, "<eos>": 2},
                                                                                 unk_token="<unk>")),
                                    pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
model = Qwen3ForCausalLM(Qwen3Config(
    vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=4, num_attention_heads=32,
    num_key_value_heads=8, head_dim=128, pad_token_id=0, eos_token_id=2, tie_word_embeddings=True,
    attn_implementation="sdpa")).to(torch.bfloat16)
args = SFTConfig(output_dir=out, max_steps=STEPS, per_device_train_batch_size=4, learning_rate=1e-4, bf16=True,
                 packing=True, max_length=2048, logging_steps=10, report_to=[], save_strategy="no", seed=0)
trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                     peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))

made: list[int] = []  # tokens of each training forward, in step order (ga 1)


clock = ScriptClock(WARM)
trainer.add_callback(clock)


def count(module, args, kwargs):  # packed rows hold no padding: every id is a real token; a shape, so no sync
    if clock.training and module.training:
        made.append(kwargs["input_ids"].numel() if "input_ids" in kwargs else args[0].numel())


trainer.model.register_forward_pre_hook(count, with_kwargs=True)
if mode == "attached":
    attach(trainer)
t0 = time.perf_counter()
result = trainer.train()
own_tok_s = sum(made[WARM:STEPS]) / (clock.t_end - clock.t_warm)
line = {"mode": mode, "script": "trl_sft_packing_lora", "wall_s": round(time.perf_counter() - t0, 2),
        "gpu": torch.cuda.get_device_name(), "train_runtime": result.metrics["train_runtime"],
        "gradient_checkpointing": args.gradient_checkpointing, "tokens_per_step": round(sum(made[:STEPS]) / STEPS),
        "own_clock_tok_s": round(own_tok_s, 1), "train_loss": round(result.training_loss, 4),
        "losses": [e["loss"] for e in trainer.state.log_history if "loss" in e]}
if mode == "attached":
    line |= report_fields(out)
    line["report_vs_own_clock"] = round(line["real_tok_s"] / own_tok_s, 3)
print(json.dumps(line), flush=True)
