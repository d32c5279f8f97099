"""The card's own GEMM ceiling (src/machine/ceiling.py) and the shapes it is measured at (src/model/flops.py), and
where a profiled step's GPU time went (src/measure/kernels.py's kernel kinds)."""
import pytest
import torch

from src.machine import ceiling
from src.measure.kernels import attention_family, kernel_kind, kernel_shares, top_kernels
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
    # inductor's kernels fused around FP8's quantisation and flash attention's backward, as an H200's profiler named
    # them: elementwise whatever ops their names list; its matmul templates are GEMMs
    ("triton_red_fused__scaled_mm__to_copy_abs_add_amax_clamp_mul_reciprocal_silu_t_view_7", "elementwise"),
    ("triton_poi_fused__scaled_dot_product_flash_attention_backward_add_transpose_view_3", "elementwise"),
    ("triton_tem_fused_addmm_mm_0", "gemm"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>", "optimizer"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "communication"),
    ("some_new_kernel", "other"),
])
def test_kernels_fall_into_their_kind_by_name(name, kind):
    assert kernel_kind(name) == kind


# cuDNN's and flash's names as the H100's profiler gave them (benchmarks/attention_bench.py); the memory-efficient
# one as PyTorch's cutlass kernels are named; FlashAttention-3's from its kernel class
# (hopper/flash_fwd_kernel_sm90.h), not seen on a card here (not installed)
@pytest.mark.parametrize("name,family", [
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1_cga1x1", "cuDNN"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>", "flash"),
    ("fmha_cutlassB_bf16_aligned_64x64_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<...>)", "memory-efficient"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>", "FlashAttention-3"),
])
def test_attention_kernels_name_the_implementation_that_ran(name, family):
    assert kernel_kind(name) == "attention" and attention_family(name) == family


def test_kernel_shares_count_overlapping_kernels_once_and_split_attention_by_implementation():
    ms = 1_000_000  # ns
    cudnn = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"
    rows = [(0, 2 * ms, "attention", cudnn), (1 * ms, 3 * ms, "attention", cudnn),  # overlapping: 3 ms, not 4
            (4 * ms, 5 * ms, "attention", "void pytorch_flash::flash_fwd_kernel<>"),
            (5 * ms, 9 * ms, "gemm", "nvjet_hsh_256x128")]
    kinds, attention = kernel_shares(rows, wall=0.010)
    assert kinds["attention"] == pytest.approx(0.4) and kinds["gemm"] == pytest.approx(0.4)
    assert kinds["elementwise"] == 0.0
    assert attention == pytest.approx({"cuDNN": 0.3, "flash": 0.1})


def test_top_kernels_sum_each_names_time_per_step_costliest_first():
    ms = 1_000_000  # ns
    norm = "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"
    rows = [(0, 3 * ms, "gemm", "nvjet_hsh_256x128"), (3 * ms, 4 * ms, "elementwise", norm),
            (4 * ms, 6 * ms, "elementwise", norm), (6 * ms, 7 * ms, "copy", "Memcpy HtoD"),
            (10 * ms, 13 * ms, "gemm", "nvjet_hsh_256x128"), (13 * ms, 13 * ms + 500_000, "elementwise", norm),
            (20 * ms, 20 * ms + 10, "other", "x" * 500)]
    top = top_kernels(rows, steps=2, top=3)
    assert [row["name"] for row in top] == ["nvjet_hsh_256x128", norm, "Memcpy HtoD"]
    assert top[0] == {"name": "nvjet_hsh_256x128", "kind": "gemm", "ms": 3.0, "calls": 1.0}
    assert top[1]["ms"] == 1.75 and top[1]["calls"] == 1.5 and top[1]["kind"] == "elementwise"
    assert len(top_kernels(rows, steps=1)[-1]["name"]) == 160  # a templated name is cut, not carried whole


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
