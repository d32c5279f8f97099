"""report.json's keys are an interface (sweep summaries, W&B, people's scripts read them): pinned here, so a
refactor of how the report is built cannot move or drop one unnoticed. A new field may join without touching
this file: adding a measured figure is its section's dataclass and src/report/analysis.py, nothing else."""
from dataclasses import dataclass
from typing import ClassVar, Optional

from src.report.document import Report
from src.report.sections import Throughput
from src.run import run
from tests.conftest import QUICK, compose, read_report

TOP = ["status", "error", "overrides", "config", "config_hash", "resolved", "env", "data", "params", "memory_predicted_gb", "flops",
       "timing_s", "diagnostics", "resumed_from", "memory_gb", "eval", "loss", "throughput", "step_time_s",
       "breakdown_s", "host_s", "gpu_busy_fraction", "tokens", "shapes", "stopped_when_stable", "compile", "verdict"]
SECTIONS = {
    "resolved": ["amp", "attention", "device", "distributed", "weights_dtype", "world_size"],
    "env": ["alloc_conf", "capacity_gb", "cpu_count", "cudnn_benchmark", "device", "device_count", "device_name",
            "nodes", "peft", "pid", "python", "rank", "tf32_matmul", "torch", "transformers", "world_size"],
    "data": ["lengths"],
    "params": ["total", "trainable", "trainable_fraction"],
    "flops": ["hfu", "matmul_params_frozen", "matmul_params_trainable", "mfu", "peak_tflops", "per_token",
              "per_token_hardware", "seq"],
    "timing_s": ["build", "build_parts", "diagnostics", "measure", "profile_and_rest", "total", "train", "warmup"],
    "memory_gb": ["alloc_retries_in_window", "peak_rss_gb"],  # a GPU run: peak_allocated, peak_reserved, ...
    "loss": ["curve", "expected_initial", "final", "initial"],
    "throughput": ["loss_tokens_per_s", "pad_fraction", "real_tokens_per_s", "real_tokens_per_s_per_gpu",
                   "samples_per_s", "tokens_per_s", "world_size"],
    "step_time_s": ["mean", "n", "p50", "p90", "stdev", "values", "wall_mean", "warmup_steps"],
    "breakdown_s": ["compute", "data", "host", "optimizer", "other"],
    "host_s": ["data", "gc", "gc_collections", "launch"],
    "tokens": ["all", "loss", "real", "samples"],
    "shapes": ["distinct_in_window", "new_in_window"],
    "compile": ["graphs", "graphs_in_window", "to_first_step_s", "work"],
    "verdict": ["bottleneck", "reasons", "saturated"],
}


def test_a_finished_runs_report_keeps_its_keys_in_order(tmp_path):
    run(compose(*QUICK), tmp_path)
    rep = read_report(tmp_path)
    assert [k for k in rep if k in TOP] == TOP  # every pinned key, in its order; new ones may sit between
    for name, keys in SECTIONS.items():
        assert set(keys) <= set(rep[name]), (name, set(keys) - set(rep[name]))
    assert rep["memory_predicted_gb"] is None and rep["eval"] is None  # a CPU run without an eval set


def test_a_config_errors_report_keeps_its_keys(tmp_path):
    run(compose(*QUICK, "data.max_length=0"), tmp_path)
    rep = read_report(tmp_path)
    assert rep["status"] == "config_error" and list(rep) == ["status", "error", "overrides", "config", "config_hash", "timing_s"]


def test_a_new_section_field_reaches_the_json_the_sweep_table_and_wandb_by_itself():
    @dataclass
    class WithTokensPerJoule(Throughput):
        wandb: ClassVar[str] = "perf"
        real_tokens_per_joule: Optional[float] = None

    rep = Report(throughput=WithTokensPerJoule(real_tokens_per_s=1000.0, real_tokens_per_joule=2.5))
    assert rep.to_dict()["throughput"]["real_tokens_per_joule"] == 2.5
    assert rep.flat()["throughput.real_tokens_per_joule"] == 2.5
    assert rep.wandb_summary()["perf/real_tokens_per_joule"] == 2.5
