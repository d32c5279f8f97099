"""Dtype casts per training step, by adapter dtype: why peft's default fp32 LoRA adapters cost time under bf16.

peft's LoRA forward casts each adapter's input to the adapter's dtype; under bf16 autocast an fp32 adapter
then sees its bf16 input cast up, and autocast casts it (and the fp32 weights) back down for the matmul.
Every such cast is a kernel launch, and a host-bound step pays for each. This counts the aten copy ops that
change dtype in one forward and backward of a real-width layer stack (CPU, bf16 autocast, bf16 weights).
bitsandbytes' 4-bit LoRA layer skips the input cast under autocast, which is why QLoRA (fp32 adapters)
out-ran LoRA with fp32 adapters on an H100 (9,320 vs 8,428 real tok/s at bs 32, eager).

    python -m benchmarks.casts
"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from src.machine import env
from src.model import build as models
from src.config.compose import compose


class CountCasts(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.casts = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.__name__.startswith("_to_copy") and torch.is_tensor(args[0]) and torch.is_tensor(out) \
                and args[0].dtype != out.dtype:
            self.casts += 1
        return out


def casts_per_step(adapter_dtype: str, layers: int = 2) -> int:
    cfg = compose(["precision=bf16", f"peft.adapter_dtype={adapter_dtype}", f"model.arch.num_hidden_layers={layers}"])
    res = env.resolve(cfg)
    model = models.build_model(cfg, res, models.hf_config(cfg)).train()
    ids = torch.randint(4, 1000, (2, 64))
    counter = CountCasts()
    with counter, torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=torch.tensor([0, 1])).loss
        loss.backward()
    return counter.casts


if __name__ == "__main__":
    for dtype in ("float32", "auto"):
        print(f"peft.adapter_dtype={dtype}: {casts_per_step(dtype)} dtype casts per step (2 layers, 7 adapted linears each)")
