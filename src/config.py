"""Config schema: one dataclass per config group, registered in Hydra's ConfigStore, plus `validate`.

Hydra checks keys and types against these dataclasses while it composes; `validate` checks values
and raises ConfigError, which run.py turns into one line on stderr and exit code 2.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf


class ConfigError(ValueError):
    """A bad config value: `key=value: what is allowed`."""

    def __init__(self, key: str, value: Any, allowed: str):
        super().__init__(f"{key}={value}: {allowed}")


@dataclass
class InitConfig:
    head_init: str = "default"  # default (initializer_range) | zero | scaled (std = 1 / the hidden-state norm)
    hidden_norm: Optional[float] = None  # set the final norm's gain so hidden states reach this L2 norm


@dataclass
class ModelConfig:
    name: str = MISSING
    model_type: str = MISSING  # transformers model_type (qwen3, llama, bart, gpt_neox) or "auto"
    name_or_path: Optional[str] = None  # local dir (or hub id on your machine) for real weights/tokenizer
    pretrained: bool = False  # false: random init from `arch`, no download, same speed and memory
    arch: Dict[str, Any] = field(default_factory=dict)  # the architecture, passed to AutoConfig.for_model
    trust_remote_code: bool = False
    lr: float = 1e-4  # a learning rate that suits this model under LoRA; trainer.lr defaults to it
    init: InitConfig = field(default_factory=InitConfig)


@dataclass
class TaskConfig:
    name: str = MISSING  # classification | causal_lm | seq2seq
    num_labels: int = 0  # classification only


@dataclass
class DataConfig:
    source: str = MISSING  # synthetic | files
    size: int = 4096  # synthetic rows
    eval_size: int = 0  # synthetic eval rows (0: no eval set)
    length_mean: float = 211.0  # synthetic token lengths ~ N(mean, std) clipped to [min, max]
    length_std: float = 30.0
    length_min: int = 40
    length_max: int = 287
    target_length_mean: float = 40.0  # seq2seq synthetic targets
    target_length_max: int = 64
    max_length: int = 320  # truncation length; padding=max_length pads every row to it
    max_target_length: int = 64
    max_train_samples: Optional[int] = None
    max_eval_samples: Optional[int] = None
    train_file: Optional[str] = None
    eval_file: Optional[str] = None
    text_column: str = "text"
    label_column: str = "label"
    target_column: Optional[str] = None
    num_proc: int = 1  # tokenisation processes
    tokenizer_vocab_size: int = 8000  # the offline fallback BPE's size, for models without a tokenizer
    seed: int = 0


@dataclass
class PaddingConfig:
    strategy: str = MISSING  # max_length | longest | dynamic | bucketed | packed (padding-free)
    pad_to_multiple_of: Optional[int] = None
    side: str = "right"
    chunk_size: int = 1000  # padding=longest pads each chunk of this many rows to its longest (datasets.map's batch)


@dataclass
class DataloaderConfig:
    name: str = MISSING
    num_workers: int = 0
    pin_memory: bool = False
    prefetch_factor: Optional[int] = None
    persistent_workers: bool = False


@dataclass
class PrecisionConfig:
    name: str = MISSING  # fp32 | tf32 | bf16 | fp16 | auto
    weights_dtype: str = "float32"  # float32 | bfloat16 | float16 | auto
    amp: str = "none"  # none | bf16 | fp16 | auto: autocast dtype for the forward pass
    tf32: bool = False


@dataclass
class BatchConfig:
    size: int = 8
    grad_accum: int = 1
    tokens: Optional[int] = None  # padding=packed: tokens per micro-batch (a fixed shape); None packs `size` rows


@dataclass
class PeftConfig:
    method: str = MISSING  # none | lora | qlora
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str = "all-linear"
    quant_type: str = "nf4"
    double_quant: bool = True
    compute_dtype: str = "bfloat16"
    adapter_dtype: str = "auto"  # auto: the weights' dtype (bf16: no casts) | float32 (peft's default: a cast around every adapter matmul)


@dataclass
class AttentionConfig:
    implementation: str = MISSING  # auto | eager | sdpa | varlen | flex_attention | flash_attention_2


@dataclass
class EnvConfig:
    name: str = MISSING
    tf32: bool = False
    cudnn_benchmark: bool = False
    sdp_backends: List[str] = field(default_factory=list)  # empty: torch's own choice
    num_threads: int = 0  # 0: torch's default
    alloc_conf: Optional[str] = None  # PYTORCH_CUDA_ALLOC_CONF, set before CUDA starts


@dataclass
class LoggerConfig:
    name: str = MISSING  # none | csv | wandb
    project: str = "trainsweep"
    entity: Optional[str] = None
    mode: str = "offline"


@dataclass
class TrainerConfig:
    max_steps: int = 40
    lr: float = 1e-4
    warmup_steps: int = 0
    scheduler: str = "constant_with_warmup"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch_fused"
    gradient_checkpointing: bool = False
    checkpoint_reentrant: bool = False  # the older checkpointing; with LoRA it needs input grads (a diagnostic checks)
    checkpoint_every: int = 1  # with gradient_checkpointing: recompute every k-th decoder layer only (k=2: half)
    torch_compile: bool = False  # torch.compile: each decoder layer (compile_scope=regional) or the whole model
    compile_scope: str = "regional"  # regional: one layer compiled, the rest reuse it (seconds) | model: the Trainer's whole-model compile
    compile_mode: Optional[str] = None  # None/default | reduce-overhead (CUDA graphs) | max-autotune | max-autotune-no-cudagraphs
    compile_backend: str = "inductor"  # inductor | aot_eager | eager (the last two: no codegen, for tests)
    recompile_limit: int = 8  # new shapes compiled before torch falls back to eager for that frame
    use_liger_kernel: bool = False  # Liger's Triton kernels (RMSNorm, SwiGLU, RoPE, fused linear CE); CUDA, needs liger-kernel
    logging_steps: int = 10
    eval_steps: int = 0  # 0: no evaluation
    generation_max_length: int = 64  # seq2seq eval: summaries are generated for ROUGE
    generation_num_beams: int = 1
    save_steps: int = 0  # 0: no checkpoints
    save_total_limit: int = 2  # checkpoints kept (each holds the trainable weights and optimizer state)
    seed: int = 0


@dataclass
class MeasureConfig:
    warmup_steps: int = 5  # steps excluded from timing (allocator growth, autotune, new shapes)
    profile_steps: int = 3  # GPU only: steps after the timed window run under torch.profiler (GPU busy share)
    peak_tflops: Optional[float] = None  # override the card's peak for MFU
    predict_memory: bool = True  # GPU: trace a 1-2 layer copy before training and predict the peak (seconds)
    stop_when_stable: bool = False  # end training once the mean step time is known to rel_error (sweeps)
    rel_error: float = 0.02  # standard error of the mean step time / mean, for stop_when_stable
    min_steps: int = 10  # timed steps before stop_when_stable may stop
    enabled: bool = True


@dataclass
class GpuConfig:
    memory_cap_gb: Optional[float] = None  # per-process cap (set_per_process_memory_fraction): emulate a smaller card


@dataclass
class DebugConfig:
    name: str = "none"
    collate_delay_ms: float = 0.0  # a deliberately slow collator: makes a run data-bound on purpose
    oom_from_batch: int = 0  # test hook: raise CUDA's OutOfMemoryError in step 1 when batch.size >= this
    crash_from_batch: int = 0  # test hook: the process dies (exit 3, no report) when batch.size >= this
    # Deliberate bad habits of training loops (the field report on a slow ELMo training loop), each
    # once per optimizer step, so their cost is measured on a real step (experiment=loop_overheads):
    empty_cache: bool = False  # torch.cuda.empty_cache(): frees the allocator's cache, next step re-mallocs
    item_sync: bool = False  # a metric read with .item() after every step: the host waits for the GPU
    pandas_concat: bool = False  # a metrics row appended with pd.concat: copies the whole frame each step
    cudnn_deterministic: bool = False  # cudnn.deterministic=True, benchmark=False (the report's "before")


@dataclass
class DistributedConfig:
    strategy: str = "auto"  # auto (ddp when torchrun starts several processes) | ddp | fsdp
    nproc_per_job: int = 1  # sweeps: processes (GPUs) per job, started by the launcher as torchrun would
    backend: str = "auto"  # auto: nccl on GPUs, gloo on CPUs | nccl | gloo
    find_unused_parameters: bool = False  # true walks the graph for unused params every step
    bucket_cap_mb: Optional[int] = None  # DDP gradient bucket size; None: torch's 25 MB
    fsdp_reshard_after_forward: bool = True  # false keeps gathered params until backward: more memory, fewer all-gathers
    fsdp_cpu_offload: bool = False  # params and grads in host memory between uses: fits more, much slower
    fsdp_activation_checkpointing: bool = False  # FSDP's own recompute (not trainer.gradient_checkpointing)


@dataclass
class DiagnosticsConfig:
    enabled: bool = True  # the cheap checks before every run (one forward and backward on a real batch)
    expensive: bool = False  # also the grad-accumulation equivalence (always on in mode=diagnose)
    stop_on_fail: bool = False  # true: a failed check stops the run before training


@dataclass
class Config:
    model: ModelConfig = MISSING
    task: TaskConfig = MISSING
    data: DataConfig = MISSING
    padding: PaddingConfig = MISSING
    dataloader: DataloaderConfig = MISSING
    precision: PrecisionConfig = MISSING
    batch: BatchConfig = MISSING
    peft: PeftConfig = MISSING
    attention: AttentionConfig = MISSING
    env: EnvConfig = MISSING
    logger: LoggerConfig = MISSING
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    measure: MeasureConfig = field(default_factory=MeasureConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    debug: DebugConfig = MISSING
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)
    distributed: DistributedConfig = MISSING
    mode: str = "train"  # train | diagnose (every check, no training; exit 1 if any fails)
    device: str = "auto"  # auto | cuda | cpu
    rerun: bool = False  # true: recompute a run whose directory already holds a finished report
    resume: bool = False  # true: continue the interrupted run in hydra.run.dir from its last checkpoint


ConfigStore.instance().store(name="config_schema", node=Config)
# Job directory names from override sets: `batch='16',batch.grad_accum=2` -> `batch=16,batch.grad_accum=2`.
OmegaConf.register_new_resolver("job_dirname", lambda s: s.replace("'", "").replace("/", "-") or "defaults",
                                replace=True)
# Run directories: under torchrun every rank names the same one (src/distributed.py says how).
OmegaConf.register_new_resolver("run_stamp", lambda fmt: __import__("src.distributed", fromlist=["x"]).run_stamp(fmt),
                                replace=True, use_cache=True)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONF_DIR = os.path.join(ROOT, "conf")
# Hydra finds launchers and sweepers by walking the hydra_plugins namespace, which is rebuilt from
# sys.path; an editable install doesn't put the repo root there, so a run started elsewhere would miss
# the `isolated` launcher and the `batch_search` sweeper.
if ROOT not in sys.path:
    sys.path.append(ROOT)
_NUMERIC_CHOICE = re.compile(r"^([+~]{0,2})([\w/-]+)=(\d+(?:,\d+)*)$")


def compose(overrides: list[str]) -> DictConfig:
    """The config `python -m src.run OVERRIDES` would run, for tests and benchmarks."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return hydra_compose("config", overrides=quote_numeric_choices(list(overrides)))


def quote_numeric_choices(args: list[str]) -> list[str]:
    """`batch=16` -> `batch='16'`. Hydra parses a bare 16 as an int and refuses it as a config group
    choice; quoted, it names conf/batch/16.yaml. Sweeps too: `batch=4,8` -> `batch='4','8'`."""
    out = []
    for arg in args:
        m = _NUMERIC_CHOICE.match(arg)
        if m and os.path.isdir(os.path.join(CONF_DIR, m.group(2))):
            arg = f"{m.group(1)}{m.group(2)}=" + ",".join(f"'{v}'" for v in m.group(3).split(","))
        out.append(arg)
    return out

TASKS = ("classification", "causal_lm", "seq2seq")
ENCODER_DECODER = ("bart", "mbart", "t5", "mt5", "pegasus", "marian")
PADDINGS = ("max_length", "longest", "dynamic", "bucketed", "packed")
PACKED_TASKS = ("classification", "causal_lm")
DTYPES = ("float32", "bfloat16", "float16", "auto")
AMPS = ("none", "bf16", "fp16", "auto")
ATTENTIONS = ("auto", "eager", "sdpa", "varlen", "flex_attention", "flash_attention_2")


def _one_of(key: str, value: Any, allowed) -> None:
    if value not in allowed:
        raise ConfigError(key, value, "allowed: " + ", ".join(map(str, allowed)))


def _positive(key: str, value: Any) -> None:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(key, value, "must be a positive integer")


def validate(cfg: DictConfig, cuda_available: bool) -> None:
    """Check values the schema's types can't. Raises ConfigError naming the first bad key."""
    m, t, d, p = cfg.model, cfg.task, cfg.data, cfg.padding
    _one_of("device", cfg.device, ("auto", "cuda", "cpu"))
    _one_of("mode", cfg.mode, ("train", "diagnose"))
    _one_of("model.init.head_init", m.init.head_init, ("default", "zero", "scaled"))
    if m.init.head_init != "default" and cfg.task.name != "classification":
        raise ConfigError("model.init.head_init", m.init.head_init, "re-initialises a classification head; task is " + cfg.task.name)
    if m.init.hidden_norm is not None and m.init.hidden_norm <= 0:
        raise ConfigError("model.init.hidden_norm", m.init.hidden_norm, "must be > 0")
    if cfg.device == "cuda" and not cuda_available:
        raise ConfigError("device", "cuda", "no CUDA device is visible; use device=auto or device=cpu")
    on_gpu = cuda_available and cfg.device != "cpu"

    if m.model_type == "auto" or m.pretrained:
        if not m.name_or_path:
            raise ConfigError("model.name_or_path", None, "set it to a local model directory (or a hub id)")
        looks_local = m.name_or_path.startswith((".", "/", "~")) or os.path.sep in m.name_or_path.strip("/")
        if looks_local and not os.path.isfile(os.path.join(os.path.expanduser(m.name_or_path), "config.json")):
            raise ConfigError("model.name_or_path", m.name_or_path, "no config.json there; give a Hugging Face model directory")
    elif not m.arch:
        raise ConfigError("model.arch", "{}", "pretrained=false builds from the architecture: give model.arch")

    _one_of("task.name", t.name, TASKS)
    if t.name == "classification" and t.num_labels < 2:
        raise ConfigError("task.num_labels", t.num_labels, "classification needs at least 2 labels")
    if t.name == "seq2seq" and m.model_type not in ENCODER_DECODER + ("auto",):
        raise ConfigError("task.name", "seq2seq", f"needs an encoder-decoder model (e.g. model=kobart), not {m.model_type}")

    _one_of("data.source", d.source, ("synthetic", "files"))
    if d.source == "files" and not d.train_file:
        raise ConfigError("data.train_file", None, "data=files needs a path to a CSV, JSONL or Parquet file")
    _positive("data.size", d.size)
    _positive("data.max_length", d.max_length)
    if not d.length_min <= d.length_max:
        raise ConfigError("data.length_min", d.length_min, f"must be <= data.length_max ({d.length_max})")

    _one_of("padding.strategy", p.strategy, PADDINGS)
    _one_of("padding.side", p.side, ("right", "left"))
    if p.pad_to_multiple_of is not None:
        _positive("padding.pad_to_multiple_of", p.pad_to_multiple_of)
    if p.strategy == "packed" and t.name not in PACKED_TASKS:
        raise ConfigError("padding.strategy", "packed", f"padding-free batches are for task=classification or causal_lm, not {t.name}")

    if cfg.dataloader.num_workers < 0:
        raise ConfigError("dataloader.num_workers", cfg.dataloader.num_workers, "must be >= 0")
    if cfg.dataloader.prefetch_factor is not None and cfg.dataloader.num_workers == 0:
        raise ConfigError("dataloader.prefetch_factor", cfg.dataloader.prefetch_factor, "needs dataloader.num_workers > 0")

    pr = cfg.precision
    _one_of("precision.weights_dtype", pr.weights_dtype, DTYPES)
    _one_of("precision.amp", pr.amp, AMPS)
    if not on_gpu and "fp16" in (pr.amp, pr.weights_dtype.replace("float16", "fp16")):
        raise ConfigError("precision", pr.name, "fp16 needs a CUDA GPU; on the CPU use precision=bf16 or fp32")
    if pr.weights_dtype == "float16" and cfg.peft.method == "none":
        raise ConfigError("precision.weights_dtype", "float16", "fp16 weights can't be trained in full; use peft=lora or precision=bf16")

    _positive("batch.size", cfg.batch.size)
    _positive("batch.grad_accum", cfg.batch.grad_accum)
    tokens = cfg.batch.tokens
    if tokens is not None:
        if p.strategy != "packed":
            raise ConfigError("batch.tokens", tokens, "a token budget packs sequences: add padding=packed")
        if not isinstance(tokens, int) or tokens < d.max_length:
            raise ConfigError("batch.tokens", tokens, f"must be an integer >= data.max_length ({d.max_length}): a pack holds whole sequences")

    pe = cfg.peft
    _one_of("peft.method", pe.method, ("none", "lora", "qlora"))
    _one_of("peft.adapter_dtype", pe.adapter_dtype, ("float32", "auto"))
    if pe.method != "none":
        _positive("peft.r", pe.r)
    if pe.method == "qlora":
        if not on_gpu:
            raise ConfigError("peft", "qlora", "4-bit QLoRA (bitsandbytes) needs a CUDA GPU; on the CPU use peft=lora")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError("peft", "qlora", "needs bitsandbytes: pip install bitsandbytes (or pip install -e .[qlora])")

    att = cfg.attention.implementation
    _one_of("attention.implementation", att, ATTENTIONS)
    if att == "varlen":
        if not on_gpu or importlib.util.find_spec("torch.nn.attention.varlen") is None:
            raise ConfigError("attention", att, "varlen is PyTorch's flash kernel for CUDA GPUs (torch >= 2.10); on the CPU use attention=sdpa")
        if t.name == "seq2seq":
            raise ConfigError("attention", att, "varlen is causal self-attention for decoder-only models, not seq2seq")
    if att == "flex_attention" and not on_gpu:  # on the CPU its packed-sequence mask gives NaN (torch 2.13)
        raise ConfigError("attention", att, "flex_attention runs on CUDA GPUs here; on the CPU use attention=sdpa")
    if att == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        raise ConfigError("attention", att, "needs the flash-attn package (pip install flash-attn); or use attention=sdpa")

    _one_of("logger.name", cfg.logger.name, ("none", "csv", "wandb"))
    _one_of("logger.mode", cfg.logger.mode, ("offline", "online", "disabled"))

    dd = cfg.distributed
    _one_of("distributed.strategy", dd.strategy, ("auto", "ddp", "fsdp"))
    _one_of("distributed.backend", dd.backend, ("auto", "nccl", "gloo"))
    _positive("distributed.nproc_per_job", dd.nproc_per_job)
    if dd.strategy == "fsdp":
        if not on_gpu:  # accelerate falls back to DDP on CPU processes without saying so
            raise ConfigError("distributed", "fsdp", "FSDP shards over CUDA GPUs; on the CPU use distributed=ddp")
        if pe.method == "qlora":
            raise ConfigError("distributed", "fsdp", "FSDP over 4-bit QLoRA weights is not supported here; use distributed=ddp")
    if dd.backend == "nccl" and not on_gpu:
        raise ConfigError("distributed.backend", "nccl", "NCCL needs CUDA GPUs; use gloo (or auto) on the CPU")

    cap = cfg.gpu.memory_cap_gb
    if cap is not None and (cap <= 0 or not on_gpu):
        raise ConfigError("gpu.memory_cap_gb", cap, "must be > 0 GB, on a CUDA GPU")
    if cfg.debug.collate_delay_ms < 0:
        raise ConfigError("debug.collate_delay_ms", cfg.debug.collate_delay_ms, "must be >= 0")

    tr = cfg.trainer
    _positive("trainer.max_steps", tr.max_steps)
    _positive("trainer.checkpoint_every", tr.checkpoint_every)
    _positive("trainer.recompile_limit", tr.recompile_limit)
    if tr.compile_mode is not None:
        _one_of("trainer.compile_mode", tr.compile_mode, ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"))
    _one_of("trainer.compile_backend", tr.compile_backend, ("inductor", "aot_eager", "eager"))
    _one_of("trainer.compile_scope", tr.compile_scope, ("regional", "model"))
    if tr.torch_compile and tr.compile_scope == "regional" and tr.compile_mode in ("reduce-overhead", "max-autotune"):
        # every layer replays one CUDA graph, overwriting the previous layer's output that backward still needs
        raise ConfigError("trainer.compile_mode", tr.compile_mode, "CUDA graphs need the whole model compiled: add trainer.compile_scope=model")
    if tr.use_liger_kernel:
        if not on_gpu:
            raise ConfigError("trainer.use_liger_kernel", True, "Liger's kernels are Triton kernels for CUDA GPUs")
        if importlib.util.find_spec("liger_kernel") is None:
            raise ConfigError("trainer.use_liger_kernel", True, "needs the liger-kernel package (pip install liger-kernel)")
    _positive("trainer.logging_steps", tr.logging_steps)
    if tr.lr <= 0:
        raise ConfigError("trainer.lr", tr.lr, "must be > 0")
    for key in ("warmup_steps", "eval_steps", "save_steps"):
        if tr[key] < 0:
            raise ConfigError(f"trainer.{key}", tr[key], "must be >= 0")
    if tr.eval_steps and not (d.eval_size or d.eval_file):
        raise ConfigError("trainer.eval_steps", tr.eval_steps, "needs an eval set: data.eval_size > 0 or data.eval_file")
    me = cfg.measure
    if me.warmup_steps < 0 or me.profile_steps < 0:
        raise ConfigError("measure", f"{me.warmup_steps}/{me.profile_steps}", "warmup_steps and profile_steps must be >= 0")
    if me.enabled and me.warmup_steps + (me.profile_steps if on_gpu else 0) >= tr.max_steps:
        raise ConfigError("measure.warmup_steps", me.warmup_steps,
                          f"warm-up + profiled steps must leave timed steps in trainer.max_steps ({tr.max_steps})")
