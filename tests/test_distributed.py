"""Several processes, one run: torchrun DDP on the CPU (gloo), rank 0 alone writing, the run directory the
ranks share, the report's cross-rank numbers, and the DDP/FSDP settings handed to the Trainer."""
import os
import subprocess
import sys
import time

import pytest

from src.base import ranks
from src.train import trainer as train
from src.config.errors import ConfigError
from src.config.schema import validate
from src.report.analysis import worst_memory
from tests.conftest import QUICK, ROOT, compose, read_report


def test_torchrun_two_ranks_train_one_job_with_one_report(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "-m", "src.run",
                           *QUICK, "trainer.max_steps=5", f"hydra.run.dir={run_dir}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("trainsweep report:") == 1  # rank 1 trained but printed no report
    rep = read_report(run_dir)
    assert rep["status"] == "ok" and rep["env"]["world_size"] == 2
    assert rep["resolved"]["distributed"] == "ddp"
    per_rank = rep["distributed"]["tokens_per_rank"]
    assert len(per_rank) == 2 and all(t["samples"] == 4 * 8 for t in per_rank)  # 4 timed steps of batch 8 each
    assert rep["tokens"]["samples"] == 2 * 4 * 8 and rep["tokens"]["real"] == sum(t["real"] for t in per_rank)
    th = rep["throughput"]
    assert th["world_size"] == 2 and th["real_tokens_per_s_per_gpu"] == pytest.approx(th["real_tokens_per_s"] / 2)
    assert th["samples_per_s"] == pytest.approx(16 / rep["step_time_s"]["mean"])  # both ranks' rows per step
    assert sorted(p.name for p in run_dir.iterdir() if p.is_file()) == ["config.yaml", "report.json", "report.md", "run.lock", "run.log"]
    assert "x 2 ranks (ddp) = 16 per step" in (run_dir / "report.md").read_text()


def test_ranks_of_one_launch_name_the_same_run_directory():
    # Two processes started a second apart by one parent, as torchrun starts its workers.
    code = "from src.base.ranks import run_stamp; print(run_stamp('%H-%M-%S'))"
    def stamp(world):
        env = {**os.environ, "WORLD_SIZE": world}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
        return out.stdout.strip()
    first = stamp("2")
    time.sleep(1.1)
    assert stamp("2") == first
    alone = stamp("1")
    time.sleep(1.1)
    assert stamp("1") != alone


def test_worst_memory_takes_each_peak_from_the_rank_closest_to_the_limit():
    per_rank = [{"peak_allocated": 30.0, "peak_reserved": 40.0, "capacity": 79.2, "alloc_retries": 0, "device_used": 41.0},
                {"peak_allocated": 35.0, "peak_reserved": 38.0, "capacity": 79.2, "alloc_retries": 2, "device_used": 40.0}]
    worst = worst_memory(per_rank)
    assert worst == {"peak_allocated": 35.0, "peak_reserved": 40.0, "capacity": 79.2, "alloc_retries": 2, "device_used": 41.0}
    assert ranks.combine([{"tokens": {"real": 5}, "memory": {}}, {"tokens": {"real": 7}, "memory": {}}])["tokens"] == {"real": 12}


def test_fsdp_settings_reach_the_trainer():
    cfg = compose("distributed=fsdp")
    args = train.parallel(cfg.distributed, cuda=True, world_size=2)
    assert args["ddp_backend"] == "nccl" and args["fsdp"]
    assert args["fsdp_config"]["auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP" and args["fsdp_config"]["version"] == 2
    ddp = compose("distributed=ddp").distributed
    assert train.parallel(ddp, cuda=False, world_size=2)["ddp_backend"] == "gloo"
    assert "fsdp" not in train.parallel(ddp, cuda=True, world_size=2)
    assert train.parallel(ddp, cuda=True, world_size=1) == {}  # one process: plain training


@pytest.mark.parametrize("args, message", [
    (["distributed=fsdp"], "FSDP shards over CUDA GPUs"),
    (["distributed.backend=nccl"], "NCCL needs CUDA GPUs"),
    (["distributed.strategy=deepspeed"], "distributed.strategy"),
])
def test_distributed_settings_the_cpu_cannot_run_are_config_errors(args, message):
    with pytest.raises(ConfigError, match=message):
        validate(compose(*args), cuda_available=False)


@pytest.mark.slow  # torchrun's two ranks are tested fast beside it; this adds the sweep's launcher
def test_a_sweep_job_of_two_processes_is_one_ddp_run(tmp_path):
    # The isolated launcher is submitit's local executor: tasks_per_node=2 gives each job two processes,
    # which take torchrun's variables from submitit (as a SLURM job with 2 GPUs would).
    from tests.conftest import cli

    proc = cli("-m", "batch=4", "distributed.nproc_per_job=2", *QUICK, f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [rep] = [read_report(p.parent) for p in tmp_path.glob("*/report.json")]
    assert rep["status"] == "ok" and rep["env"]["world_size"] == 2
    assert rep["tokens"]["samples"] == 2 * 3 * 4  # 2 ranks x 3 timed steps x batch 4
    assert "| ok | 4 | 1 | 8 |" in (tmp_path / "summary.md").read_text()  # effective batch: 4 x ga 1 x 2 ranks


def test_slurm_jobs_get_their_gpus_and_tasks_from_the_distributed_group():
    from hydra import compose as hydra_compose, initialize_config_dir

    from tests.conftest import CONF

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = hydra_compose("config", overrides=["hydra/launcher=slurm", "distributed=fsdp",
                                                 "distributed.nproc_per_job=4"], return_hydra_config=True)
    assert cfg.hydra.launcher.gpus_per_node == 4 and cfg.hydra.launcher.tasks_per_node == 4


def test_usr1_prints_where_a_running_job_is_and_the_job_goes_on(tmp_path):
    """A rank stuck in a collective shows no error, only silence (an FSDP run on two H200s trained, then printed
    nothing for 5 minutes): `kill -USR1 PID` makes a run print every thread's stack, and it keeps going."""
    import signal

    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "src.run", *QUICK, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not (run_dir / "config.yaml").exists():  # the run writes it once the handler is in place
        assert proc.poll() is None and time.time() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert "Current thread" in err and "most recent call first" in err
    assert read_report(run_dir)["status"] == "ok"


DDP_SCRIPT = '''
import sys
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

model = BertForSequenceClassification(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=32))
rows = Dataset.from_dict({"input_ids": [[1, 2, 3, 4]] * 64, "labels": [0, 1] * 32})
args = TrainingArguments(sys.argv[1], max_steps=8, per_device_train_batch_size=4, report_to=[], use_cpu=True,
                         save_strategy="no", logging_steps=1)
Trainer(model=model, args=args, train_dataset=rows).train()
'''


def test_the_launcher_on_a_users_torchrun_script_reports_once_for_both_ranks(tmp_path):
    """`trainsweep measure --speedup -- torchrun ...`: every rank measures and decides speedup alike, rank 0 alone
    says so and writes (speedup's lines came twice, interleaved)."""
    script, out = tmp_path / "train.py", tmp_path / "out"
    script.write_text(DDP_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "src.run", "measure", "--speedup", "--", sys.executable, "-m",
                           "torch.distributed.run", "--nproc_per_node=2", str(script), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("trainsweep report:") == 1 and proc.stdout.count("trainsweep.speedup on") == 1
    assert "several processes" in proc.stdout  # speedup packs for one process: it said so and stayed off
    rep = read_report(out / "trainsweep")
    assert rep["status"] == "ok" and rep["env"]["world_size"] == 2
    assert rep["throughput"]["samples_per_s"] == pytest.approx(2 * 4 / rep["step_time_s"]["mean"])
