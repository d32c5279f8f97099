"""FP8 matmuls for frozen base weights (src/model/fp8.py): numerics against an fp32 reference and an emulation of
torch._scaled_mm, the module contract (no weight gradient, nothing saved, dtype-proof), tracing under torch.compile,
and the swap inside a tiny peft LoRA model. On the CPU the fp8 matmul is the module's emulation, checked against
torch's own CPU `_scaled_mm` where this torch has one; the GPU tests (an fp8 card) run the real one."""
import copy
import weakref

import pytest
import torch
from torch import nn

from src.model.fp8 import E4M3, E5M2, FrozenFp8Linear, fp8_supported, quantise, scaled_mm, to_fp8

needs_fp8 = pytest.mark.skipif(not fp8_supported()[0], reason=fp8_supported()[1])


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().float(), b.detach().float()
    return float((a - b).norm() / b.norm())


def frozen_linear(n_in=256, n_out=512, bias=False, seed=0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(n_in, n_out, bias=bias).requires_grad_(False)


def fwd_bwd(module, x, dy):
    """(y, dx) of one forward and backward."""
    x = x.detach().clone().requires_grad_(True)
    y = module(x)
    (dx,) = torch.autograd.grad(y, x, dy)
    return y, dx


def dequantised(payload, scale):
    """An fp8 weight copy as fp32: [rows, cols] times its scale, a scalar or one per row."""
    return payload.float() * scale.reshape(-1, 1)


# --- quantisation ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_tensorwise_scale_maps_amax_to_the_largest_fp8_value(dtype):
    t = torch.randn(64, 48) * 3
    t8, scale = quantise(t, dtype)
    fmax = torch.finfo(dtype).max  # 448 for e4m3, 57344 for e5m2
    assert t8.dtype == dtype and scale.dtype == torch.float32 and scale.dim() == 0
    assert t8.float().abs().max() == fmax
    assert t8.float().view(-1)[t.abs().argmax()].abs() == fmax
    assert torch.allclose(scale, t.abs().max() / fmax)
    # Round to nearest with 3 (e4m3) or 2 (e5m2) mantissa bits: within half a step, eps/2 of the value (below the
    # normal range, under `tiny`, the step is absolute); the slack is fp32's own rounding of the scaling
    info = torch.finfo(dtype)
    bound = info.eps / 2 * (t.abs() + scale * info.tiny) * (1 + 1e-5)
    assert ((t8.float() * scale - t).abs() <= bound).all()


def test_rowwise_scales_give_every_row_the_full_range():
    t = torch.randn(32, 64) * torch.logspace(-4, 2, 32).unsqueeze(1)  # rows 6 decades apart
    t8, scale = quantise(t, E4M3, dim=-1)
    assert scale.shape == (32, 1)
    assert (t8.float().abs().amax(dim=1) == 448).all()
    assert rel(t8.float() * scale, t) < 0.05
    # one scale for all: the small rows fall under e4m3's range and vanish
    t8_all, scale_all = quantise(t, E4M3)
    assert (t8_all[0] == 0).all() and rel(t8_all[0].float() * scale_all, t[0]) == 1.0


def test_an_all_zero_tensor_quantises_to_zeros_without_nans():
    t8, scale = quantise(torch.zeros(8, 32), E4M3, dim=-1)
    assert (t8.float() == 0).all() and torch.isfinite(scale).all() and (scale > 0).all()


# --- the module -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_weight_is_quantised_once_into_both_layouts(scaling):
    linear = frozen_linear(256, 512)
    m = FrozenFp8Linear(linear, scaling)
    assert m.weight.shape == (512, 256) and m.weight.dtype == E4M3 and not m.weight.requires_grad
    assert m.weight_t.shape == (256, 512) and m.weight_t.is_contiguous() and m.weight_t.dtype == E4M3
    assert (m.in_features, m.out_features, m.compute_dtype) == (256, 512, torch.float32)
    w = linear.weight
    assert rel(dequantised(m.weight, m.weight_scale), w) < 0.03
    assert rel(dequantised(m.weight_t, m.weight_t_scale).t(), w) < 0.03
    if scaling == "tensorwise":  # one scale: the backward copy is the forward copy transposed
        assert torch.equal(m.weight_t.view(torch.uint8), m.weight.t().contiguous().view(torch.uint8))
    else:  # per output channel forward, per input channel backward: each row of W, each column, reaches 448
        assert m.weight_scale.shape == (1, 512) and m.weight_t_scale.shape == (1, 256)
        assert (m.weight.float().abs().amax(dim=1) == 448).all()
        assert (m.weight_t.float().abs().amax(dim=1) == 448).all()
    # the two fp8 copies take the bytes the bf16 weight took; the parameter count is unchanged
    assert m.weight.nbytes + m.weight_t.nbytes == w.numel() * torch.bfloat16.itemsize
    assert sum(p.numel() for p in m.parameters()) == sum(p.numel() for p in linear.parameters())


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("grad_dtype", [E4M3, E5M2])
def test_scaled_mm_is_dequantise_matmul_scale(scaling, grad_dtype):
    """What _scaled_mm computes from the quantised operands: the fp8 values as fp32, multiplied, scaled, in bf16."""
    m = FrozenFp8Linear(frozen_linear(128, 96), scaling, grad_dtype)
    x, dy = torch.randn(40, 128), torch.randn(40, 96)
    y, dx = fwd_bwd(m, x, dy)
    dim = -1 if scaling == "rowwise" else None
    x8, sx = quantise(x, E4M3, dim)
    dy8, sdy = quantise(dy.bfloat16(), grad_dtype, dim)  # the gradient reaches the matmul in its output dtype
    y_emulated = (x8.float() * sx) @ dequantised(m.weight, m.weight_scale).t()
    dx_emulated = (dy8.float() * sdy) @ dequantised(m.weight_t, m.weight_t_scale).t()
    # equal up to the bf16 rounding of the output (and the order of the fp32 sums)
    torch.testing.assert_close(y.float(), y_emulated, rtol=2 ** -7, atol=1e-4 * float(y_emulated.abs().max()))
    torch.testing.assert_close(dx.float(), dx_emulated, rtol=2 ** -7, atol=1e-4 * float(dx_emulated.abs().max()))


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_cpu_emulation_matches_torchs_own_cpu_scaled_mm(scaling):
    """The CPU path stands in for torch._scaled_mm: same operands, scales and layouts give the same bf16 result as
    torch's CPU kernel, where this torch has one (rowwise scales from torch 2.13)."""
    dim = -1 if scaling == "rowwise" else None
    a8, scale_a = quantise(torch.randn(40, 128), E4M3, dim)
    bt8, scale_bt = quantise(torch.randn(96, 128), E4M3, dim)  # b's columns as rows: b = bt8.t() is column-major
    scale_b = scale_bt.reshape(1, -1) if scaling == "rowwise" else scale_bt
    try:
        expected = torch._scaled_mm(a8, bt8.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError) as error:
        pytest.skip(f"torch {torch.__version__} has no CPU _scaled_mm with {scaling} scales: {str(error)[:80]}")
    got = scaled_mm(a8, bt8.t(), scale_a, scale_b)
    assert got.dtype == torch.bfloat16 and got.shape == (40, 96)
    torch.testing.assert_close(got, expected, rtol=2 ** -7, atol=1e-3 * float(expected.abs().max()))


@pytest.mark.parametrize("scaling,grad_dtype,dx_bound", [("tensorwise", E5M2, 0.08), ("tensorwise", E4M3, 0.05),
                                                         ("rowwise", E4M3, 0.05), ("rowwise", E5M2, 0.08)])
def test_outputs_and_input_gradients_are_within_fp8s_error(scaling, grad_dtype, dx_bound):
    linear = frozen_linear(256, 512, bias=True)
    m = FrozenFp8Linear(linear, scaling, grad_dtype)
    x, dy = torch.randn(3, 50, 256), torch.randn(3, 50, 512)
    y, dx = fwd_bwd(m, x, dy)
    y_ref, dx_ref = fwd_bwd(linear, x, dy)
    assert y.shape == y_ref.shape and dx.shape == dx_ref.shape and dx.dtype == x.dtype
    assert 0.005 < rel(y, y_ref) < 0.05  # e4m3 operands: ~3.6% (and not exact, so fp8 did run)
    assert 0.005 < rel(dx, dx_ref) < dx_bound  # e5m2 gradients carry a bit less: ~6%


def test_the_default_gradient_dtype_suits_the_scaling():
    """Token gradients spread over decades. One scale for all rows: e4m3 flushes the small rows to zero, e5m2's
    range keeps them (the tensorwise default). A scale per row: e4m3's extra bit wins (the rowwise default)."""
    linear = frozen_linear(128, 256)
    x = torch.randn(64, 128)
    dy = torch.randn(64, 256) * torch.logspace(-6, 0, 64).unsqueeze(1)
    _, dx_ref = fwd_bwd(linear, x, dy)

    def worst_row(scaling, grad_dtype=None):
        _, dx = fwd_bwd(FrozenFp8Linear(linear, scaling, grad_dtype), x, dy)
        return float(((dx - dx_ref).norm(dim=1) / dx_ref.norm(dim=1)).max())

    assert FrozenFp8Linear(linear, "tensorwise").grad_dtype == E5M2
    assert FrozenFp8Linear(linear, "rowwise").grad_dtype == E4M3
    assert worst_row("tensorwise", E4M3) > 0.5
    assert worst_row("tensorwise") < 0.1
    assert worst_row("rowwise") < worst_row("rowwise", E5M2) < 0.1


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_no_weight_gradient_and_no_activation_saved(scaling):
    linear = frozen_linear(64, 32, bias=True)
    linear.bias.requires_grad_(True)  # a trained bias (peft's bias="all") keeps training
    m = FrozenFp8Linear(linear, scaling)
    saved = []
    x = torch.randn(10, 64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = m(x)
    y.square().sum().backward()
    assert m.weight.grad is None and m.weight_t.grad is None
    assert m.bias.grad is not None and torch.allclose(m.bias.grad, 2 * y.detach().sum(0), rtol=1e-3)
    assert x.grad is not None and x.grad.abs().sum() > 0
    # the backward reads the persistent fp8 weight and its scale, and keeps nothing of the step
    assert saved and {t.data_ptr() for t in saved} <= {m.weight_t.data_ptr(), m.weight_t_scale.data_ptr()}


def test_dims_not_divisible_by_16_are_refused():
    with pytest.raises(ValueError, match="divisible by 16"):
        FrozenFp8Linear(frozen_linear(64, 40))
    with pytest.raises(ValueError, match="scaling"):
        FrozenFp8Linear(frozen_linear(64, 64), scaling="blockwise")


def test_any_token_count_runs():
    m, linear = FrozenFp8Linear(frozen_linear(64, 32)), frozen_linear(64, 32)
    for shape in [(1, 64), (7, 64), (2, 3, 5, 64)]:
        x = torch.randn(shape)
        y = m(x)
        assert y.shape == (*shape[:-1], 32) and rel(y, linear(x)) < 0.06


def test_autocast_sets_the_output_dtype_and_the_gradient_keeps_the_inputs():
    m = FrozenFp8Linear(frozen_linear(64, 32, bias=True))
    x = torch.randn(4, 64, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = m(x)
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert x.grad.dtype == torch.float32


def test_model_to_dtype_moves_nothing_out_of_fp8():
    """Module.to(dtype) and .half() cast every floating tensor, float8 included; the fp8 payload and its fp32 scales
    keep theirs (and their bits), the bias follows the model."""
    m = FrozenFp8Linear(frozen_linear(64, 32, bias=True), "rowwise")
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.randn(5, 64)
    y = m(x)
    for convert in (lambda mod: mod.to(torch.bfloat16), lambda mod: mod.half(), lambda mod: mod.to("cpu")):
        convert(m)
        assert (m.weight.dtype, m.weight_t.dtype) == (E4M3, E4M3)
        assert m.weight_scale.dtype == m.weight_t_scale.dtype == torch.float32
        for name in ("weight", "weight_t", "weight_scale", "weight_t_scale"):
            assert torch.equal(getattr(m, name).view(torch.uint8), before[name].view(torch.uint8)), name
        assert isinstance(m.weight, nn.Parameter) and not m.weight.requires_grad
    assert m.bias.dtype == torch.float16
    # same fp8 matmul; only the bias add and output rounding differ
    assert rel(m(x.half()), y) < 0.01


# --- torch.compile --------------------------------------------------------------------------------------------------

def graph_recorder():
    """A torch.compile backend (aot_eager) that keeps every Dynamo graph and the forward and backward graphs
    AOTAutograd makes of them."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    seen = {"dynamo": [], "forward": [], "backward": []}

    def keep(kind):
        def compiler(gm, example_inputs):
            seen[kind].append(gm)
            return make_boxed_func(gm.forward)
        return compiler

    aot = aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward"))

    def backend(gm, example_inputs):
        seen["dynamo"].append(gm)
        return aot(gm, example_inputs)

    return backend, seen


def fp8_casts(graphs) -> int:
    """Casts to an fp8 dtype in the graphs: one per quantised x (forward) or dY (backward)."""
    return sum(node.target is torch.ops.aten._to_copy.default and node.kwargs.get("dtype") in (E4M3, E5M2)
               for gm in graphs for node in gm.graph.nodes)


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_traces_whole_under_compile_forward_and_backward(scaling):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    m = FrozenFp8Linear(frozen_linear(64, 96, bias=True), scaling)
    x, dy = torch.randn(2, 9, 64), torch.randn(2, 9, 96)
    backend, seen = graph_recorder()
    compiled = torch.compile(m, backend=backend, fullgraph=True)
    y, dx = fwd_bwd(compiled, x, dy)
    y_eager, dx_eager = fwd_bwd(m, x, dy)
    assert not counters["graph_break"]
    assert len(seen["dynamo"]) == 1
    # each pass quantises inside its graph, where inductor can fuse the amax and the cast with their neighbours
    assert fp8_casts(seen["forward"]) == 1 and fp8_casts(seen["backward"]) == 1
    torch.testing.assert_close(y, y_eager)
    torch.testing.assert_close(dx, dx_eager)


# --- to_fp8 ---------------------------------------------------------------------------------------------------------

class Custom(nn.Linear):  # a linear subclass computing its own way (as bitsandbytes' 4-bit layer does)
    def forward(self, x):
        return super().forward(x) * 2


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 64)
        self.proj = nn.Linear(64, 64)
        self.odd = nn.Linear(64, 40)
        self.tuned = nn.Linear(64, 64)
        self.tied_a = nn.Linear(64, 64)
        self.tied_b = nn.Linear(64, 64)
        self.tied_b.weight = self.tied_a.weight
        self.custom = Custom(64, 64)
        self.lm_head = nn.Linear(64, 10)
        self.blocks = nn.ModuleList([nn.Linear(64, 64)])
        self.alias = self.blocks[0]  # one module under two names


def test_to_fp8_converts_frozen_plain_linears_and_counts_the_rest():
    model = Toy().requires_grad_(False)
    model.tuned.requires_grad_(True)
    report = to_fp8(model)
    assert report == {"converted": 2, "skipped": {"dims_not_multiple_of_16": 1, "trainable": 1, "shared_weight": 2,
                                                  "not_plain_linear": 1, "named_in_skip": 1}}
    assert isinstance(model.proj, FrozenFp8Linear) and isinstance(model.blocks[0], FrozenFp8Linear)
    assert model.alias is model.blocks[0]
    assert type(model.lm_head) is nn.Linear and type(model.embed) is nn.Embedding and type(model.odd) is nn.Linear
    assert model.tied_a.weight is model.tied_b.weight
    # a second call finds nothing left to convert
    assert to_fp8(model)["converted"] == 0 and to_fp8(model)["skipped"]["already_fp8"] == 2
    assert to_fp8(Toy())["skipped"]["trainable"] == 6  # nothing frozen: nothing converted


def test_to_fp8_frees_each_old_linear_as_it_goes(monkeypatch):
    """Converting never holds two copies of the weights: when a linear is converted, those before it are gone."""
    model = nn.Sequential(*(nn.Linear(64, 64) for _ in range(5))).requires_grad_(False)
    old = [weakref.ref(m) for m in model]
    alive_at_each_conversion = []
    init = FrozenFp8Linear.__init__

    def counting_init(self, linear, *args, **kwargs):
        alive_at_each_conversion.append(sum(ref() is not None for ref in old))
        init(self, linear, *args, **kwargs)

    monkeypatch.setattr(FrozenFp8Linear, "__init__", counting_init)
    assert to_fp8(model)["converted"] == 5
    assert alive_at_each_conversion == [5, 4, 3, 2, 1]
    assert all(ref() is None for ref in old)


def test_to_fp8_leaves_bitsandbytes_4bit_layers_alone():
    bnb = pytest.importorskip("bitsandbytes")
    model = nn.Sequential(bnb.nn.Linear4bit(64, 64, compute_dtype=torch.float32), nn.Linear(64, 64))
    report = to_fp8(model.requires_grad_(False))
    assert report == {"converted": 1, "skipped": {"not_plain_linear": 1}}
    assert isinstance(model[0], bnb.nn.Linear4bit)


def tiny_qwen3(intermediate=128):
    from transformers import Qwen3Config, Qwen3ForSequenceClassification

    conf = Qwen3Config(hidden_size=64, intermediate_size=intermediate, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16, vocab_size=128, num_labels=5, pad_token_id=0,
                       attn_implementation="sdpa")
    torch.manual_seed(0)
    return Qwen3ForSequenceClassification(conf)


def with_lora(model):
    from peft import LoraConfig, get_peft_model

    # random B as well as A (init_lora_weights=False): both then get a gradient on the first step
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="SEQ_CLS", init_lora_weights=False)
    return get_peft_model(model, lora, autocast_adapter_dtype=False)


def lora_step(model, ids, labels):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=labels)
    out.loss.backward()
    return out.loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


def batch():
    g = torch.Generator().manual_seed(1)
    return torch.randint(1, 128, (3, 24), generator=g), torch.tensor([0, 3, 4])


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_to_fp8_after_get_peft_model_keeps_lora_training(scaling):
    from peft.tuners.lora import Linear as LoraLinear

    ref = with_lora(tiny_qwen3())
    model = copy.deepcopy(ref)
    report = to_fp8(model, scaling=scaling)
    # 7 base linears in each of 2 layers; LoRA's A and B are trainable; the score head (peft keeps the original
    # and a trainable copy) is named in the skip list
    assert report == {"converted": 14, "skipped": {"trainable": 28, "named_in_skip": 2}}
    layer = model.base_model.model.model.layers[0]
    assert isinstance(layer.self_attn.q_proj, LoraLinear)
    assert isinstance(layer.self_attn.q_proj.base_layer, FrozenFp8Linear)
    assert layer.self_attn.q_proj.lora_A["default"].weight.dtype == torch.float32  # adapters untouched
    assert type(model.base_model.model.score.original_module) is nn.Linear
    ids, labels = batch()
    loss_ref, grads_ref = lora_step(ref, ids, labels)
    loss, grads = lora_step(model, ids, labels)
    assert grads.keys() == grads_ref.keys()
    assert all(n.endswith((".lora_A.default.weight", ".lora_B.default.weight", "score.modules_to_save.default.weight"))
               for n in grads)
    assert all(g is not None and g.abs().sum() > 0 for g in grads.values())
    # fp8 error through two layers: the loss and every adapter's gradient stay close to the fp32 model's
    assert abs(float(loss - loss_ref)) < 0.01 * float(loss_ref)
    assert max(rel(grads[n], grads_ref[n]) for n in grads) < 0.12
    assert all(p.grad is None for p in model.parameters() if not p.requires_grad)


def test_to_fp8_before_get_peft_model_gives_adapters_the_old_dtype():
    """Still an nn.Linear, so peft's all-linear wraps the converted layers; compute_dtype keeps the adapters out of
    fp8. (After get_peft_model is the order to use, as peft freezes the base; this one, on a base frozen by hand,
    must not break.)"""
    from peft.tuners.lora import Linear as LoraLinear

    base = tiny_qwen3().requires_grad_(False)
    assert to_fp8(base) == {"converted": 14, "skipped": {"named_in_skip": 1}}
    model = with_lora(base)
    q = model.base_model.model.model.layers[1].self_attn.q_proj
    assert isinstance(q, LoraLinear) and isinstance(q.base_layer, FrozenFp8Linear)
    assert q.lora_A["default"].weight.dtype == q.lora_B["default"].weight.dtype == torch.float32
    _, grads = lora_step(model, *batch())
    assert all(g is not None and torch.isfinite(g).all() for g in grads.values())


def test_flops_counter_sees_the_same_frozen_matmuls():
    """The FLOPs counter finds matmuls by isinstance(nn.Linear) and reads in_features * out_features and
    weight.requires_grad: the converted model gives the same (frozen, trainable) counts."""
    def matmul_params(model):
        counts = [0, 0]
        for module in model.modules():
            if isinstance(module, nn.Linear):
                counts[module.weight.requires_grad] += module.in_features * module.out_features
        return tuple(counts)

    model = with_lora(tiny_qwen3())
    before = matmul_params(model)
    to_fp8(model)
    assert matmul_params(model) == before and before[0] > 0


def test_compiled_decoder_layers_have_no_graph_breaks():
    """As trainsweep compiles: every decoder layer on its own (layer.compile()), after the swap."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = with_lora(tiny_qwen3())
    to_fp8(model, scaling="rowwise")
    eager = copy.deepcopy(model)
    backend, seen = graph_recorder()
    for layer in model.base_model.model.model.layers:
        layer.compile(backend=backend)
    ids, labels = batch()
    loss, grads = lora_step(model, ids, labels)
    loss_eager, grads_eager = lora_step(eager, ids, labels)
    assert not counters["graph_break"]
    assert len(seen["dynamo"]) >= 1
    # each layer's 7 fp8 linears: 7 quantised inputs in the layer's forward graph, 7 quantised dY in its backward
    assert fp8_casts(seen["forward"][:1]) == 7 and fp8_casts(seen["backward"][:1]) == 7
    torch.testing.assert_close(loss, loss_eager)
    for n in grads:
        torch.testing.assert_close(grads[n], grads_eager[n], rtol=1e-4, atol=1e-6)


# --- fp8_supported --------------------------------------------------------------------------------------------------

def test_fp8_supported_says_why_not(monkeypatch):
    ok, reason = fp8_supported("cpu")
    assert not ok and "CUDA" in reason and "cpu" in reason
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    ok, reason = fp8_supported("cuda")
    assert not ok and "A100" in reason and "8.0" in reason and "8.9" in reason
    for capability in [(8, 9), (9, 0), (10, 0)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert fp8_supported("cuda")[0]


# --- GPU ------------------------------------------------------------------------------------------------------------

@pytest.mark.gpu
@needs_fp8
@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_gpu_eager_and_inductor_match_bf16(scaling):
    torch._dynamo.reset()
    linear = frozen_linear(512, 768, bias=True).to("cuda", torch.bfloat16)
    m = FrozenFp8Linear(linear, scaling)
    x = torch.randn(3, 100, 512, device="cuda", dtype=torch.bfloat16)  # 300 tokens: any count runs
    dy = torch.randn(3, 100, 768, device="cuda", dtype=torch.bfloat16)
    y_ref, dx_ref = fwd_bwd(linear, x, dy)
    y, dx = fwd_bwd(m, x, dy)
    y_c, dx_c = fwd_bwd(torch.compile(m, fullgraph=True), x, dy)
    assert y.dtype == dx.dtype == torch.bfloat16
    assert rel(y, y_ref) < 0.05 and rel(dx, dx_ref) < 0.08
    assert rel(y_c, y) < 0.01 and rel(dx_c, dx) < 0.01


@pytest.mark.gpu
@needs_fp8
@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_gpu_scaled_mm_gives_the_cpu_emulations_numbers(scaling):
    """The same fp8 payloads and scales on the GPU (torch._scaled_mm, cuBLAS) and on the CPU (the emulation): only
    the order of the fp32 sums and fast accumulation differ, far below fp8's own error."""
    gpu = FrozenFp8Linear(frozen_linear(512, 768, bias=True).to("cuda", torch.bfloat16), scaling)
    cpu = copy.deepcopy(gpu).to("cpu")
    x = torch.randn(300, 512, dtype=torch.bfloat16)
    dy = torch.randn(300, 768, dtype=torch.bfloat16)
    y_gpu, dx_gpu = fwd_bwd(gpu, x.cuda(), dy.cuda())
    y_cpu, dx_cpu = fwd_bwd(cpu, x, dy)
    assert rel(y_gpu.cpu(), y_cpu) < 0.005 and rel(dx_gpu.cpu(), dx_cpu) < 0.005


@pytest.mark.gpu
@needs_fp8
def test_gpu_compiled_lora_layers_train():
    torch._dynamo.reset()
    ref = with_lora(tiny_qwen3()).to("cuda", torch.bfloat16)
    model = copy.deepcopy(ref)
    assert to_fp8(model)["converted"] == 14
    for layer in model.base_model.model.model.layers:
        layer.compile()
    ids, labels = (t.cuda() for t in batch())
    loss_ref, grads_ref = lora_step(ref, ids, labels)
    loss, grads = lora_step(model, ids, labels)
    assert abs(float(loss - loss_ref)) < 0.03 * float(loss_ref)
    assert max(rel(grads[n], grads_ref[n]) for n in grads) < 0.25
