"""CUDA-only paths: events, profiler busy share, NVML, bf16 auto, QLoRA. Skipped without a GPU."""
import importlib.util

import pytest
import torch

from src.run import run
from tests.conftest import cli, compose, read_report

pytestmark = pytest.mark.gpu
GPU_QUICK = ["trainer.max_steps=12", "measure.warmup_steps=3", "measure.profile_steps=2", "data.size=256"]


def test_tiny_run_on_gpu_measures_with_events_profiler_and_nvml(tmp_path):
    rep = run(compose(*GPU_QUICK), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    assert rep["resolved"] == {"device": "cuda", "weights_dtype": "bfloat16", "amp": "bf16", "attention": "sdpa",
                               "distributed": "none", "world_size": 1}
    assert rep["step_time_s"]["n"] == 12 - 3 - 2
    assert 0 < rep["gpu_busy_fraction"] <= 1
    mem = rep["memory_gb"]
    assert 0 < mem["peak_allocated"] <= mem["peak_reserved"] < mem["capacity"]
    assert mem["device_used"] >= mem["peak_reserved"] * 0.9
    assert rep["flops"]["mfu"] > 0 and rep["flops"]["peak_tflops"] is not None
    bd = rep["breakdown_s"]
    assert bd["data"] + bd["compute"] + bd["optimizer"] + bd["other"] == pytest.approx(rep["step_time_s"]["mean"], rel=0.01)
    assert 0 <= bd["host"] <= rep["step_time_s"]["mean"]


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
def test_qlora_builds_4bit_from_cached_random_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINSWEEP_CACHE", str(tmp_path / "cache"))
    import src.models as models
    monkeypatch.setattr(models, "CACHE", tmp_path / "cache")
    rep = run(compose("peft=qlora", *GPU_QUICK), tmp_path / "run")
    assert rep["status"] == "ok", rep["error"]
    assert list((tmp_path / "cache" / "weights").iterdir())  # saved once, reused by later jobs


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
