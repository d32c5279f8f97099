"""Where does a host-bound micro-batch's drift come from? One process times the same host-bound micro-batch
of a copy over and over, and beside each block reads what could set its pace: the GPU's SM clock (NVML), the
time a fixed piece of pure-Python work takes (the host CPU's own speed, with no GPU in it), and the core the
process ran on. Written as it goes, one JSON line a block.

    python experiments/planner/host_drift.py OUT.jsonl SECONDS model=qwen3 model.arch.num_hidden_layers=4 padding=max_length batch=2
"""
import json
import os
import sys
import time

import torch

from src.model import memory_model as mm
from src.plan import speed_model

from typical import setup  # this folder (a script's own directory is on sys.path)
from vcpu_drift import python_work_s, ran_on


def main(out: str, seconds: float, overrides: list[str]) -> None:
    import pynvml

    cfg, res, conf, _, _, batch = setup(overrides)
    model = mm.build_copy(cfg, res, conf, getattr(conf, mm.layers_key(conf)))
    pynvml.nvmlInit()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    speed_model.warm_up(model, batch, res.amp, res.device)
    start = time.perf_counter()
    with open(out, "a") as f:
        while time.perf_counter() - start < seconds:
            block = speed_model.time_steps(model, batch, res.amp, res.device, blocks=1, steps=10)[0]
            f.write(json.dumps({"t": round(time.perf_counter() - start, 2), "micro_batch_ms": block.micro_batch * 1e3,
                                "sm_mhz": pynvml.nvmlDeviceGetClockInfo(gpu, pynvml.NVML_CLOCK_SM),
                                "python_work_ms": python_work_s() * 1e3, "core": ran_on(),
                                "load": os.getloadavg()[0]}) + "\n")
            f.flush()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
