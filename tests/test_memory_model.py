"""The memory model: traced activation bytes scale with tokens and layers as autograd really keeps them."""
import torch

from src import env, memory_model, models
from tests.conftest import compose


def _setup(*overrides):
    cfg = compose(*overrides)
    res = env.resolve(cfg)
    return cfg, res, models.hf_config(cfg)


def test_traced_activations_match_a_full_forward_of_the_real_depth():
    cfg, res, conf = _setup("model.arch.num_hidden_layers=4", "peft=none")
    acts = memory_model.trace_activations(cfg, res, conf)
    torch.manual_seed(0)
    model = models.build_model(cfg, res, conf).train()
    for tokens in (96, 200):
        batch = memory_model._batch("classification", tokens, "cpu", conf.num_labels)
        real = memory_model._saved_bytes(model, batch, res.amp, "cpu")
        predicted = (acts["per_token_per_layer"] * 4 + acts["per_token_outside"]) * tokens \
            + acts["fixed_per_layer"] * 4 + acts["fixed_outside"]
        assert abs(predicted / real - 1) < 0.02, (tokens, predicted, real)


def test_checkpointing_keeps_far_fewer_activations_per_layer():
    cfg, res, conf = _setup()
    plain = memory_model.trace_activations(cfg, res, conf)["per_token_per_layer"]
    cfg_ckpt, _, _ = _setup("trainer.gradient_checkpointing=true")
    kept = memory_model.trace_activations(cfg_ckpt, res, conf)["per_token_per_layer"]
    hidden_bytes = conf.hidden_size * 4  # fp32 on the CPU: each layer keeps about its input
    assert kept < plain / 4 and kept <= 2 * hidden_bytes


def test_predict_adds_weights_state_activations_and_widest_batch():
    cfg, res, conf = _setup("batch=16", "padding=dynamic")
    model = models.build_model(cfg, res, conf)
    widest = memory_model.widest_tokens(cfg, {"max": 283})
    assert widest == 16 * 288  # dynamic pads to a multiple of 8
    assert memory_model.widest_tokens(compose("padding=max_length", "batch=4"), {"max": 283}) == 4 * 320
    pred = memory_model.predict(cfg, res, conf, model, widest)
    trainable = sum(p.numel() * 4 for p in model.parameters() if p.requires_grad)
    assert pred["parts"]["grads"] * 2**30 == trainable and pred["parts"]["optimizer"] * 2**30 == 2 * trainable
    assert pred["peak_allocated"] == sum(pred["parts"].values())
    assert pred["parts"]["activations"] > 0


def test_checkpointing_every_second_layer_predicts_between_none_and_all():
    def predicted(*overrides):
        cfg, res, conf = _setup("model.arch.num_hidden_layers=4", *overrides)
        model = models.build_model(cfg, res, conf)
        return memory_model.predict(cfg, res, conf, model, 1024)["parts"]["activations"]

    none, half = predicted(), predicted("trainer.gradient_checkpointing=true", "trainer.checkpoint_every=2")
    every = predicted("trainer.gradient_checkpointing=true")
    assert every < half < none  # 4 layers: 2 kept in full + 1 recomputed < 4 in full
