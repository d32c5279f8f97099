"""Speed and memory levers: each is a config option that does what it says (on the CPU where it can run)."""
import importlib.util
import weakref
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

from src.data import collate
from src.machine import env
from src.model import build as models
from src.config.errors import ConfigError
from src.config.schema import validate
from src.config.training import uses_cuda_graphs
from src.run import run
from tests.conftest import QUICK, compose


def _model(*overrides):
    cfg = compose(*overrides)
    res = env.resolve(cfg)
    torch.manual_seed(0)
    return models.build_model(cfg, res, models.hf_config(cfg)), res


@pytest.mark.parametrize("adapter_dtype, expected", [("float32", torch.float32), ("auto", torch.bfloat16)])
def test_adapter_dtype_keeps_lora_in_fp32_or_in_the_weights_dtype(adapter_dtype, expected):
    model, _ = _model("precision=bf16", f"peft.adapter_dtype={adapter_dtype}")
    lora = [p for n, p in model.named_parameters() if "lora_" in n]
    assert lora and all(p.dtype == expected for p in lora)
    base = [p for n, p in model.named_parameters() if n.endswith("q_proj.base_layer.weight")]
    assert base and all(p.dtype == torch.bfloat16 for p in base)


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_sequences_attend_only_within_themselves(attention):
    """padding=packed puts several sequences in one row: their logits must equal each sequence run alone."""

    opts = ("task=causal_lm", "padding=packed", "peft=none", "precision=fp32", f"attention={attention}")
    cfg = compose(*opts)
    model, _ = _model(*opts)
    model.eval()
    seqs = [torch.randint(3, 1000, (n,), generator=torch.Generator().manual_seed(n)).tolist() for n in (7, 12, 5)]
    batch = collate.build_collator(cfg, pad_id=0)([{"input_ids": s} for s in seqs])
    inputs = {k: v for k, v in collate.to_device(batch, "cpu").items() if k != "labels"}  # what the Trainer feeds the model
    with torch.no_grad():
        together = model(**inputs).logits[0, :sum(map(len, seqs))]  # the real tokens; the dummy tail follows
        alone = torch.cat([model(input_ids=torch.tensor([s])).logits[0] for s in seqs])
    assert torch.allclose(together, alone, atol=1e-4)


def test_partial_checkpointing_recomputes_every_kth_layer_only(tmp_path):
    calls: dict[int, int] = {}

    class CountForwards:
        def on_train_begin(self, args, state, control, model=None, **kw):
            from transformers.modeling_layers import GradientCheckpointingLayer

            layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
            # The MLP runs inside the (re)computed forward (the layer's own hooks stay outside the checkpoint);
            # a pre-hook, because the recompute stops early, inside the MLP, once the last saved tensor is back.
            for i, layer in enumerate(layers):
                layer.mlp.register_forward_pre_hook(lambda *a, i=i: calls.__setitem__(i, calls.get(i, 0) + 1))

        def __getattr__(self, name):  # every other Trainer event: nothing to do
            return lambda *a, **k: None

    cfg = compose(*QUICK, "trainer.max_steps=3", "measure.warmup_steps=1", "diagnostics.enabled=false",
                  "model.arch.num_hidden_layers=4", "trainer.gradient_checkpointing=true", "trainer.checkpoint_every=2")
    rep = run(cfg, tmp_path, callbacks=(CountForwards(),))
    assert rep["status"] == "ok", rep["error"]
    # 3 steps: a recomputed layer runs forward twice per step (forward, then again in backward)
    assert calls == {0: 6, 1: 3, 2: 6, 3: 3}


def test_torch_compile_trains_with_a_bounded_recompile_budget(tmp_path):
    cfg = compose(*QUICK, "trainer.torch_compile=true", "trainer.compile_backend=aot_eager", "trainer.recompile_limit=4",
                  "padding=max_length", "diagnostics.enabled=false")
    rep = run(cfg, tmp_path)
    assert rep["status"] == "ok", rep["error"]
    import torch._dynamo

    dyn = torch._dynamo.config
    assert getattr(dyn, "recompile_limit", getattr(dyn, "cache_size_limit", None)) == 4
    assert rep["loss"]["final"] < rep["loss"]["initial"] + 0.5


@pytest.mark.parametrize("args, message", [
    (["trainer.use_liger_kernel=true"], "Triton kernels for CUDA GPUs"),
    (["attention=flex_attention"], "flex_attention runs on CUDA GPUs"),
    (["trainer.compile_mode=fast"], "trainer.compile_mode"),
    (["peft.adapter_dtype=float16"], "peft.adapter_dtype"),
    (["trainer.checkpoint_every=0"], "trainer.checkpoint_every"),
])
def test_levers_the_cpu_cannot_use_are_config_errors(args, message):
    with pytest.raises(ConfigError, match=message):
        validate(compose(*args), cuda_available=False)


def test_buckets_bound_the_batch_shapes_to_five():
    from src.model import build as models

    cfg = compose("padding=buckets")
    collator = collate.collator_for(cfg, models.hf_config(cfg))
    gen = torch.Generator().manual_seed(0)
    widths = set()
    for _ in range(50):
        lengths = torch.randint(40, 288, (8,), generator=gen).tolist()
        batch = collator([{"input_ids": [5] * n, "labels": 1} for n in lengths])
        widths.add(batch["input_ids"].shape[1])
        assert batch["attention_mask"].sum().item() == sum(lengths)
    assert widths <= {64, 128, 192, 256, 320} and len(widths) >= 2


def test_bf16_adapters_cast_far_less_than_fp32_ones():
    """peft's fp32 adapters under bf16 autocast cast every adapter's input up and back down (benchmarks/casts.py)."""
    from benchmarks.casts import casts_per_step

    fp32, bf16 = casts_per_step("float32"), casts_per_step("auto")
    assert bf16 < fp32 / 2, (bf16, fp32)


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
@pytest.mark.parametrize("model_type, extra", [("llama", {"tie_word_embeddings": True}), ("gpt_neox", {"rotary_pct": 0.25})])
@pytest.mark.parametrize("auto_class", [AutoModelForCausalLM, AutoModelForSequenceClassification])
def test_random_init_qlora_is_built_one_layer_at_a_time_with_the_models_own_init(model_type, extra, auto_class, monkeypatch):
    """The 4-bit base is laid out on the meta device and each layer made, initialised and quantised in turn (on a
    GPU the peak is the 4-bit model plus one layer: tests/test_gpu.py). The result must be the model a full-width
    build gives: the same buffers (rotary frequencies), the config's init scale, a tied head still tied."""
    import bitsandbytes as bnb
    from transformers import AutoConfig

    conf = AutoConfig.for_model(model_type, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, vocab_size=300, pad_token_id=0, num_labels=5, **extra)
    res = SimpleNamespace(device="cpu", weights_dtype=torch.bfloat16, attention="sdpa")
    peft = SimpleNamespace(compute_dtype="bfloat16", double_quant=True, quant_type="nf4")
    made = []  # each full-width weight as it is quantised: every earlier one must be gone by then

    def one_layer_at_a_time(bnb, linear, *args):
        assert all(ref() is None for ref in made), "an earlier layer's full-width weight is still alive"
        made.append(weakref.ref(linear.weight))
        return quantise(bnb, linear, *args)

    quantise = models._linear_4bit
    monkeypatch.setattr(models, "_linear_4bit", one_layer_at_a_time)
    model = models.build_4bit(auto_class, conf, res, peft)
    assert len(made) > 1 and all(ref() is None for ref in made)
    full = auto_class.from_config(conf, dtype=torch.bfloat16)

    four_bit = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(four_bit) == sum(isinstance(m, torch.nn.Linear) for m in full.modules()) - 1  # all but the head
    assert not any(p.is_meta for p in model.parameters())
    assert dict(model.named_buffers()).keys() == dict(full.named_buffers()).keys()
    for (name, built), (_, ref) in zip(model.named_buffers(), full.named_buffers()):
        assert torch.equal(built, ref), name
    weight = bnb.functional.dequantize_4bit(four_bit[0].weight.data, four_bit[0].weight.quant_state)
    assert weight.float().std().item() == pytest.approx(conf.initializer_range, rel=0.15)
    assert model.get_input_embeddings().weight.float().std().item() == pytest.approx(conf.initializer_range, rel=0.15)
    if auto_class is AutoModelForCausalLM:  # a tied LM head was made apart from its embedding: tied again after
        tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
        assert tied == conf.tie_word_embeddings
    logits = model(input_ids=torch.randint(0, 300, (2, 7))).logits
    assert torch.isfinite(logits).all() and logits.float().std() > 0


def test_fused_lora_trains_as_peft_does_and_the_report_counts_its_layers(tmp_path):
    """peft.fused=true: the same losses step by step (fp32 on the CPU), every LoRA linear fused, and a layer with
    dropout left on peft's path is counted, not failed."""
    def losses(*overrides, out):
        rep = run(compose(*QUICK, "precision=fp32", "trainer.save_final=false", *overrides), tmp_path / out)
        assert rep["status"] == "ok", rep["error"]
        return rep
    plain = losses(out="plain")
    fused = losses("peft.fused=true", out="fused")
    layers = 7 * fused["config"]["model"]["arch"]["num_hidden_layers"]
    assert fused["speed_paths"] == {"fused_lora": {"fused": layers, "skipped": {}}} and plain["speed_paths"] == {}
    assert fused["loss"]["initial"] == pytest.approx(plain["loss"]["initial"], rel=1e-5)
    assert fused["loss"]["final"] == pytest.approx(plain["loss"]["final"], rel=1e-4)
    dropped = losses("peft.fused=true", "peft.dropout=0.1", out="dropout")
    assert dropped["speed_paths"]["fused_lora"]["fused"] == 0
    assert sum(dropped["speed_paths"]["fused_lora"]["skipped"].values()) == layers


def test_the_small_batch_preset_is_whole_model_cuda_graphs_on_2k_packs():
    cfg = compose("experiment=small_batch_fastest")
    assert (cfg.padding.strategy, cfg.batch.tokens, cfg.trainer.compile_scope, cfg.trainer.compile_mode, cfg.peft.fused) == \
        ("packed", 2048, "model", "reduce-overhead", False)  # the fused linear tied on the step, started later
    assert uses_cuda_graphs(cfg.trainer)
    validate(cfg, cuda_available=True)
    validate(cfg, cuda_available=False)  # torch skips the graphs on a CPU and says so; the run still trains
    with pytest.raises(ConfigError, match="compile_scope=model"):  # the one setting it must not lose
        validate(compose("experiment=small_batch_fastest", "trainer.compile_scope=regional"), cuda_available=True)


def test_the_fastest_preset_validates_for_a_gpu_and_is_refused_on_a_cpu():
    cfg = compose("experiment=fastest")
    assert (cfg.precision.fp8, cfg.peft.fused, cfg.trainer.torch_compile, cfg.padding.strategy, cfg.batch.tokens) == \
        ("rowwise", True, True, "packed", "auto")
    validate(cfg, cuda_available=True)
    with pytest.raises(ConfigError, match="FP8 matmuls need a CUDA GPU"):
        validate(cfg, cuda_available=False)
    validate(compose("experiment=fastest", "precision=bf16"), cuda_available=False)  # the older card's variant
    # sweep=levers' fp8_fused job is this preset at the reference's 8k, so the sweep isolates FP8 + fused
    # (tests/test_experiments.py checks each lever's keys)
    fp8_fused = compose("sweep=levers", "+lever=fp8_fused")
    assert all(fp8_fused[g] == cfg[g] for g in ("precision", "peft", "padding")) and fp8_fused.batch.tokens == 8192


@pytest.mark.parametrize("one_graph, graphs", [(False, 2), (True, 1)])
def test_compile_one_graph_compiles_one_layer_graph_and_changes_no_gradient(one_graph, graphs):
    """Under LoRA the first layer's input needs no grad, and torch guards on it: two layer graphs. One graph takes
    that guard away (the embeddings' output requires grad); the trainable gradients stay bit for bit."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from src.model import speed

    def grads(compile_one_graph):
        model, _ = _model("model.arch.num_hidden_layers=3", "precision=fp32")
        model.train()
        if compile_one_graph is not None:
            speed.compile_regions(model, SimpleNamespace(compile_backend="aot_eager", compile_mode=None,
                                                         compile_one_graph=compile_one_graph))
        batch = {"input_ids": torch.randint(3, 100, (2, 12), generator=torch.Generator().manual_seed(1)),
                 "labels": torch.tensor([0, 1])}
        model(**batch).loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}

    eager = grads(None)
    torch._dynamo.reset()
    counters.clear()
    compiled = grads(one_graph)
    assert counters["stats"]["unique_graphs"] == graphs
    assert eager.keys() == compiled.keys()
    assert all(torch.equal(eager[n], compiled[n]) for n in eager)


def test_compile_layers_once_compiles_one_layer_graph_for_every_layer_and_changes_no_gradient():
    """trainer.compile_layers_once: under a whole-model compile every decoder layer calls one subgraph (torch's
    nested compile region) instead of being inlined apart; the trainable gradients stay bit for bit eager's, and
    an eager forward (the checks') runs as before."""
    import torch._dynamo

    from src.model import speed

    batch = {"input_ids": torch.randint(3, 100, (2, 12), generator=torch.Generator().manual_seed(1)),
             "labels": torch.tensor([0, 1])}

    def grads(model, run):
        model.zero_grad(set_to_none=True)
        run(**batch).loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}

    model, _ = _model("model.arch.num_hidden_layers=4", "precision=fp32")
    model.train()
    eager = grads(model, model)
    assert speed.compile_layers_once(model) == 4
    assert all(torch.equal(a, b) for a, b in zip(eager.values(), grads(model, model).values()))  # eager: a no-op
    graphs = []

    def backend(gm, example_inputs):  # aot_eager, the graph it gets kept to read
        from torch._dynamo.backends.debugging import aot_eager

        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    torch._dynamo.reset()
    compiled = grads(model, torch.compile(model, backend=backend))
    calls = [n.args[1] for gm in graphs for n in gm.graph.nodes if n.target is torch.ops.higher_order.invoke_subgraph]
    # one whole-model graph; every layer after the first calls the same subgraph, compiled once. The first layer's
    # input needs no grad under LoRA (frozen embeddings), so it is a graph of its own (torch 2.11) or inlined (2.13)
    assert len(graphs) == 1 and len(calls) in (3, 4) and len(set(calls[-3:])) == 1
    assert eager.keys() == compiled.keys()
    assert all(torch.equal(eager[n], compiled[n]) for n in eager)


def test_compile_layers_once_is_refused_without_decoder_layers():
    from src.config.errors import ConfigError
    from src.model import speed

    with pytest.raises(ConfigError, match="trainer.compile_layers_once=True: no decoder layers found in Linear"):
        speed.compile_layers_once(torch.nn.Linear(2, 2))


@pytest.mark.slow  # ~43 s on CI's two cores: the option loses and stays off; its unit test above stays in make test
def test_a_run_with_compile_layers_once_trains_and_says_so(tmp_path):
    """The runner marks the layers after the memory model's copies and before the Trainer compiles the whole model;
    the report's speed paths say how many layers it marked (whether torch used each region, its graphs say)."""
    from src.run import run
    from tests.conftest import QUICK

    rep = run(compose(*QUICK, "trainer.torch_compile=true", "trainer.compile_scope=model",
                      "trainer.compile_backend=aot_eager", "trainer.compile_layers_once=true"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    assert rep["speed_paths"]["layers_compiled_once"] == {"converted": rep["config"]["model"]["arch"]["num_hidden_layers"]}
    assert "nested compile regions marked in 2 layers" in (tmp_path / "report.md").read_text()
