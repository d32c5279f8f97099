"""`make setup` and `make run` resolve to the GPU install and the GPU-sized default where nvidia-smi exists, and to
the CPU ones where it doesn't (checked with `make -n`, which prints the commands without running them)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pip vendors the same parser
    from pip._vendor import tomli as tomllib


def make_n(tmp_path, *args, gpu: bool) -> str:
    path = os.environ["PATH"]
    if gpu:
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
        (fake / "nvidia-smi").chmod(0o755)
        path = f"{fake}:{path}"
    proc = subprocess.run(["make", "-n", "setup", "run", f"VENV={tmp_path / 'venv'}", *args], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PATH": path})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def extras_installed(out: str) -> list[str]:
    [extras] = re.findall(r'pip install -q -e "\.\[([a-z,]+)\]"', out)
    return extras.split(",")


def test_a_gpu_machine_gets_qlora_and_the_speed_extras_and_a_real_width_default(tmp_path):
    out = make_n(tmp_path, gpu=True)
    assert extras_installed(out) == ["dev", "qlora", "speed"]
    assert 'pip install -q "torch>=2.4"' in out  # pip picks the CUDA build
    assert "src.run model=qwen3 model.arch.num_hidden_layers=4" in out and "make run: a GPU is here" in out
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    resolved = {name.split(">")[0].split("=")[0] for extra in extras_installed(out) for name in declared[extra]}
    assert {"bitsandbytes", "liger-kernel", "pytest"} <= resolved


def test_a_model_named_by_the_user_replaces_the_gpu_default(tmp_path):
    out = make_n(tmp_path, "ARGS=model=tiny batch=4", gpu=True)
    assert re.search(r"src\.run +model=tiny batch=4$", out, re.M) and "num_hidden_layers" not in out


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_a_cpu_machine_gets_the_cpu_torch_and_the_tiny_default(tmp_path):
    out = make_n(tmp_path, gpu=False)
    assert extras_installed(out) == ["dev"] and 'pip install -q "torch==2.13.0"' in out
    assert re.search(r"src\.run *$", out, re.M) and "GPU is here" not in out
