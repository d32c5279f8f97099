"""src/model/fused_lora.py: the fused LoRA linear gives peft's outputs and gradients, leaves peft's modules and
state dict as they were, skips (and counts) what it can't fuse, falls back to peft when the layer's state changes,
traces under torch.compile without graph breaks, and works over bitsandbytes' 4-bit base."""
import copy

import pytest
import torch

from src.model.fused_lora import fuse_lora, skip_reason, unfuse_lora

IN, OUT, R, M = 64, 48, 4, 10


class Wrap(torch.nn.Module):
    def __init__(self, proj):
        super().__init__()
        self.proj = proj

    def forward(self, x):
        return self.proj(x)


class RoundedLinear(torch.nn.Linear):
    """A base of another type (standing in for an FP8 linear): its own forward, which the fused path must call."""

    def forward(self, x):
        return torch.nn.functional.linear(x, torch.round(self.weight * 8) / 8, self.bias)


def lora_linear(base=None, seed=0, dtype=torch.float32, **lora_kw):
    """A peft LoRA linear inside a small module, B random (peft starts it at zero, which zeroes A's gradient)."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    wrap = Wrap(base if base is not None else torch.nn.Linear(IN, OUT))
    config = LoraConfig(r=R, lora_alpha=2 * R, target_modules=["proj"], **{"lora_dropout": 0.0, **lora_kw})
    inner = get_peft_model(wrap, config, autocast_adapter_dtype=False).base_model.model.to(dtype)
    with torch.no_grad():
        inner.proj.lora_B["default"].weight.normal_()
    return inner


def tiny_qwen(seed=0):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    conf = Qwen3Config(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16, vocab_size=128)
    return Qwen3ForCausalLM(conf)


def tiny_peft(seed=0, **lora_kw):
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=R, lora_alpha=2 * R, target_modules="all-linear", task_type="CAUSAL_LM",
                        **{"lora_dropout": 0.0, **lora_kw})
    model = get_peft_model(tiny_qwen(seed), config)
    torch.manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)
    return model


def run(module, x, upstream=None):
    """Output and the gradients of x and of every trainable parameter, for a fixed upstream gradient."""
    module.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_(x.is_floating_point())
    out = module(x)
    if upstream is None:
        upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(7)).to(out)
    out.backward(upstream)
    plain = getattr(module, "_orig_mod", module)  # a compiled module's parameter names, without the prefix
    grads = {name: p.grad for name, p in plain.named_parameters() if p.requires_grad}
    return out.detach(), x.grad, grads


def run_model(model, ids):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    return out.logits.detach(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def assert_same(fused, ref, tol):
    (y, dx, grads), (y_ref, dx_ref, grads_ref) = fused, ref
    assert y.dtype == y_ref.dtype and y.shape == y_ref.shape
    assert rel(y, y_ref) < tol
    assert rel(dx, dx_ref) < tol
    assert grads.keys() == grads_ref.keys()
    for name in grads:
        assert grads[name].dtype == grads_ref[name].dtype, name
        assert grads[name].abs().sum() > 0, f"{name}: zero gradient, nothing tested"
        assert rel(grads[name], grads_ref[name]) < tol, name


def graph_has(out, name: str) -> bool:
    """Whether `name`'s backward node is in out's autograd graph: the fused path ran, not peft's fallback."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if name in type(fn).__name__:
            return True
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return False


def x_of(shape=(2, M // 2, IN), dtype=torch.float32, seed=3):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# --- one layer ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(M, IN), (2, M // 2, IN), (2, 1, M // 2, IN)])
def test_matches_peft_fp32(bias, shape):
    peft_mod = lora_linear(torch.nn.Linear(IN, OUT, bias=bias))
    fused = copy.deepcopy(peft_mod)
    assert fuse_lora(fused) == {"fused": 1, "skipped": {}}
    x = x_of(shape)
    assert graph_has(fused(x.requires_grad_()), "FusedLinearLora")
    assert_same(run(fused, x), run(peft_mod, x), 1e-6)


def test_matches_peft_bf16():
    peft_mod = lora_linear(dtype=torch.bfloat16)
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of(dtype=torch.bfloat16)
    got, ref = run(fused, x), run(peft_mod, x)
    assert got[0].dtype == torch.bfloat16
    # Both round differently; each must sit at bf16's distance from the fp64 result
    exact = run(copy.deepcopy(peft_mod).double(), x.double())
    assert_same(got, ref, 2e-2)
    assert rel(got[0], exact[0]) < 2 * rel(ref[0], exact[0]) + 4e-3


@pytest.mark.parametrize("base_dtype", [torch.float32, torch.bfloat16])
def test_fp32_adapters_under_bf16_autocast(base_dtype):
    peft_mod = lora_linear()
    peft_mod.proj.base_layer.to(base_dtype)  # adapters stay fp32, as peft's autocast_adapter_dtype keeps them
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of(dtype=base_dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, ref = run(fused, x), run(peft_mod, x)
    assert got[0].dtype == ref[0].dtype == torch.bfloat16  # the matmuls ran in autocast's dtype
    assert got[2]["proj.lora_A.default.weight"].dtype == torch.float32  # fp32 gradients for fp32 adapters
    assert_same(got, ref, 2e-2)


def test_fp32_adapters_over_bf16_base_without_autocast():
    peft_mod = lora_linear()
    peft_mod.proj.base_layer.to(torch.bfloat16)
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of(dtype=torch.bfloat16)
    assert_same(run(fused, x), run(peft_mod, x), 2e-2)


def test_other_base_type_runs_its_own_forward():
    peft_mod = lora_linear(RoundedLinear(IN, OUT))
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of()
    out = fused(x.clone().requires_grad_())
    assert graph_has(out, "FusedLoraDelta") and not graph_has(out, "FusedLinearLora")
    got = run(fused, x)
    assert_same(got, run(peft_mod, x), 1e-6)
    # the base's rounding is in the result: a plain linear over the unrounded weight differs
    plain = copy.deepcopy(peft_mod)
    plain.proj.base_layer.__class__ = torch.nn.Linear
    assert rel(got[0], run(plain, x)[0]) > 1e-5


def test_frozen_input_gets_no_gradient_and_base_weight_can_train():
    peft_mod = lora_linear()
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of()
    out = fused(x)  # x needs no gradient, as the first layer's input under frozen embeddings
    out.sum().backward()
    assert x.grad is None and fused.proj.lora_A["default"].weight.grad is not None
    for module in (fused, peft_mod):
        module.proj.base_layer.weight.requires_grad_(True)
        module.proj.base_layer.bias.requires_grad_(True)
    assert_same(run(fused, x), run(peft_mod, x), 1e-6)


# --- whole models ------------------------------------------------------------------------------------------------

def test_model_matches_peft_and_keeps_its_state_dict():
    model = tiny_peft()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    names = [n for n, _ in model.named_modules()]
    fused = copy.deepcopy(model)
    assert fuse_lora(fused) == {"fused": 14, "skipped": {}}
    assert [n for n, _ in fused.named_modules()] == names
    after = fused.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)
    ids = torch.randint(0, 128, (2, M), generator=torch.Generator().manual_seed(0))
    (logits, grads), (ref_logits, ref_grads) = run_model(fused, ids), run_model(model, ids)
    assert rel(logits, ref_logits) < 1e-6
    assert grads.keys() == ref_grads.keys() and len(grads) == 28
    for name in grads:
        assert grads[name].abs().sum() > 0 and rel(grads[name], ref_grads[name]) < 1e-5, name
    assert fuse_lora(fused)["fused"] == 14  # fusing twice changes nothing
    assert unfuse_lora(fused) == 14 and fuse_lora(fused)["fused"] == 14


def test_saved_adapter_loads_into_a_never_fused_model(tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file

    fused = tiny_peft()
    fuse_lora(fused)
    ids = torch.randint(0, 128, (2, M), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.SGD([p for p in fused.parameters() if p.requires_grad], lr=0.1)
    fused(input_ids=ids, labels=ids).loss.backward()  # a step through the fused path: trained adapters to save
    opt.step()
    fused.save_pretrained(tmp_path / "fused")
    tiny_peft().save_pretrained(tmp_path / "plain")
    saved = load_file(tmp_path / "fused" / "adapter_model.safetensors")
    assert saved.keys() == load_file(tmp_path / "plain" / "adapter_model.safetensors").keys()

    loaded = PeftModel.from_pretrained(tiny_qwen(), tmp_path / "fused")
    with torch.no_grad():
        assert rel(loaded(input_ids=ids).logits, fused(input_ids=ids).logits) < 1e-6
        assert rel(loaded(input_ids=ids).logits, tiny_qwen()(input_ids=ids).logits) > 1e-3  # the adapter acts


@pytest.mark.parametrize("lora_kw, reason", [
    ({"lora_dropout": 0.05}, "dropout 0.05"),
    ({"use_dora": True}, "dora"),
    ({"lora_bias": True}, "lora_bias"),
])
def test_unfusable_layers_are_skipped_and_counted(lora_kw, reason):
    model = tiny_peft(**lora_kw)
    assert fuse_lora(model) == {"fused": 0, "skipped": {reason: 14}}


def test_several_adapters_and_embeddings_are_skipped():
    from peft import LoraConfig

    model = tiny_peft()
    model.add_adapter("second", LoraConfig(r=R, target_modules=["q_proj", "embed_tokens"], lora_dropout=0.0))
    model.base_model.set_adapter(["default", "second"])
    embedding = "lora.Embedding (not a fusable linear)"
    assert fuse_lora(model) == {"fused": 12, "skipped": {"several active adapters": 2, embedding: 1}}
    model.base_model.set_adapter("second")
    assert fuse_lora(model) == {"fused": 2, "skipped": {"no active adapter on this layer": 12, embedding: 1}}
    assert skip_reason(model.base_model.model.model.embed_tokens) == "lora.Embedding (not a fusable linear)"
    assert skip_reason(model.base_model.model.model.layers[0].mlp) == ""  # no peft layer at all


def test_falls_back_to_peft_when_the_state_changes():
    from peft import LoraConfig

    model = tiny_peft()
    fused = copy.deepcopy(model)
    fuse_lora(fused)
    ids = torch.randint(0, 128, (2, M), generator=torch.Generator().manual_seed(0))

    def logits(m):
        with torch.no_grad():
            return m(input_ids=ids).logits

    with model.disable_adapter(), fused.disable_adapter():
        assert rel(logits(fused), logits(model)) < 1e-6
        assert rel(logits(fused), logits(tiny_qwen())) < 1e-6
    adapted = logits(model)
    assert rel(logits(fused), adapted) < 1e-6 and rel(adapted, logits(tiny_qwen())) > 1e-3
    fused.merge_adapter()
    assert rel(logits(fused), adapted) < 1e-5
    fused.unmerge_adapter()
    for m in (model, fused):
        torch.manual_seed(5)  # the same random "other" adapter in both
        m.add_adapter("other", LoraConfig(r=R, target_modules="all-linear", lora_dropout=0.0, init_lora_weights=False))
        m.set_adapter("other")
    assert rel(logits(fused), logits(model)) < 1e-6 and rel(logits(fused), adapted) > 1e-3
    fused.set_adapter("default")
    out = fused(input_ids=ids).logits
    assert graph_has(out, "FusedLinearLora") and rel(out.detach(), adapted) < 1e-6


# --- torch.compile -----------------------------------------------------------------------------------------------

def layer_inputs(model, seed=0):
    torch.manual_seed(seed)
    hidden = torch.randn(2, M // 2, 64)
    positions = torch.arange(M // 2)[None].expand(2, -1)
    return hidden, model.base_model.model.model.rotary_emb(hidden, positions)


def layer_run(layer, hidden, rope, params):
    for p in params:
        p.grad = None
    h = hidden.clone().requires_grad_()
    out = layer(h, position_embeddings=rope, attention_mask=None)
    out = out[0] if isinstance(out, tuple) else out
    out.backward(torch.ones_like(out))
    return [out.detach(), h.grad] + [p.grad for p in params]


def test_decoder_layer_traces_without_graph_breaks():
    model = tiny_peft()
    fuse_lora(model)
    layer = model.base_model.model.model.layers[0]
    hidden, rope = layer_inputs(model)
    explained = torch._dynamo.explain(layer)(hidden.requires_grad_(), position_embeddings=rope, attention_mask=None)
    assert explained.graph_break_count == 0 and explained.graph_count == 1, explained.break_reasons


def test_compiled_layers_match_eager_and_compile_as_often_as_peft():
    from torch._dynamo.testing import CompileCounterWithBackend

    counts = {}
    for fused in (False, True):
        model = tiny_peft()
        if fused:
            fuse_lora(model)
        layers = model.base_model.model.model.layers
        params = [[p for p in layer.parameters() if p.requires_grad] for layer in layers]
        hidden, rope = layer_inputs(model)
        eager = [layer_run(layer, hidden, rope, ps) for layer, ps in zip(layers, params)]
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("aot_eager")
        for layer in layers:
            layer.compile(backend=counter)  # as compile_regions does
        for layer, ps, ref in zip(layers, params, eager):
            for got, want in zip(layer_run(layer, hidden, rope, ps), ref):
                assert rel(got, want) < 1e-5
        counts[fused] = counter.frame_count
    assert counts[True] == counts[False]


def test_fusing_again_after_unfusing_compiles_nothing_new():
    """speedup's A/B unfuses the layers for the script's own arm and fuses them again for the compiled one every
    round: a compiled model (CUDA graphs under speedup(graphs=True)) must find its graph still valid, not
    recompile the whole model each round."""
    from torch._dynamo.testing import CompileCounterWithBackend

    model = tiny_peft()
    fuse_lora(model)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("eager")
    model.compile(backend=counter)
    ids = torch.randint(1, 64, (2, M))
    for _ in range(2):
        model(input_ids=ids).logits.sum().backward()
        compiled = counter.frame_count
        unfuse_lora(model)
        impl, model._compiled_call_impl = model._compiled_call_impl, None  # the script's own arm runs eager
        model(input_ids=ids).logits.sum().backward()
        fuse_lora(model)
        model._compiled_call_impl = impl
    model(input_ids=ids).logits.sum().backward()
    assert counter.frame_count == compiled == 1


@pytest.mark.parametrize("base", [torch.nn.Linear, RoundedLinear])
def test_inductor_matches_eager(base):
    fused = lora_linear(base(IN, OUT))
    fuse_lora(fused)
    x = x_of()
    eager = run(fused, x)
    torch._dynamo.reset()
    assert_same(run(torch.compile(fused, backend="inductor"), x), eager, 1e-5)


# --- bitsandbytes 4-bit base -------------------------------------------------------------------------------------

def linear_4bit(device: str):
    bnb = pytest.importorskip("bitsandbytes")
    torch.manual_seed(0)
    dense = torch.nn.Linear(IN, OUT, dtype=torch.bfloat16)
    q = bnb.nn.Linear4bit(IN, OUT, compute_dtype=torch.bfloat16, quant_type="nf4")
    try:
        q.weight = bnb.nn.Params4bit(dense.weight.data, requires_grad=False, quant_type="nf4").to(device)
        q.bias = torch.nn.Parameter(dense.bias.data.to(device), requires_grad=False)
        q(torch.randn(2, IN, dtype=torch.bfloat16, device=device))
    except Exception as err:  # noqa: BLE001 - whatever the installed bitsandbytes can't do on this device
        pytest.skip(f"bitsandbytes {bnb.__version__} has no working 4-bit ops on {device}: {err}")
    return q


def lora_4bit(device: str):
    from peft import LoraConfig, get_peft_model

    wrap = Wrap(linear_4bit(device))
    wrap.is_loaded_in_4bit = True  # peft reads it to wrap the layer with its 4-bit LoRA
    inner = get_peft_model(wrap, LoraConfig(r=R, lora_alpha=2 * R, target_modules=["proj"], lora_dropout=0.0),
                           autocast_adapter_dtype=False).base_model.model
    assert type(inner.proj).__name__ == "Linear4bit"
    with torch.no_grad():
        inner.proj.lora_B["default"].weight.normal_()
    return inner


def check_4bit(device: str, compile_backend=None):
    import bitsandbytes.functional as bnbf

    peft_mod = lora_4bit(device)
    fused = copy.deepcopy(peft_mod)
    assert fuse_lora(fused) == {"fused": 1, "skipped": {}}
    x = x_of(dtype=torch.bfloat16).to(device)
    out = fused(x.clone().requires_grad_())
    assert graph_has(out, "FusedLinearLora")
    saved = [t for t in out.grad_fn.next_functions[0][0].saved_tensors if t.dtype.is_floating_point]
    assert all(t.shape != (OUT, IN) for t in saved), "the dequantised weight is kept for the backward"
    got, ref = run(fused, x), run(peft_mod, x)
    assert_same(got, ref, 2e-2)
    # and against exact arithmetic over the dequantised weight
    w = bnbf.dequantize_4bit(fused.proj.base_layer.weight.data, fused.proj.base_layer.weight.quant_state).double()
    lora = fused.proj
    a, b = lora.lora_A["default"].weight.double(), lora.lora_B["default"].weight.double()
    exact = x.double() @ w.t() + lora.base_layer.bias.double() + 2.0 * (x.double() @ a.t()) @ b.t()
    assert rel(got[0], exact) < 1e-2
    if compile_backend:
        torch._dynamo.reset()
        assert_same(run(torch.compile(fused, backend=compile_backend), x), got, 1e-2)


def test_4bit_base_cpu():
    check_4bit("cpu", compile_backend="aot_eager")


# --- GPU ---------------------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_bf16_matches_peft_and_compiles():
    peft_mod = lora_linear(dtype=torch.bfloat16).cuda()
    fused = copy.deepcopy(peft_mod)
    fuse_lora(fused)
    x = x_of(dtype=torch.bfloat16).cuda()
    got = run(fused, x)
    assert_same(got, run(peft_mod, x), 2e-2)
    torch._dynamo.reset()
    assert_same(run(torch.compile(fused), x), got, 2e-2)


@pytest.mark.gpu
def test_gpu_4bit_base():
    pytest.importorskip("bitsandbytes")  # the GPU machine has it only when the wheel is carried
    check_4bit("cuda", compile_backend="inductor")


@pytest.mark.gpu
def test_gpu_model_under_autocast_compiled():
    model = tiny_peft().cuda()  # fp32 weights and adapters, bf16 autocast: the Trainer's bf16 amp
    fused = copy.deepcopy(model)
    fuse_lora(fused)
    for layer in fused.base_model.model.model.layers:
        layer.compile()
    ids = torch.randint(0, 128, (2, M), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        (logits, grads), (ref_logits, ref_grads) = run_model(fused, ids), run_model(model, ids)
    assert rel(logits, ref_logits) < 2e-2
    for name in grads:
        assert grads[name].dtype == torch.float32 and rel(grads[name], ref_grads[name]) < 5e-2, name
