"""The process environment: device choice, torch's global settings, and what the report says about both."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
from dataclasses import dataclass

import torch

from ..base import ranks
from ..base import files as disk  # disk.CACHE read when used: a test or script may point it elsewhere


@dataclass
class Resolved:
    """What `auto` settings became on this machine."""

    device: str  # cuda | cpu
    weights_dtype: torch.dtype
    amp: str  # none | bf16 | fp16
    attention: str  # eager | sdpa | varlen | flex_attention | flash_attention_2 | flash_attention_3
    distributed: str = "none"  # none | ddp | fsdp
    world_size: int = 1


def set_allocator(alloc_conf: str | None) -> None:
    # PYTORCH_CUDA_ALLOC_CONF is read once when CUDA initialises: set it before anything touches CUDA.
    if alloc_conf and "PYTORCH_CUDA_ALLOC_CONF" not in os.environ:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf


def resolve(cfg) -> Resolved:
    device = "cuda" if cfg.device != "cpu" and torch.cuda.is_available() else "cpu"
    bf16_ok = device == "cuda" and torch.cuda.is_bf16_supported()
    pr = cfg.precision
    amp = ("bf16" if bf16_ok else "none") if pr.amp == "auto" else pr.amp
    if pr.weights_dtype == "auto":
        dtype = torch.bfloat16 if bf16_ok else torch.float32
    else:
        dtype = getattr(torch, pr.weights_dtype)
    attn = cfg.attention.implementation
    if attn == "auto":  # padding-free batches on a GPU: the varlen flash kernel, not a dense block mask
        varlen = device == "cuda" and importlib.util.find_spec("torch.nn.attention.varlen") is not None
        attn = "varlen" if cfg.padding.strategy == "packed" and varlen and cfg.task.name != "seq2seq" else "sdpa"
    world = ranks.world_size()
    strategy = cfg.distributed.strategy
    parallel = "none" if world == 1 else ("ddp" if strategy == "auto" else strategy)
    return Resolved(device, dtype, amp, attn, parallel, world)


def apply(cfg) -> None:
    """torch's global switches for this process, from the env and precision groups."""
    tf32 = bool(cfg.env.tf32 or cfg.precision.tf32)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = bool(cfg.env.cudnn_benchmark)
    torch.backends.cudnn.deterministic = bool(cfg.debug.cudnn_deterministic)  # a bad habit, on purpose only
    if cfg.debug.cudnn_deterministic:
        torch.backends.cudnn.benchmark = False
    if cfg.trainer.torch_compile:  # bound recompiles: dynamic padding would otherwise compile every new shape
        from torch._dynamo import config as dyn

        # Compiled kernels kept with the other caches: the second job of a sweep starts warm.
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str((disk.CACHE / "inductor").resolve()))
        os.environ.setdefault("TRITON_CACHE_DIR", str((disk.CACHE / "triton").resolve()))
        _cache_autograd_functions()

        setattr(dyn, "recompile_limit" if hasattr(dyn, "recompile_limit") else "cache_size_limit", cfg.trainer.recompile_limit)
    if cfg.env.num_threads:
        torch.set_num_threads(cfg.env.num_threads)
    _sdpa_kernels(list(cfg.env.sdp_backends), cfg.attention.kernel)


def _cache_autograd_functions() -> None:
    """Let torch's AOTAutograd cache keep graphs that hold a torch.autograd.Function: FP8's matmul and the fused
    LoRA linear are ones, and torch bypasses that cache for them by default, so every FP8 or fused job traced
    and partitioned its forward and backward again on a warm cache (FP8 + fused: 4.5-6.8 s of torch compiling
    warm against bf16's 1.4-1.9 s on an H200, experiments/speed). Dynamo traces a Function's forward and
    backward into the graph the key is computed from, so a changed Function is a miss (torch's flag, off by
    default while torch tests it widely; tests/test_compile_cache.py changes our backward and sees the miss).
    TORCHINDUCTOR_AUTOGRAD_CACHE_ALLOW_CUSTOM_AUTOGRAD=0 in the environment still turns it off: torch reads
    that variable over any setting made here."""
    from torch._functorch import config as functorch

    if hasattr(functorch, "autograd_cache_allow_custom_autograd_functions"):
        functorch.autograd_cache_allow_custom_autograd_functions = True


_SDPA_ORDER = contextlib.ExitStack()  # the process's sdpa kernel order, held for the rest of the process


def _sdpa_kernels(allowed: list[str], kernel: str) -> None:
    """Which sdpa kernels may run (env.sdp_backends; empty: all) and, for attention.kernel=cudnn, cuDNN's first.
    sdpa takes, per call, the first allowed kernel that can run that shape and mask; a compiled model's choice is
    made while tracing, under these same settings."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
             "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    _SDPA_ORDER.close()  # a second apply() in one process starts from torch's own settings
    if kernel == "cudnn":
        order = ["cudnn"] + [n for n in names if n != "cudnn" and (not allowed or n in allowed)]
        _SDPA_ORDER.enter_context(sdpa_kernel([names[n] for n in order], set_priority=True))
    elif allowed:
        _SDPA_ORDER.enter_context(sdpa_kernel([names[n] for n in allowed]))


def setup(cfg) -> Resolved:
    """Resolve `auto` choices and apply torch's global settings for this process."""
    res = resolve(cfg)
    apply(cfg)
    if res.device == "cuda":
        torch.cuda.set_device(ranks.local_rank())  # each torchrun worker its own GPU, before any allocation
        cap_memory(cfg.gpu.memory_cap_gb)
        tr = cfg.trainer
        if tr.torch_compile and tr.compile_workers_early and tr.compile_backend == "inductor":
            start_compile_workers()
    return res


def start_compile_workers() -> None:
    """Start inductor's Triton compile workers now, while the data and the model are built. torch starts them at
    its first compile, and until they are up a cold compile builds its kernels one by one in this process; a
    worker is a process that imports torch first (seconds: on a machine without torch's bytecode, the ~20 s of
    src/base/bytecode.py). trainer.compile_workers_early, off by default: on an H200 (16 cores) the workers'
    imports slowed the model build that ran beside them more than their head start saved, and step 1 came later
    in each of four same-call pairs (experiments/speed, calls 5-6). A failure here costs the head start only."""
    try:
        from torch._inductor.async_compile import maybe_warm_pool

        maybe_warm_pool()  # does nothing without Triton, or where TORCH_WARM_POOL=0 or one compile thread is set
    except Exception as e:  # noqa: BLE001  (torch's private API: its changes must not stop a run)
        print(f"inductor's compile workers not started early ({type(e).__name__}: {e}): torch starts them at its "
              "first compile", file=sys.stderr)


def describe(res: Resolved) -> dict:
    return {"device": res.device, "weights_dtype": str(res.weights_dtype).replace("torch.", ""),
            "amp": res.amp, "attention": res.attention, "distributed": res.distributed, "world_size": res.world_size}


def cap_memory(cap_gb: float | None) -> None:
    """Emulate a smaller card: the caching allocator treats the cap as the card's size (it frees its cache
    and retries, then raises OOM, at the cap)."""
    if cap_gb:
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_gb * 2**30 / total))


def info(device: str) -> dict:
    """Versions and the device, for the report."""
    import peft
    import transformers

    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "device": device,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "cpu_count": os.cpu_count(),
        "pid": os.getpid(),
        "world_size": ranks.world_size(),
        "nodes": ranks.nodes(),  # world_size = nodes x the processes of each (torchrun --nnodes, or SLURM's nodes)
        "rank": ranks.rank(),
        "pycache_prefix": sys.pycache_prefix,  # set where Python keeps no bytecode of torch's (src/base/bytecode.py)
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        out.update(device_name=props.name, device_count=torch.cuda.device_count(),
                   capacity_gb=round(props.total_memory / 2**30, 2), cuda=torch.version.cuda)
    else:
        out.update(device_name=f"cpu ({os.cpu_count()} cores, {platform.machine()})", device_count=0, capacity_gb=None)
    return out
