"""The second job at a shape reads the first one's compiled graphs: a compiled LoRA layer whose linears are our
torch.autograd.Functions (the fused LoRA linear here; FP8's matmul is one too) hits torch's AOTAutograd cache once
src/machine/env.py has set a run up, where torch's default bypasses it. A changed backward must miss, and the
gradients must be the same bit for bit whether the graph was traced or read back."""
import pytest
import torch

from src.machine import env
from tests.conftest import compose


def _layer_grads(seed: int = 0) -> tuple[dict, dict]:
    """A one-layer Qwen3 classifier under fused LoRA, its decoder layer compiled by inductor, one forward and
    backward from a fresh dynamo: (the AOTAutograd cache's counters for it, every trainable gradient)."""
    from peft import LoraConfig, get_peft_model
    from torch._dynamo.utils import counters
    from transformers import Qwen3Config, Qwen3ForSequenceClassification

    from src.model.fused_lora import fuse_lora

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(seed)
    config = Qwen3Config(hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1,
                         head_dim=16, num_hidden_layers=1, vocab_size=100, num_labels=4, pad_token_id=0,
                         use_cache=False)
    model = get_peft_model(Qwen3ForSequenceClassification(config),
                           LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"], task_type="SEQ_CLS"))
    for name, p in model.named_parameters():
        if "lora_B" in name:  # B starts at zero: a nonzero one makes every adapter gradient count
            torch.nn.init.normal_(p, std=0.02)
    assert fuse_lora(model)["fused"] == 3
    model.enable_input_require_grads()
    for layer in model.base_model.model.model.layers:
        layer.compile(backend="inductor")
    ids = torch.randint(1, 100, (2, 16), generator=torch.Generator().manual_seed(1))
    model(input_ids=ids, labels=torch.tensor([1, 2])).loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    torch._dynamo.reset()
    return dict(counters["aot_autograd"]), grads


@pytest.fixture(autouse=True)
def compile_cache(tmp_path, monkeypatch):
    """Each test: a fresh inductor and Triton cache (env.apply sets both where unset), torch's flag off as it is
    by default, and both put back after it for the other tests of this worker."""
    from torch._functorch import config as functorch

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.delenv("TORCHINDUCTOR_AUTOGRAD_CACHE_ALLOW_CUSTOM_AUTOGRAD", raising=False)
    with functorch.patch(autograd_cache_allow_custom_autograd_functions=False):
        yield


def test_a_compiled_run_caches_graphs_that_hold_our_autograd_functions(monkeypatch):
    from src.model import fused_lora

    cold, traced = _layer_grads()
    assert cold.get("autograd_cache_bypass") and not cold.get("autograd_cache_hit")  # torch's default: bypassed

    env.apply(compose("logger=none", "trainer.torch_compile=true"))  # what every compiled run does first
    first, _ = _layer_grads()
    again, read_back = _layer_grads()
    assert first.get("autograd_cache_miss") and not first.get("autograd_cache_bypass")
    assert again.get("autograd_cache_hit") and not again.get("autograd_cache_miss")
    assert traced.keys() == read_back.keys() and all(torch.equal(traced[n], read_back[n]) for n in traced)

    # the key holds the Function's traced backward: a changed one is a miss, never the old graph read back
    backward = fused_lora.FusedLinearLora.backward

    def doubled_adapter_grads(ctx, dy):
        out = list(backward(ctx, dy))
        out[3] = out[3] * 2 if out[3] is not None else None
        return tuple(out)

    monkeypatch.setattr(fused_lora.FusedLinearLora, "backward", staticmethod(doubled_adapter_grads))
    changed, doubled = _layer_grads()
    assert changed.get("autograd_cache_miss") and not changed.get("autograd_cache_hit")
    a_grads = [n for n in doubled if "lora_A" in n]
    assert a_grads and all(torch.allclose(doubled[n], 2 * traced[n]) for n in a_grads)


def test_the_environment_still_turns_it_off(monkeypatch):
    """torch reads TORCHINDUCTOR_AUTOGRAD_CACHE_ALLOW_CUSTOM_AUTOGRAD over any setting: a user's 0 wins."""
    from torch._functorch import config as functorch

    with functorch.patch(autograd_cache_allow_custom_autograd_functions=False):
        env.apply(compose("logger=none", "trainer.torch_compile=true"))
        assert functorch.autograd_cache_allow_custom_autograd_functions is True
    cfg = functorch._config["autograd_cache_allow_custom_autograd_functions"]
    monkeypatch.setattr(cfg, "env_value_force", False)  # what the variable set to 0 at torch's import gives
    with functorch.patch(autograd_cache_allow_custom_autograd_functions=False):
        env.apply(compose("logger=none", "trainer.torch_compile=true"))
        assert functorch.autograd_cache_allow_custom_autograd_functions is False


def test_compile_workers_start_early_and_a_failure_only_says_so(monkeypatch, capsys):
    """trainer.compile_workers_early: torch's own pool warm-up, called at the run's start; torch's private API
    failing there costs the head start, not the run."""
    from torch._inductor import async_compile

    calls = []
    monkeypatch.setattr(async_compile, "maybe_warm_pool", lambda: calls.append(1))
    env.start_compile_workers()
    assert calls == [1]

    def broken():
        raise RuntimeError("no pool today")

    monkeypatch.setattr(async_compile, "maybe_warm_pool", broken)
    env.start_compile_workers()
    assert "not started early (RuntimeError: no pool today)" in capsys.readouterr().err


@pytest.mark.parametrize("overrides, started", [
    (["trainer.torch_compile=true", "trainer.compile_workers_early=true"], True),
    (["trainer.torch_compile=true"], False),  # the default: off (it lost)
    (["trainer.compile_workers_early=true"], False),  # nothing compiles
    (["trainer.torch_compile=true", "trainer.compile_workers_early=true", "trainer.compile_backend=aot_eager"], False)])
def test_a_gpu_run_starts_compile_workers_only_when_asked_and_compiling(overrides, started, monkeypatch):
    from dataclasses import replace

    from torch._inductor import async_compile

    calls = []
    monkeypatch.setattr(async_compile, "maybe_warm_pool", lambda: calls.append(1))
    resolve = env.resolve
    monkeypatch.setattr(env, "resolve", lambda cfg: replace(resolve(cfg), device="cuda"))
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: None)
    monkeypatch.setattr(env, "cap_memory", lambda cap: None)
    env.setup(compose("logger=none", *overrides))
    assert calls == ([1] if started else [])


def test_trainer_inductor_options_hold_for_the_run_and_no_longer(tmp_path, monkeypatch):
    """trainer.inductor patches torch._inductor.config around one run (every compile of it, probes included);
    the next run in the process (a sweep's jobs under Hydra's basic launcher) compiles under torch's own."""
    import torch._inductor.config as inductor_config
    from transformers import TrainerCallback

    from src.model import speed
    from src.run import run
    from tests.conftest import QUICK

    monkeypatch.setattr(speed, "compile_regions", lambda model, tr: 0)  # where the options hold, not torch's kernels
    before = (inductor_config.coordinate_descent_tuning, inductor_config.max_fusion_size)
    seen = []

    class Peek(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            seen.append((inductor_config.coordinate_descent_tuning, inductor_config.max_fusion_size))

    rep = run(compose(*QUICK, "trainer.torch_compile=true", "trainer.inductor.coordinate_descent_tuning=true",
                      "trainer.inductor.max_fusion_size=32"), tmp_path, callbacks=(Peek(),))
    assert rep["status"] == "ok" and set(seen) == {(True, 32)} and len(seen) == 4
    assert (inductor_config.coordinate_descent_tuning, inductor_config.max_fusion_size) == before == (False, 64)


def test_code_compiled_under_a_runs_inductor_options_is_not_reused_after_it():
    """dynamo keeps compiled code across a process's runs without checking inductor's options: the options' context
    clears its caches as they take hold and as they go, also when the run raises, so the next job compiles anew."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    from src.model import speed

    def double(x):
        return x * 2

    compiled = torch.compile(double, backend="eager")
    compiled(torch.ones(2))  # compiled before the run: cleared as the options take hold
    tr = compose("trainer.torch_compile=true", "trainer.inductor.max_fusion_size=32").trainer
    with pytest.raises(RuntimeError, match="the run failed"):
        with speed.inductor_options(tr):
            assert not _debug_get_cache_entry_list(double.__code__)
            compiled(torch.ones(2))
            assert len(_debug_get_cache_entry_list(double.__code__)) == 1
            raise RuntimeError("the run failed")
    assert not _debug_get_cache_entry_list(double.__code__)
    with speed.inductor_options(compose("trainer.torch_compile=true").trainer):  # no options: dynamo left alone
        compiled(torch.ones(2))
    assert len(_debug_get_cache_entry_list(double.__code__)) == 1
    torch._dynamo.reset()
