"""Fused LoRA linear: peft's LoRA layers run as one autograd function each, with peft's modules left in place.

peft's `lora.Linear` computes `base(x) + lora_B(lora_A(dropout(x))) * scaling` as separate modules: beyond the base
GEMM, lora_B's [tokens, out] output, its scaled copy and the sum are three tensors of the layer's output size, and
the backward pays again for the scale's gradient and for summing two input gradients. Here one
`torch.autograd.Function` per layer computes

    forward    xa = x A^T                 [M, r], saved for backward
               y  = x W^T (+ b)           the base GEMM
               y += s * xa B^T            addmm_: the scale and the sum in cuBLAS' epilogue, no [M, out] temporary
    backward   g  = s * dY B              [M, r]
               dx = dY W;  dx += g A      addmm_ again
               dA = g^T x,  dB = s * dY^T xa,   no gradient for the frozen W (nor its bias)

xa is reused, not recomputed (unsloth's LoRA_W recomputes it, re-reading x). It saves what peft saves (x, xa, the
weights). Over a bitsandbytes 4-bit base W is dequantised in the forward and again in the backward, as bitsandbytes
does, never kept in between. Over any other base module (an FP8 linear, say) `base_layer(x)` runs as is and only the
adapter is fused. Under torch.compile the same function is traced (no graph break) in plain ops that inductor fuses.

`fuse_lora(model)` swaps the forward of every fusable peft layer; parameters, buffers, module names and the state
dict are untouched, so `save_pretrained` writes the same adapter files and `PeftModel.from_pretrained` loads them
anywhere. A fused layer falls back to peft's own forward whenever its state stops being the one fused (adapters
disabled or merged, another adapter set active, extra forward arguments such as peft's `adapter_names`).

Through the runner (experiments/speed, one H100, Qwen3-4B LoRA r16, packed 8k, compiled, full depth): alone in bf16
a tie (25,367 vs 25,477 real tok/s, intervals overlapping); over an FP8 base (src/model/fp8.py) 1.06x (30,326 ->
32,091), the elementwise share of the step falling 12% -> 8% (by a kernel split that then counted inductor's
kernels fused around FP8's quantisation as GEMMs: src/measure/kernels.py). So it is off by default, on in experiment=fastest.
Measured (`python -m benchmarks.fused_lora_bench`: H200, torch 2.11, Qwen3-4B's shapes, 8192 tokens, r16, bf16):
one LoRA linear in eager runs 6-14% less GPU kernel time than peft's (7-17% over an nf4 base) and peaks one
[tokens, out] temporary lower. A whole decoder layer, its 7 projections fused: eager 15.88 -> 15.48 ms fwd+bwd
(kernel time 15.71 -> 14.68 ms); under layer.compile() 11.44 -> 11.00 ms (kernel time 10.75 -> 10.09 ms), but
compiled peft ranged 10.8-11.8 ms over runs: inductor already fuses peft's scale and sum into neighbouring kernels,
so compiled, the wall-clock gain is within noise. Tried and dropped: one GEMM over [W; A] to read x once (forward
within noise, and W would have to live inside an [out + r, in] buffer); dx as one GEMM of [dY, g] @ [W; A] (faster
only where in > out, by 3-9% of that backward, <1% of a layer, with the concatenation made each call); ATen's
out-of-place addmm (it copies C first: forward ~10% slower than addmm_).
"""
import sys
import types

import torch


class FusedLinearLora(torch.autograd.Function):
    """y = x W^T + b + s (x A^T) B^T over a frozen W: dense, or bitsandbytes' packed 4-bit with its quant_state."""

    @staticmethod
    def forward(ctx, x, weight, bias, lora_a, lora_b, scale, quant_state=None):
        w = _dense(weight, quant_state, x.dtype)
        xa = x @ lora_a.t()
        y = _add_mm(x @ w.t() if bias is None else torch.addmm(bias, x, w.t()), xa, lora_b.t(), scale)
        ctx.save_for_backward(x, xa, weight, lora_a, lora_b)
        ctx.scale, ctx.quant_state = scale, quant_state
        return y

    @staticmethod
    def backward(ctx, dy):
        x, xa, weight, lora_a, lora_b = ctx.saved_tensors
        need_x, need_w, need_bias = ctx.needs_input_grad[:3]
        g = (dy @ lora_b).mul_(ctx.scale)  # [M, r]: scaling it here is a tiny kernel, scaling dx or dA would not be
        dx = dw = dbias = None
        if need_x:  # the first layer's input often needs none (frozen embeddings)
            dx = _add_mm(dy @ _dense(weight, ctx.quant_state, dy.dtype), g, lora_a)
        if need_w:  # only if someone unfroze the base weight (never a 4-bit one)
            dw = dy.t() @ x
        if need_bias:
            dbias = dy.sum(0)
        da, db = _adapter_grads(ctx.needs_input_grad[3:5], ctx.scale, dy, g, x, xa)
        return dx, dw, dbias, da, db, None, None


class FusedLoraDelta(torch.autograd.Function):
    """y = base_out + s (x A^T) B^T, the base output computed outside by its own module (any type)."""

    @staticmethod
    def forward(ctx, x, base_out, lora_a, lora_b, scale):
        xa = x @ lora_a.t()
        y = _add_mm(base_out, xa, lora_b.t(), scale, inplace=False)  # base_out is the base's: its backward may need it
        ctx.save_for_backward(x, xa, lora_a, lora_b)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, dy):
        x, xa, lora_a, lora_b = ctx.saved_tensors
        g = (dy @ lora_b).mul_(ctx.scale)
        dx = g @ lora_a if ctx.needs_input_grad[0] else None
        da, db = _adapter_grads(ctx.needs_input_grad[2:4], ctx.scale, dy, g, x, xa)
        return dx, dy, da, db, None


def _add_mm(c, a, b, alpha=1.0, inplace=True):
    """c + alpha * a @ b. Eager: in place where c is ours, the scale and the sum in cuBLAS' epilogue (ATen's
    out-of-place addmm copies c first: ~10% slower, measured). Compiled: plain ops, which inductor fuses into the
    neighbouring kernels; not in place, as torch 2.11's compile misroutes the gradient of an autograd.Function output
    mutated in place (pytorch/pytorch#180642), nor torch.add(alpha=), whose alpha inductor drops after an mm (seen
    on torch 2.13, CPU)."""
    if torch.compiler.is_compiling():
        return c + (a @ b) * alpha
    return c.addmm_(a, b, alpha=alpha) if inplace else torch.add(c, a @ b, alpha=alpha)


def _adapter_grads(needs, scale, dy, g, x, xa):
    """dA = g^T x and dB = s dY^T xa, with g = s dY B; xa is the forward's, not recomputed."""
    da = g.t() @ x if needs[0] else None
    db = (dy.t() @ xa).mul_(scale) if needs[1] else None
    return da, db


def _dense(weight, quant_state, dtype):
    if quant_state is None:
        return weight
    import bitsandbytes.functional as bnbf

    return bnbf.dequantize_4bit(weight, quant_state).to(dtype)


# --- peft integration ---------------------------------------------------------------------------------------------

def fuse_lora(model: torch.nn.Module) -> dict:
    """Fuse every peft LoRA linear layer of `model` that can be fused (call after get_peft_model, before any
    torch.compile). Returns {"fused": n, "skipped": {reason: count}}; skipped layers keep peft's forward.
    Calling it again re-decides every layer for the adapters active then."""
    fused, skipped = 0, {}
    for module in model.modules():
        _unfuse(module)
        reason = skip_reason(module)
        if reason is None:
            module._fused_lora_adapter = _active_here(module)[0]
            module.forward = types.MethodType(_fused_forward, module)
            fused += 1
        elif reason:
            skipped[reason] = skipped.get(reason, 0) + 1
    return {"fused": fused, "skipped": skipped}


def unfuse_lora(model: torch.nn.Module) -> int:
    """Give every fused layer peft's own forward back. Returns how many were restored."""
    return sum(_unfuse(module) for module in model.modules())


def skip_reason(module: torch.nn.Module) -> str | None:
    """Why `module` can't be fused: None if it can, "" if it is no peft LoRA layer at all."""
    from peft.tuners.lora import LoraLayer

    if not isinstance(module, LoraLayer):
        return ""
    if type(module) not in _fusable_types():
        return f"lora.{type(module).__name__} (not a fusable linear)"
    active = _active_here(module)
    if len(active) != 1:
        return "several active adapters" if active else "no active adapter on this layer"
    name = active[0]
    if module.merged:
        return "merged"
    if module.use_dora.get(name):
        return "dora"
    if name in module.lora_variant:
        return f"variant {type(module.lora_variant[name]).__name__}"
    if module.lora_bias.get(name):
        return "lora_bias"
    dropout = module.lora_dropout[name]
    if not isinstance(dropout, torch.nn.Identity):
        return f"dropout {getattr(dropout, 'p', type(dropout).__name__)}"
    for lora in (module.lora_A[name], module.lora_B[name]):
        if type(lora).forward is not torch.nn.Linear.forward or lora.bias is not None:
            return "adapter is not a bias-free nn.Linear"
    return None


def _fusable_types() -> tuple:
    from peft.tuners.lora.layer import Linear

    # peft.tuners.lora.bnb is imported by peft once a 4-bit layer exists, so a model without one never loads it here
    bnb_lora = sys.modules.get("peft.tuners.lora.bnb")
    return (Linear,) + ((bnb_lora.Linear4bit,) if hasattr(bnb_lora, "Linear4bit") else ())


def _active_here(module) -> list:
    # peft activates an adapter model-wide; a layer without it just skips it
    return [name for name in module.active_adapters if name in module.lora_A]


def _unfuse(module) -> bool:
    if "_fused_lora_adapter" not in module.__dict__:
        return False
    del module.forward, module._fused_lora_adapter
    return True


def _fused_forward(self, x, *args, **kwargs):
    """Replaces peft's forward on a fused layer; peft's runs whenever the layer's state is not the fused one."""
    if args or kwargs or self.disable_adapters or self.merged or _active_here(self) != [self._fused_lora_adapter]:
        return type(self).forward(self, x, *args, **kwargs)
    name = self._fused_lora_adapter
    base = self.get_base_layer()
    lead, k = x.shape[:-1], x.shape[-1]
    dt = _compute_dtype(x, base)
    # Casting outside the function lets autograd cast the gradients back (fp32 adapters under bf16 autocast get
    # fp32 gradients), as autocast does for peft's nn.Linear calls.
    a, b = self.lora_A[name].weight.to(dt), self.lora_B[name].weight.to(dt)
    scale = self.scaling[name]
    x2 = x.reshape(-1, k).to(dt)
    if type(base).forward is torch.nn.Linear.forward:
        bias = None if base.bias is None else base.bias.to(dt)
        y = FusedLinearLora.apply(x2, base.weight.to(dt), bias, a, b, scale)
    elif _is_4bit(base):
        bias = None if base.bias is None else base.bias.to(dt)
        y = FusedLinearLora.apply(x2, base.weight, bias, a, b, scale, base.weight.quant_state).to(x.dtype)
    else:
        base_out = base(x)
        y = FusedLoraDelta.apply(x2, base_out.reshape(x2.shape[0], -1).to(dt), a, b, scale).to(base_out.dtype)
    return y.view(*lead, y.shape[-1])


def _compute_dtype(x, base) -> torch.dtype:
    """The dtype peft's matmuls would run in: autocast's if on (as for F.linear), else bitsandbytes' compute dtype
    for a 4-bit base, else the input's. (Without autocast peft runs fp32 adapters over a bf16 base in fp32; here the
    adapter then runs in bf16 too: the sum is rounded to bf16 either way.)"""
    if torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    if _is_4bit(base):
        return getattr(base, "compute_dtype", None) or x.dtype
    return x.dtype


def _is_4bit(base) -> bool:
    bnb = sys.modules.get("bitsandbytes")
    return bnb is not None and isinstance(base, bnb.nn.Linear4bit)
