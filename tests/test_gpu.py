"""CUDA-only paths: events, profiler busy share, NVML, bf16 auto, QLoRA. Skipped without a GPU."""
import importlib.util
import time

import pytest
import torch

from src.run import run
from tests.conftest import ROOT, cli, compose, read_report

pytestmark = pytest.mark.gpu
GPU_QUICK = ["trainer.max_steps=12", "measure.warmup_steps=3", "measure.profile_steps=2", "data.size=256"]


def test_tiny_run_on_gpu_measures_with_events_profiler_and_nvml(tmp_path):
    rep = run(compose(*GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    machine = {k: rep["resolved"][k] for k in ("device", "weights_dtype", "amp", "attention", "distributed", "world_size")}
    assert machine == {"device": "cuda", "weights_dtype": "bfloat16", "amp": "bf16", "attention": "sdpa",
                       "distributed": "none", "world_size": 1}  # the rest of `resolved` is the data's (num_labels)
    assert rep["step_time_s"]["n"] == 12 - 3 - 2
    assert 0 < rep["gpu_busy_fraction"] <= 1
    mem = rep["memory_gb"]
    assert 0 < mem["peak_allocated"] <= mem["peak_reserved"] < mem["capacity"]
    assert mem["device_used"] >= mem["peak_reserved"] * 0.9
    assert rep["flops"]["mfu"] > 0 and rep["flops"]["peak_tflops"] is not None
    bd = rep["breakdown_s"]
    assert bd["data"] + bd["compute"] + bd["optimizer"] + bd["other"] == pytest.approx(rep["step_time_s"]["mean"], rel=0.01)
    assert 0 <= bd["host"] <= rep["step_time_s"]["mean"]


def test_host_ops_say_what_the_host_launched_in_the_profiled_steps(tmp_path):
    rep = run(compose("measure.host_ops=true", *GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    ops = {row["op"]: row for row in rep["host_ops"]}
    assert ops["cudaLaunchKernel"]["calls"] > 10  # an eager tiny model launches its kernels one by one
    assert all(row["self_ms"] >= 0 and row["calls"] > 0 for row in rep["host_ops"])
    assert "host_ops" not in run(compose(*GPU_QUICK), tmp_path / "plain")  # off by default: the profile stays light


def test_the_report_names_the_attention_kernels_that_ran(tmp_path):
    """Packed rows attend through varlen's flash kernel; the profile says so by the kernels' names. (sdpa's own
    pick for padded rows depends on the torch build and card: on an H100 with torch 2.11, cuDNN.)"""
    rep = run(compose("padding=packed", "batch.tokens=2048", *GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    ran = rep["attention_kernels"]
    assert ran.get("flash", 0) > 0 and sum(ran.values()) == pytest.approx(rep["gpu_kernels"]["attention"], abs=0.02)
    padded = run(compose("attention=cudnn", *GPU_QUICK), tmp_path / "cudnn")
    assert padded["status"] == "ok", padded["error"]
    assert set(padded["attention_kernels"]) <= {"cuDNN", "flash", "memory-efficient"}


def test_the_report_names_the_costliest_kernels_and_inductors_count_as_elementwise(tmp_path):
    """top_kernels: the profiled step's costliest kernels by name; a compiled layer's own Triton kernels count as
    elementwise whatever ops their names list (inductor names a kernel fused around attention's backward after it)."""
    # one layer of Qwen3-4B's width: its fused SiLU kernels are among its costliest (the tiny model's may not be)
    rep = run(compose("model=qwen3", "model.arch.num_hidden_layers=1", "padding=packed", "batch.tokens=4096",
                      "trainer.torch_compile=true", *GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    top = rep["top_kernels"]
    assert 0 < len(top) <= 15 and [k["ms"] for k in top] == sorted((k["ms"] for k in top), reverse=True)
    inductor = [k for k in top if k["name"].startswith("triton_") and not k["name"].startswith("triton_tem_")]
    assert inductor and all(k["kind"] == "elementwise" for k in inductor) and any(k["kind"] == "gemm" for k in top)
    assert sum(k["ms"] for k in top) <= rep["step_time_s"]["mean"] * 1e3 * 1.05  # per step, not per profile


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
def test_qlora_quantises_random_weights_on_the_gpu_in_seconds(tmp_path):
    import bitsandbytes as bnb

    from src.machine import env
    from src.model import build as models

    cfg = compose("peft=qlora", "model=qwen3", "model.arch.num_hidden_layers=4")
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    model = models.build_model(cfg, env.resolve(cfg), models.hf_config(cfg))
    assert time.perf_counter() - t0 < 30
    four_bit = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(four_bit) == 4 * 7  # q, k, v, o, gate, up, down in every layer; the head stays bf16
    # built one layer at a time: the peak is the finished model plus one bf16 layer in flight, never the full width
    largest_layer = max(m.in_features * m.out_features for m in four_bit) * 2
    built = torch.cuda.memory_allocated() - before
    assert torch.cuda.max_memory_allocated() - before < built + 2 * largest_layer
    rep = run(compose("peft=qlora", *GPU_QUICK), tmp_path / "run")
    assert rep["status"] == "ok", rep["error"]


def test_fp16_frozen_base_with_lora(tmp_path):
    rep = run(compose("precision=fp16", *GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    assert rep["resolved"]["amp"] == "fp16"


def test_sweep_jobs_run_on_the_gpu(tmp_path):
    """Each sweep job is its own process; it must still see the GPU (submitit hides it unless told)."""
    proc = cli("-m", "batch=2,4", *GPU_QUICK, f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [read_report(p.parent) for p in tmp_path.glob("*/report.json")]
    assert len(reports) == 2 and all(r["resolved"]["device"] == "cuda" for r in reports)


two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")


@two_gpus
@pytest.mark.parametrize("strategy, peft", [("ddp", "lora"), ("fsdp", "none")])
def test_torchrun_on_two_gpus(tmp_path, strategy, peft):
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "-m", "src.run",
                           *GPU_QUICK, f"distributed={strategy}", f"peft={peft}", "logger=none", f"hydra.run.dir={tmp_path}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok" and rep["resolved"]["distributed"] == strategy and rep["env"]["world_size"] == 2
    assert len(rep["distributed"]["memory_per_rank"]) == 2
    assert rep["memory_gb"]["peak_allocated"] == max(m["peak_allocated"] for m in rep["distributed"]["memory_per_rank"])
    # the final save: under FSDP the full weights gathered onto rank 0 (a rank leaving early hung it on two H200s)
    assert rep["saved"]["kind"] == ("model" if peft == "none" else "adapter")
    assert any((tmp_path / "final").glob("*.safetensors"))


LEVERS = {  # each speed lever on its own, on a 4-layer model of Qwen3-4B's width (compile and build take seconds)
    "packed_varlen": ["padding=packed", "batch.tokens=4096"],
    "packed_varlen_compiled": ["padding=packed", "batch.tokens=4096", "trainer.torch_compile=true"],
    "packed_sdpa_reference": ["padding=packed", "batch.tokens=4096", "attention=sdpa"],
    "buckets": ["padding=buckets"],
    "max_length_compiled": ["padding=max_length", "trainer.torch_compile=true"],
    "whole_model_cuda_graphs": ["padding=max_length", "trainer.torch_compile=true", "trainer.compile_scope=model",
                                "trainer.compile_mode=reduce-overhead"],
    "whole_model_cuda_graphs_layers_once": ["padding=max_length", "trainer.torch_compile=true",
                                            "trainer.compile_scope=model", "trainer.compile_mode=reduce-overhead",
                                            "trainer.compile_layers_once=true"],
    "fp32_adapters": ["peft.adapter_dtype=float32"],
    "checkpointing_every_2nd": ["trainer.gradient_checkpointing=true", "trainer.checkpoint_every=2"],
    "liger": ["trainer.use_liger_kernel=true"],
    "qlora": ["peft=qlora"],
    "adapters_on_device": ["peft.adapters_on_device=true"],
}


@pytest.mark.parametrize("task", ["classification", "causal_lm"])
@pytest.mark.parametrize("lever", list(LEVERS))
def test_every_lever_trains_each_task_at_real_width(tmp_path, lever, task):
    needs = {"liger": "liger_kernel", "qlora": "bitsandbytes"}.get(lever)
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"needs {needs}")
    # Each in its own process, as a user runs it: in one pytest process, compiled graphs and CUDA-graph pools of
    # earlier tests keep their models allocated (2.1 GB after the compiled levers) and the peak carries them
    proc = cli("model=qwen3", "model.arch.num_hidden_layers=4", f"task={task}", "batch=8", "logger=none",
               *GPU_QUICK, *LEVERS[lever], f"hydra.run.dir={tmp_path}")
    rep = read_report(tmp_path)
    assert proc.returncode == 0 and rep["status"] == "ok", (rep["error"], proc.stderr[-2000:])
    assert rep["loss"]["final"] == rep["loss"]["final"] and rep["throughput"]["real_tokens_per_s"] > 0  # finite, measured
    if "batch.tokens=4096" in LEVERS[lever]:
        assert rep["shapes"]["distinct_in_window"] == 1 and rep["throughput"]["pad_fraction"] < 0.1
        assert rep["resolved"]["attention"] == ("sdpa" if lever == "packed_sdpa_reference" else "varlen")
    if "trainer.torch_compile=true" in LEVERS[lever]:
        assert rep["compile"]["graphs_in_window"] == 0  # no compile inside the timed window
    # The prediction is there and within goal 5's 15% (at full depth it came within 0.5% on an H100)
    pred, peak = rep["memory_predicted_gb"], rep["memory_gb"]["peak_allocated"]
    assert pred is not None, "no memory prediction"
    if "trainer.compile_layers_once=true" in LEVERS[lever]:
        # the layers' nested region keeps more than the copies show: a classifier's figure is a lower bound
        assert pred.get("bound") == ("lower" if task == "classification" else None), pred
        assert task != "classification" or peak >= pred["peak_allocated"] * 0.98, (pred["peak_allocated"], peak)
    elif "trainer.compile_scope=model" in LEVERS[lever] and task == "causal_lm":
        # the copies' loss runs eager over the vocabulary: the prediction says it is an upper bound
        assert pred["bound"] == "upper" and peak <= pred["peak_allocated"] * 1.02, (pred["peak_allocated"], peak)
    else:
        assert abs(pred["peak_allocated"] / peak - 1) < 0.15, (pred["peak_allocated"], peak)


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
@pytest.mark.parametrize("model, within", [("polyglot-ko-12.8b", 0.05), ("llama3.2-3b", 0.02)])
def test_qlora_memory_prediction_holds_at_16_layers(tmp_path, model, within):
    """Polyglot's GPT-NeoX layers under QLoRA: the first layer's backward costs most, so the 1- and 2-layer copies
    peak alike while every later layer keeps an fp32 hidden state (its LayerNorms run fp32 under autocast and
    bitsandbytes' 4-bit layers hand on their input's dtype). Predicted from the peak's line alone, 16 layers came
    out 16% low on an H200 (measured 5.78 GB, predicted 4.87) and 40 layers 26%; with the last-layer line, 3.3% high
    (5.97) and 1.5% (11.84 against 11.67). Llama (RMSNorm, every layer alike) was within 0.4% at full depth before
    the second line: it must stay there (it did)."""
    proc = cli(f"model={model}", "model.arch.num_hidden_layers=16", "peft=qlora", "precision=bf16",
               "peft.compute_dtype=bfloat16", "trainer.gradient_checkpointing=true", "batch=16", "logger=none",
               *GPU_QUICK, f"hydra.run.dir={tmp_path}")
    rep = read_report(tmp_path)
    assert proc.returncode == 0 and rep["status"] == "ok", (rep["error"], proc.stderr[-2000:])
    pred, peak = rep["memory_predicted_gb"]["peak_allocated"], rep["memory_gb"]["peak_allocated"]
    assert abs(pred / peak - 1) < within, (pred, peak)


PROBE_ALLOCATOR = """
from src import runner
from src.machine import env
runner._cuda_available()  # what a run does before it sets the allocator
import torch
{set}
torch.empty(1 << 20, device="cuda")
print(sorted({{s.get("is_expandable") for s in torch.cuda.memory_snapshot()}}, key=str), torch.cuda.memory.get_allocator_backend())
"""


def test_env_alloc_conf_reaches_the_allocator():
    """env=tuned (the default) asks for expandable segments by setting PYTORCH_CUDA_ALLOC_CONF inside the run,
    after torch is imported and CUDA probed: the allocator must still take them (it did on an H200)."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}
    probe = PROBE_ALLOCATOR.format(set="env.set_allocator('expandable_segments:True')")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environ, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("[True]"), proc.stdout


def test_the_copies_kernel_time_is_the_gpus_share_of_a_micro_batch():
    """speed_model.gpu_busy_s profiles a copy's kernels: more than nothing, less than the wall time of the same
    forwards and backwards (which the host's launches pad)."""
    from src.plan import speed_model

    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).cuda()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, x):
            return type("Out", (), {"loss": self.net(x).square().mean()})()

    wrapped, batch = Wrapped(), {"x": torch.randn(8, 256, device="cuda")}
    busy = speed_model.gpu_busy_s(wrapped, batch, "none", "cuda")
    wall = min(b.micro_batch for b in speed_model.time_steps(wrapped, batch, "none", "cuda"))
    assert busy is not None and 0 < busy < wall


def test_auto_budget_probes_the_model_and_trains_at_its_choice(tmp_path):
    """batch.tokens=auto on the GPU: the probe's figures are real (kernels under the wall time of a synced step,
    the host's launch time positive), the run trains at the chosen budget, and the model was left as it was."""
    rep = run(compose(*GPU_QUICK, "padding=packed", "batch.tokens=auto", "attention=varlen", "data.size=2048"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    chosen = rep["resolved"]["budget"]
    probe = chosen["probe"]
    assert [p["tokens"] for p in probe["points"]] == [8192, 16384]  # a tiny model: twice the budget fits
    assert all(0 < p["host_s"] and 0 < p["gpu_s"] for p in probe["points"])
    assert probe["peak_bytes"] > probe["base_bytes"] > 0
    assert chosen["tokens"] in (2048, 4096, 8192, 16384, 32768, 65536)
    assert rep["tokens"]["all"] == chosen["tokens"] * chosen["grad_accum"] * rep["step_time_s"]["n"]  # the chosen budget
    assert "batch.tokens=auto chose" in chosen["line"]


def test_a_second_run_at_the_same_shapes_reuses_the_memory_trace(tmp_path, monkeypatch):
    """src/model/memory_cache.py: another seed and learning rate, the same shapes: no copies built, the same
    prediction, and the summary says where the trace came from."""
    from src.base import files

    monkeypatch.setattr(files, "CACHE", tmp_path / "cache")
    first = run(compose(*GPU_QUICK), tmp_path / "first")
    again = run(compose(*GPU_QUICK, "trainer.seed=3", "trainer.lr=1e-4"), tmp_path / "again")
    assert first["status"] == again["status"] == "ok"
    assert "trace_from" not in first["memory_predicted_gb"]
    assert again["memory_predicted_gb"]["trace_from"].startswith(str(tmp_path / "cache" / "memory"))
    assert again["memory_predicted_gb"]["peak_allocated"] == first["memory_predicted_gb"]["peak_allocated"]
    assert again["timing_s"]["build_parts"]["memory_model"] < first["timing_s"]["build_parts"]["memory_model"]
