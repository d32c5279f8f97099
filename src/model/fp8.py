"""FP8 matmuls for the frozen base weights of a LoRA model.

`to_fp8(model)` swaps every frozen `nn.Linear` (peft's `lora.Linear.base_layer` included) for a `FrozenFp8Linear`:
its weight is quantised once to float8_e4m3fn at construction (LoRA never changes it), and each step

    forward    x8, sx  = quantise(x)                      amax of x -> 448 (dynamic scaling, per tensor or per row)
               y       = _scaled_mm(x8, W8^T, sx, sW)     fp8 tensor cores, bf16 out (+ bias)
    backward   dY8, sd = quantise(dY)                     e4m3 (rowwise) or e5m2 (tensorwise): torchao's recipes
               dx      = _scaled_mm(dY8, W8T^T, sd, sWT)  no weight gradient, and nothing saved but the weight

Speed: a base linear's two matmuls in a LoRA step (forward and input gradient: 4 FLOPs a token a weight, the 2 of a
weight gradient are never spent) run on fp8 tensor cores, twice bf16's dense peak on an H100, for the price of an
amax and a cast of x and of dY per linear. Compiled (`layer.compile()`), inductor fuses those into one or two passes
and the large shapes gain; eager runs them as half a dozen separate passes over x and dY and is slower than bf16,
so use it compiled. `python -m benchmarks.fp8_bench` measures both, per shape and for a whole decoder layer.
Memory: the same as bf16. The weight is kept twice in fp8, once per layout `_scaled_mm` needs (its second operand
must be column-major: W8^T for the forward, W8T^T for dY @ W), 1 byte + 1 byte where bf16 held 2, plus the scales.
Accuracy: e4m3 carries 3 mantissa bits, so y and dx are a few percent off bf16 (benchmarks/fp8_bench.py measures it).

Measured through the runner (experiments/speed, one H100, Qwen3-4B LoRA r16, packed 8k, compiled, full depth):
30.3k real tok/s against bf16's 25.5k in the same call (1.19x), 32.1k with the fused LoRA linear on top; over 300
steps on 4 layers of real width the loss curve and eval metric stayed within bf16's seed-to-seed spread.

Dimensions: `_scaled_mm` needs in_features and out_features divisible by 16 (the token count is free). A linear that
is not is refused (ValueError), never padded: `to_fp8` leaves it in bf16 and counts it.
Devices: `fp8_supported` says whether a GPU has fp8 tensor cores (compute capability 8.9+), where the caller may
refuse fp8. Off CUDA the module still runs, the fp8 matmul emulated in fp32 (`scaled_mm`): the same numbers, for tests.
"""
from __future__ import annotations

from collections import Counter

import torch
from torch import nn

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
SCALINGS = ("tensorwise", "rowwise")
# Rowwise by default: compiled, it ran as fast as tensorwise (benchmarks/fp8_bench.py), and a scale per token (and per
# weight channel) gives the input gradient e4m3's extra bit without losing the small tokens' gradients.
DEFAULT_SCALING = "rowwise"
HEADS = ("lm_head", "score", "classifier")
# An all-zero tensor (the gradient of masked tokens) gets a huge finite scale rather than a division by zero.
EPS = 1e-12
# Integer views of the frozen payloads: Module.to(dtype) and .half() cast every floating tensor, float8 included.
_BITS = {E4M3: torch.uint8, torch.float32: torch.int32}


def quantise(t: torch.Tensor, dtype: torch.dtype, dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """t ~= t8 * scale, with the amax over `dim` (keepdim; all of t when None) mapped to dtype's largest value.
    The fp32 scale is the dequantising factor, as `torch._scaled_mm` takes it."""
    fmax = torch.finfo(dtype).max
    amax = t.abs().amax() if dim is None else t.abs().amax(dim=dim, keepdim=True)
    mult = fmax / amax.float().clamp(min=EPS)
    # The cast does not saturate (e4m3fn has no inf: past 464 it gives NaN): clamp the rounding overshoot first.
    t8 = (t.float() * mult).clamp_(-fmax, fmax).to(dtype)
    return t8.contiguous(), mult.reciprocal()


def scaled_mm(a8: torch.Tensor, b8: torch.Tensor, scale_a, scale_b, fast_accum: bool = False) -> torch.Tensor:
    """(a8 * scale_a) @ (b8 * scale_b) in bf16, b8 column-major: torch._scaled_mm on a GPU. Elsewhere (the tests'
    CPU) its emulation, as cuBLAS computes it: fp8 values are exact in fp32, so an fp32 product, scaled after, rounded
    once; torch's own CPU kernel takes rowwise scales only from torch 2.13 and is no faster."""
    if a8.device.type == "cuda":
        return torch._scaled_mm(a8, b8, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
    return (a8.float() @ b8.float() * scale_a * scale_b).to(torch.bfloat16)


class _Fp8Matmul(torch.autograd.Function):
    """y = x W^T on 2-D x through fp8 operands; the backward gives dx only (the weight is frozen)."""

    @staticmethod
    def forward(ctx, x, w8, w_scale, wt8, wt_scale, rowwise: bool, grad_dtype: torch.dtype):
        x8, x_scale = quantise(x, E4M3, -1 if rowwise else None)
        # Fast accumulation in the forward only, as torchao: it keeps the fp8 rate; the gradient gets full accumulation.
        y = scaled_mm(x8, w8.t(), x_scale, w_scale, fast_accum=True)
        ctx.save_for_backward(wt8, wt_scale)  # the persistent weight only: no activation is kept
        ctx.rowwise, ctx.grad_dtype, ctx.x_dtype = rowwise, grad_dtype, x.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        wt8, wt_scale = ctx.saved_tensors
        dy8, dy_scale = quantise(dy, ctx.grad_dtype, -1 if ctx.rowwise else None)
        # Rowwise takes the rowwise kernel too. torchao instead runs the tensorwise kernel and multiplies the row
        # scales in afterwards, its rowwise (CUTLASS) kernel being slow without fast accumulation; torch 2.11 on sm90
        # runs rowwise through cuBLAS, which on an H200 was within a few percent of fast accumulation, while the
        # detour's extra pass over dx cost more than fp8 saved.
        dx = scaled_mm(dy8, wt8.t(), dy_scale, wt_scale)
        return dx.to(ctx.x_dtype), None, None, None, None, None, None


class FrozenFp8Linear(nn.Linear):
    """A frozen nn.Linear whose matmuls run in fp8: built from one (`FrozenFp8Linear(linear)`), weight quantised once.

    It stays an `nn.Linear` (as bitsandbytes' 4-bit layer does) so that code finding matmuls by type still finds it:
    the FLOPs counter (`in_features * out_features`, `weight.requires_grad`), peft's `all-linear`. Its `weight` is a
    frozen Parameter holding the fp8 forward copy, shape [out, in] as before: shape and requires_grad read as an
    nn.Linear's, the parameter count is unchanged, and the dtype says float8_e4m3fn, so code that would compute with
    the raw values (peft's merge, F.linear on it) fails loudly instead of using them unscaled. `compute_dtype` holds
    the dtype it replaced, which peft reads (as for bitsandbytes) to give adapters added later that dtype, not fp8.
    The column-major copy for the backward, `weight_t` [in, out], and both scales are buffers.
    """

    def __init__(self, linear: nn.Linear, scaling: str = DEFAULT_SCALING, grad_dtype: torch.dtype | None = None):
        nn.Module.__init__(self)  # not nn.Linear's: it would allocate a bf16 weight just to drop it
        if scaling not in SCALINGS:
            raise ValueError(f"scaling={scaling!r}: must be one of {SCALINGS}")
        if linear.in_features % 16 or linear.out_features % 16:
            raise ValueError(f"{linear.in_features}x{linear.out_features}: fp8 matmuls need both dimensions "
                             "divisible by 16")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.scaling = scaling
        # One scale for all tokens' gradients, whose magnitudes spread over decades: e5m2's range keeps the small
        # ones, which e4m3 flushes to zero. A scale per token leaves each row a narrow range, where e4m3's extra
        # mantissa bit pays (dx ~3.7% off bf16 against e5m2's ~5.9%). torchao's recipes choose the same.
        self.grad_dtype = grad_dtype or (E5M2 if scaling == "tensorwise" else E4M3)
        if self.grad_dtype not in (E4M3, E5M2):
            raise ValueError(f"grad_dtype={self.grad_dtype}: must be torch.float8_e4m3fn or torch.float8_e5m2")
        self.compute_dtype = linear.weight.dtype
        with torch.no_grad():
            w = linear.weight.detach()
            if scaling == "tensorwise":
                w8, w_scale = quantise(w, E4M3)
                wt8, wt_scale = w8.t().contiguous(), w_scale.clone()
            else:  # one scale per output channel forward, per input channel backward: each constant along the sum
                w8, w_scale = quantise(w, E4M3, dim=1)
                wt8, wt_scale = quantise(w, E4M3, dim=0)
                w_scale, wt8 = w_scale.reshape(1, -1), wt8.t().contiguous()
        self.weight = nn.Parameter(w8, requires_grad=False)
        self.register_parameter("bias", linear.bias)  # the same Parameter (or None): a trainable bias still trains
        self.register_buffer("weight_t", wt8)
        self.register_buffer("weight_scale", w_scale)
        self.register_buffer("weight_t_scale", wt_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        device = x.device.type
        out_dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
        y = _Fp8Matmul.apply(x.reshape(-1, self.in_features), self.weight, self.weight_scale, self.weight_t,
                             self.weight_t_scale, self.scaling == "rowwise", self.grad_dtype)
        y = y.to(out_dtype).reshape(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias.to(out_dtype)

    def _apply(self, fn, recurse=True):
        # model.to(torch.bfloat16) or .half() would cast the fp8 payload and its fp32 scales too (float8 counts as
        # floating point), leaving tensors _scaled_mm refuses. Handed over as integers of the same bytes, they move
        # devices and keep their dtype; the bias is cast like any other.
        frozen = {id(t) for t in (self.weight, self.weight_t, self.weight_scale, self.weight_t_scale)}

        def keep_dtype(t):
            return fn(t.view(_BITS[t.dtype])).view(t.dtype) if id(t) in frozen else fn(t)

        return super()._apply(keep_dtype, recurse)

    def extra_repr(self) -> str:
        grad = "e5m2" if self.grad_dtype == E5M2 else "e4m3"
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"scaling={self.scaling}, grad={grad}")


def skip_reason(name: str, linear: nn.Linear, skip=HEADS, shared: Counter | None = None) -> str | None:
    """Why `to_fp8` leaves this linear alone, or None to convert it."""
    if any(part in skip for part in name.split(".")):
        return "named_in_skip"  # the heads: their output is the logits, where fp8's few percent would show
    if type(linear).forward is not nn.Linear.forward:  # a subclass computing its own way
        # bitsandbytes' 4-bit and 8-bit layers (QLoRA's base) are already quantised
        return "already_fp8" if isinstance(linear, FrozenFp8Linear) else "not_plain_linear"
    if linear.weight.requires_grad:
        return "trainable"  # LoRA's A and B, a full fine-tune's weights: their weight gradient needs x
    if linear.in_features % 16 or linear.out_features % 16:
        return "dims_not_multiple_of_16"
    if shared is not None and shared[id(linear.weight)] > 1:
        return "shared_weight"  # tied to an embedding or another layer: converting would keep both copies
    return None


def to_fp8(model: nn.Module, skip=HEADS, scaling: str = DEFAULT_SCALING, grad_dtype: torch.dtype | None = None) -> dict:
    """Swaps every frozen nn.Linear of `model` in place for a FrozenFp8Linear, peft's `base_layer`s included (after
    get_peft_model: peft's forward calls base_layer(x), so the adapters stay in their dtype). A module whose dotted
    name has a part in `skip` is left alone, as are trainable, quantised (QLoRA), tied or odd-sized linears.
    Calling it twice converts nothing more.
    Returns {"converted": n, "skipped": {reason: count}}."""
    shared = Counter(id(p) for module in model.modules() for p in module.parameters(recurse=False))
    # Where the linears sit, not the linears themselves: each old one, bf16 weight and all, is freed as soon as it is
    # swapped, so converting never holds two copies of the model's weights.
    slots = [(f"{parent_name}.{name}".lstrip("."), parent, name) for parent_name, parent in model.named_modules()
             for name, child in parent.named_children() if isinstance(child, nn.Linear)]
    new: dict[int, nn.Module] = {}  # by the old linear's id: one reached by two names is decided once
    skipped = Counter()
    for full_name, parent, name in slots:
        child = getattr(parent, name)
        if id(child) not in new:
            reason = skip_reason(full_name, child, skip, shared)
            if reason:
                skipped[reason] += 1
            new[id(child)] = child if reason else FrozenFp8Linear(child, scaling, grad_dtype)
        setattr(parent, name, new[id(child)])
    return {"converted": len(new) - sum(skipped.values()), "skipped": dict(skipped)}


def fp8_supported(device=None) -> tuple[bool, str]:
    """(True, the card) where fp8 matmuls run on tensor cores, else (False, one line saying why)."""
    device = torch.device(device if device is not None else "cuda")
    if device.type != "cuda":
        return False, f"fp8 matmuls need a CUDA GPU with compute capability 8.9+; this run is on {device.type}"
    if not torch.cuda.is_available():
        return False, "fp8 matmuls need a CUDA GPU with compute capability 8.9+; torch sees no CUDA device"
    if torch.version.hip:
        return False, "fp8 here is CUDA's float8_e4m3fn; ROCm GPUs (MI300: e4m3fnuz) are not supported"
    major, minor = torch.cuda.get_device_capability(device)
    card = f"{torch.cuda.get_device_name(device)} (compute capability {major}.{minor})"
    if (major, minor) < (8, 9):
        return False, f"{card} has no fp8 tensor cores: they need compute capability 8.9+ (L40S, RTX 4090, H100, H200)"
    return True, card
