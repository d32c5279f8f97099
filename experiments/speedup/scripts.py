"""A user's own script on a GPU, run as written (plain) and with the one added line `trainsweep.speedup(trainer)`
(sped): how much faster, with what loss curve? experiments/speedup/gpu.sh runs each script both ways, P S P S.
    python3 experiments/speedup/scripts.py SCRIPT OUT_DIR plain|sped|graphs|measured [LAYERS]   # one JSON line
(graphs: `trainsweep.speedup(trainer, graphs=True)`, the whole model in CUDA graphs for launch-bound small batches;
measured: `trainsweep.attach(trainer, speedup=True)`, whose report.md says where the sped-up step's time goes)
SCRIPT: classifier8 / classifier32 (a plain Trainer, Qwen3-4B width, LoRA r16 all-linear, DataCollatorWithPadding,
bs 8 or 32, rows of ~N(211, 30) tokens, 280 classes learnable from the first token), sft (TRL's SFTTrainer,
Llama-3.2-3B width, LoRA r16, chat-length rows ~N(400, 150) in [32, 1024], bs 8, no packing: TRL's defaults),
bert (BERT-base classifier, bs 32: a script speedup must leave as it is). Random weights, bf16, sdpa.

The script's own clock, no part of trainsweep: a forward pre-hook adds each training forward's real tokens (ids
other than the pad id 0; the rows never hold 0) on the device, and the GPU is synced twice, at the end of step
WARM and at the end of training: tokens of steps WARM+1..N over that time.
"""
import json
import sys
import time
from pathlib import Path

import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model
from transformers import (BertConfig, BertForSequenceClassification, DataCollatorWithPadding, LlamaConfig,
                          LlamaForCausalLM, Qwen3Config, Qwen3ForSequenceClassification, Trainer, TrainingArguments,
                          set_seed)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from dropin_common import ScriptClock  # noqa: E402  (scripts/: what the user-script GPU runs share)

script, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
layers = int(sys.argv[4]) if len(sys.argv) > 4 else None
STEPS, WARM = 60, 10
set_seed(0)
g = torch.Generator().manual_seed(0)
sft = script == "sft"
mean, sd, low, high = (400.0, 150.0, 32, 1024) if sft else (211.0, 30.0, 40, 287)
lengths = torch.normal(mean, sd, (8192,), generator=g).clamp(low, high).long().tolist()
vocab = {"sft": 128256, "bert": 30522}.get(script, 151936)
ids = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in lengths]


class Tok:  # what DataCollatorWithPadding needs of a tokenizer: pad()
    pad_token_id, padding_side, model_input_names = 0, "right", ["input_ids", "attention_mask"]

    def pad(self, features, padding=True, max_length=None, pad_to_multiple_of=None, return_tensors="pt", **kw):
        n = max(len(f["input_ids"]) for f in features)
        batch = {k: torch.tensor([f[k] + [0] * (n - len(f[k])) for f in features]) for k in ("input_ids", "attention_mask")}
        batch["labels"] = torch.tensor([f["label"] for f in features])
        return batch


torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):  # built on the card: a 4B model's random init on the CPU takes minutes
    if sft:
        model = LlamaForCausalLM(LlamaConfig(
            vocab_size=vocab, hidden_size=3072, intermediate_size=8192, num_hidden_layers=layers or 28,
            num_attention_heads=24, num_key_value_heads=8, head_dim=128, pad_token_id=0, eos_token_id=2,
            tie_word_embeddings=True, attn_implementation="sdpa"))
    elif script == "bert":
        model = BertForSequenceClassification(BertConfig(num_labels=280, attn_implementation="sdpa"))
    else:
        model = Qwen3ForSequenceClassification(Qwen3Config(
            vocab_size=vocab, hidden_size=2560, intermediate_size=9728, num_hidden_layers=layers or 36,
            num_attention_heads=32, num_key_value_heads=8, head_dim=128, num_labels=280, pad_token_id=0,
            tie_word_embeddings=True, attn_implementation="sdpa"))
torch.set_default_dtype(torch.float32)
bs = 8 if script in ("classifier8", "sft") else 32
lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear" if script != "bert" else ["query", "value"],
                  task_type="CAUSAL_LM" if sft else "SEQ_CLS")
if sft:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
    from trl import SFTConfig, SFTTrainer

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(
        {"<pad>": 0, "<unk>": 1, "<eos>": 2}, unk_token="<unk>")), pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    args = SFTConfig(output_dir=out, max_steps=STEPS, per_device_train_batch_size=bs, learning_rate=1e-4, bf16=True,
                     max_length=1024, logging_steps=5, report_to=[], save_strategy="no", seed=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"input_ids": ids}),
                         processing_class=tokenizer, peft_config=lora)
else:
    data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * n for n in lengths],
                              "label": [x[0] % 280 for x in ids]})  # learnable: a function of the first token
    args = TrainingArguments(output_dir=out, max_steps=STEPS, per_device_train_batch_size=bs, learning_rate=1e-4,
                             bf16=True, logging_steps=5, report_to=[], save_strategy="no", seed=0)
    trainer = Trainer(model=get_peft_model(model, lora), args=args, train_dataset=data,
                      data_collator=DataCollatorWithPadding(Tok()))


clock = ScriptClock(WARM)
trainer.add_callback(clock)
made = torch.zeros((), dtype=torch.long, device="cuda")
counting = [False]


def count(module, args, kwargs):
    if counting[0] and module.training and torch.is_grad_enabled() and clock.step >= WARM:
        made.add_((kwargs["input_ids"] != 0).sum())


trainer.model.register_forward_pre_hook(count, with_kwargs=True)
t0 = time.perf_counter()
said = None
if mode in ("sped", "graphs", "measured"):
    try:  # the one added line, and its import (a checkout on the device machine has the package as `src`)
        import trainsweep
    except ImportError:
        import src as trainsweep

    # measured: the same line through attach, whose report says where the sped-up step's time goes
    if mode == "measured":
        said = trainsweep.attach(trainer, speedup=True).speedup
    else:
        said = trainsweep.speedup(trainer, graphs=True if mode == "graphs" else None)
t_levers = time.perf_counter() - t0
counting[0] = True
result = trainer.train()
line = {"script": script, "mode": mode, "layers": layers, "gpu": torch.cuda.get_device_name(),
        "wall_s": round(time.perf_counter() - t0, 2), "speedup_s": round(t_levers, 2),
        "train_runtime": result.metrics["train_runtime"],
        "own_clock_tok_s": round(int(made) / (clock.t_end - clock.t_warm), 1),
        "rows_per_step": said.packing["rows_per_step"] if said and said.on("padding-free batches") else bs,
        "train_loss": round(result.training_loss, 4),
        "losses": [e["loss"] for e in trainer.state.log_history if "loss" in e],
        "peak_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
if said:
    line["levers"] = {lv.name: lv.on for lv in said.levers}
    line["verified"] = said.verified
    line["said"] = said.text()
print(json.dumps(line), flush=True)
