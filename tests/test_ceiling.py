"""The card's own GEMM ceiling (src/machine/ceiling.py) and the shapes it is measured at (src/model/flops.py), and
where a profiled step's GPU time went (src/measure/timing.py's kernel kinds)."""
import pytest
import torch

from src.machine import ceiling
from src.measure.timing import kernel_kind
from src.model import build as models
from src.model import flops
from tests.conftest import compose


def test_the_ceiling_shapes_are_the_base_matmuls_without_lora_adapters():
    cfg = compose("peft=lora")
    model = models.build_model(cfg, models.Resolved("cpu", torch.float32, "none", "sdpa"), models.hf_config(cfg))
    shapes = flops.matmul_shapes(model)
    conf = model.config
    layers, hidden = conf.num_hidden_layers, conf.hidden_size
    frozen = [s for s in shapes if not s[3]]
    assert sum(count for _, _, count, _, _ in frozen) == 7 * layers  # q k v o gate up down per layer; no lora_A/B
    assert (hidden, conf.intermediate_size, 2 * layers, False, False) in shapes  # gate and up
    assert all(not fp8 for *_, fp8 in shapes)
    assert [(k, n, c) for k, n, c, trained, _ in shapes if trained] == [(hidden, conf.num_labels, 1)]  # the head


@pytest.mark.parametrize("overrides,tokens", [
    (("padding=packed", "batch.tokens=8192"), 8192),
    (("padding=max_length", "batch=8"), 8 * 320),
    (("padding=dynamic", "batch=8"), 8 * 211),
])
def test_a_micro_batch_is_its_budget_or_its_rows_times_their_width(overrides, tokens):
    assert flops.micro_batch_tokens(compose(*overrides), {"mean": 211.0}) == tokens


@pytest.mark.parametrize("name,kind", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "gemm"),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT", "gemm"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>", "attention"),
    ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", "elementwise"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>", "optimizer"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "communication"),
    ("some_new_kernel", "other"),
])
def test_kernels_fall_into_their_kind_by_name(name, kind):
    assert kernel_kind(name) == kind


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_ceiling_is_below_the_cards_peak_and_cached(tmp_path, monkeypatch):
    from src.base import files as disk

    monkeypatch.setattr(disk, "CACHE", tmp_path)
    shapes = [(2560, 4096, 36, False, False), (2560, 9728, 72, False, False), (9728, 2560, 36, False, False)]
    first = ceiling.cached(shapes, 8192)
    again = ceiling.cached(shapes, 8192)
    peak = flops.peak_tflops(torch.cuda.get_device_name(), "bf16")
    assert not first["cached"] and again["cached"] and again["tflops"] == first["tflops"]
    assert 0.3 * peak < first["tflops"] < peak  # no real GEMM reaches the datasheet's peak
    assert first["tokens_per_s"] == pytest.approx(first["tflops"] * 1e12 / sum(4 * k * n * c for k, n, c, _, _ in shapes))
