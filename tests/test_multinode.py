"""One run over several hosts, through the engines that exist: torchrun's rendezvous (two agents on this host,
`--nnodes=2`, gloo) and hydra-submitit-launcher's SLURM executor (its sbatch script, caught at a stub `sbatch`,
and the torch variables each SLURM task derives from SLURM's own). No SLURM and no second host here."""
import os
import socket
import stat
import subprocess
import sys

import pytest

from src.config.errors import ConfigError
from src.config.schema import validate
from tests.conftest import QUICK, ROOT, compose, read_report


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two agents and two ranks on a 2-core machine: ~40-90 s
def test_two_torchrun_agents_on_one_host_train_as_two_nodes(tmp_path):
    # What a user types on each of two hosts, both pointing at the first host's c10d store: here both on localhost.
    # node_rank only orders the agents; the rendezvous (one id, one endpoint) forms the group.
    run_dir, port = tmp_path / "run", _free_port()
    agents = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1",
                                f"--node_rank={node}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                                "--rdzv-id=test-two-nodes", "-m", "src.run", *QUICK, "trainer.max_steps=5",
                                "distributed.nodes=2", f"hydra.run.dir={run_dir}"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for node in (0, 1)]
    outs = [a.communicate(timeout=600) for a in agents]
    for agent, (_, err) in zip(agents, outs):
        assert agent.returncode == 0, err[-3000:]
    assert sum(out.count("trainsweep report:") for out, _ in outs) == 1  # the second node's rank wrote nothing
    rep = read_report(run_dir)
    assert rep["status"] == "ok" and rep["resolved"]["distributed"] == "ddp"
    assert rep["env"]["world_size"] == 2 and rep["env"]["nodes"] == 2  # 2 nodes x 1 process
    assert [t["samples"] for t in rep["distributed"]["tokens_per_rank"]] == [4 * 8, 4 * 8]  # 4 timed steps, bs 8
    assert "x 2 ranks (ddp, 2 nodes x 1)" in (run_dir / "report.md").read_text()


def test_a_two_node_sweep_job_is_one_sbatch_job_of_both_nodes(tmp_path):
    # The real command line and launcher, up to SLURM's door: a stub sbatch keeps the script submitit wrote.
    bin_dir, caught = tmp_path / "bin", tmp_path / "job.sh"
    bin_dir.mkdir()
    for name, body in (("sbatch", f'cp "$1" {caught}\necho "sbatch: no cluster here" >&2\nexit 1'),
                       ("srun", "exit 1")):  # submitit looks for srun on PATH before it writes anything
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "src.run", "-m", "hydra/launcher=slurm", "hydra.launcher.partition=gpu",
                           "distributed=ddp", "distributed.nodes=2", "distributed.nproc_per_job=4", "batch=8,16",
                           f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and caught.exists(), proc.stderr[-3000:]  # the sweep stops where sbatch refused
    script = caught.read_text()
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --gpus-per-node=4",
                 "#SBATCH --partition=gpu", "#SBATCH --array=0-1%2"):  # both jobs of the sweep, as one array
        assert line in script, script
    srun = [x for x in script.splitlines() if x.startswith("srun")]
    assert len(srun) == 1 and "submitit.core._submit" in srun[0]  # srun starts nodes x tasks_per_node = 8 tasks


def test_a_slurm_sweep_over_gpu_counts_is_one_sbatch_array_per_count(tmp_path):
    # A stub sbatch accepts each array (and keeps its script); no job ever runs, so the sweep then waits on its
    # results forever: both arrays must have been submitted before that wait, and the test ends the sweep.
    import signal
    import time

    bin_dir, caught = tmp_path / "bin", tmp_path / "caught"
    bin_dir.mkdir()
    caught.mkdir()
    for name, body in (("sbatch", f'n=$(ls {caught} | wc -l)\ncp "$1" {caught}/$n.sh\necho "Submitted batch job $((100 + n))"'),
                       ("srun", "exit 1"), ("sacct", "exit 1"), ("squeue", "exit 1")):
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    sweep = subprocess.Popen([sys.executable, "-m", "src.run", "-m", "hydra/launcher=slurm", "distributed=ddp",
                              "distributed.nproc_per_job=1,2", "batch=8,16", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    deadline = time.time() + 120
    while len(list(caught.glob("*.sh"))) < 2 and sweep.poll() is None and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(1)  # a third array, if one came, would be here by now
    os.killpg(sweep.pid, signal.SIGKILL)
    _, err = sweep.communicate()
    scripts = [p.read_text() for p in sorted(caught.glob("*.sh"))]
    assert len(scripts) == 2, err[-3000:]
    shapes = sorted((next(x for x in s.splitlines() if "--ntasks-per-node" in x), next(x for x in s.splitlines()
                     if "--array" in x)) for s in scripts)
    assert shapes == [("#SBATCH --ntasks-per-node=1", "#SBATCH --array=0-1%2"),
                      ("#SBATCH --ntasks-per-node=2", "#SBATCH --array=0-1%2")]  # batch 8 and 16 in each
    assert all(("--gpus-per-node=2" in s) == ("--ntasks-per-node=2" in s) for s in scripts)


SLURM_TASK = {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "4242", "SLURM_NTASKS": "4", "SLURM_JOB_NUM_NODES": "2",
              "SLURM_JOB_NODELIST": "gpu-a[07-08]", "SLURM_NODEID": "1", "SLURM_PROCID": "3", "SLURM_LOCALID": "1"}


def _task_env(**slurm) -> dict:
    code = ("import os; from src.base import ranks; ranks.from_submitit(); print(ranks.nodes()); print(*(os.environ.get(k)"
            " for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SUBMITIT_", "MASTER_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, **slurm}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    nodes, values = out.stdout.splitlines()
    return {"nodes": int(nodes), **dict(zip(("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                             "MASTER_PORT"), values.split()))}


def test_each_slurm_task_of_a_two_node_job_gets_torchs_variables_from_slurms():
    # Task 3 of 4: the second node's second GPU. The rendezvous is the job's first host, as `scontrol show hostnames
    # $SLURM_JOB_NODELIST | head -1` would say, and every task draws the same port from the job id.
    last = _task_env(**SLURM_TASK)
    assert last == {"nodes": 2, "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                    "MASTER_ADDR": "gpu-a07", "MASTER_PORT": last["MASTER_PORT"]}
    first = _task_env(**{**SLURM_TASK, "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0"})
    assert (first["RANK"], first["MASTER_ADDR"], first["MASTER_PORT"]) == ("0", "gpu-a07", last["MASTER_PORT"])
    assert _task_env(**{**SLURM_TASK, "MASTER_PORT": "29500"})["MASTER_PORT"] == "29500"  # a port the user set wins


def test_nodes_asked_for_but_not_launched_is_a_config_error():
    # distributed.nodes=2 under a launcher that runs on one host (the local sweep launcher, plain python) would
    # train on one node and report it as two-node work: refused, with how to launch it
    with pytest.raises(ConfigError, match=r"spans 1 node\(s\): start it with `torchrun --nnodes=2`"):
        validate(compose("distributed.nodes=2"), cuda_available=False)
    with pytest.raises(ConfigError, match="distributed.nodes"):
        validate(compose("distributed.nodes=0"), cuda_available=False)


def test_a_sweep_job_started_on_another_process_count_than_it_asked_for_is_a_config_error(monkeypatch):
    # a launcher that resolves its shape once per sweep (hydra-submitit's own submitit_slurm) would start every job with
    # the array's one count and report 2-GPU jobs that ran on one
    for var, value in {"SUBMITIT_EXECUTOR": "slurm", "WORLD_SIZE": "1", "RANK": "0"}.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=r"asked for 1 node\(s\) x 2 processes but its launcher started 1: the launcher"):
        validate(compose("distributed.nproc_per_job=2"), cuda_available=False)
    validate(compose("distributed.nproc_per_job=1"), cuda_available=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    validate(compose("distributed.nproc_per_job=2"), cuda_available=False)
