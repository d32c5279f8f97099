"""Config schema: one dataclass per config group, registered in Hydra's ConfigStore, each with the checks of
its values right under it; `validate` runs them all.

Hydra checks keys and types against these dataclasses while it composes, and a field that takes one of a
fixed set of strings is a Choice (an Enum), so Hydra refuses any other value there too. Each group's `check`
covers what types can't (ranges, another group's setting, what this machine has) and raises ConfigError,
which run.py turns into one line on stderr and exit code 2. OmegaConf runs no __post_init__ on a composed
config, so the checks are staticmethods that `validate` calls with the composed DictConfig.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import II, MISSING, DictConfig, OmegaConf

from .distributed import run_stamp


class ConfigError(ValueError):
    """A bad config value: `key=value: what is allowed`."""

    def __init__(self, key: str, value: Any, allowed: str):
        super().__init__(f"{key}={value}: {allowed}")
        self.parts = (key, value, allowed)

    def __reduce__(self):  # raised in a datasets.map worker (data.num_proc > 1), it comes back pickled
        return type(self), self.parts


class Choice(str, Enum):
    """A closed set of strings, made as `Choice("Name", "value1 value2 ...")`. A member is a str equal to its
    value and named by it (OmegaConf looks members up by name), and prints as it, so code written for plain
    strings (`== "packed"`, f-strings, json in report.json, W&B's config) sees no difference."""

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return name

    def __str__(self) -> str:  # Enum's own: "PaddingStrategy.packed"
        return self.value

    def __format__(self, spec: str) -> str:  # f-strings: a str-mixed Enum formats like Enum.__str__ otherwise
        return format(self.value, spec)

    def __repr__(self) -> str:  # inside a printed dict or list: 'packed', not <PaddingStrategy.packed: 'packed'>
        return repr(self.value)


def _positive(key: str, value: Any) -> None:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(key, value, "must be a positive integer")


HeadInit = Choice("HeadInit", "auto default zero scaled")


@dataclass
class InitConfig:
    # auto: zero for a random-init classifier without hidden_norm (its loss starts at ln(num_labels) at any width),
    # the model's own otherwise | default (initializer_range) | zero | scaled (std = 1 / the hidden-state norm)
    head_init: HeadInit = HeadInit.auto
    hidden_norm: Optional[float] = None  # set the final norm's gain so hidden states reach this L2 norm

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        init = cfg.model.init
        if init.head_init not in ("auto", "default") and cfg.task.name != "classification":
            raise ConfigError("model.init.head_init", init.head_init, "re-initialises a classification head; task is " + cfg.task.name)
        if init.hidden_norm is not None and init.hidden_norm <= 0:
            raise ConfigError("model.init.hidden_norm", init.hidden_norm, "must be > 0")


@dataclass
class ModelConfig:
    name: str = MISSING
    model_type: str = MISSING  # transformers model_type (qwen3, llama, bart, gpt_neox) or "auto"
    name_or_path: Optional[str] = None  # local dir (or hub id on your machine) for real weights/tokenizer
    pretrained: bool = False  # false: random init from `arch`, no download, same speed and memory
    arch: Dict[str, Any] = MISSING  # the architecture, passed to AutoConfig.for_model ({} with pretrained weights)
    trust_remote_code: bool = False
    lr: float = 1e-4  # a learning rate that suits this model under LoRA; trainer.lr defaults to it
    init: InitConfig = field(default_factory=InitConfig)
    allow_large_on_cpu: bool = False  # true: build a model over 1B parameters on the CPU anyway (tens of GB of RAM, minutes a step)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        m = cfg.model
        if m.model_type == "auto" or m.pretrained:
            if not m.name_or_path:
                raise ConfigError("model.name_or_path", None, "set it to a local model directory (or a hub id)")
            path = os.path.expanduser(m.name_or_path)
            # a path, if it is written as one or exists; else a hub id ("Qwen/Qwen3-4B"), which from_pretrained
            # finds in the local Hugging Face cache (models.hf_config says in one line when it can't)
            if m.name_or_path.startswith((".", "/", "~")) or os.path.exists(path):
                if not os.path.isfile(os.path.join(path, "config.json")):
                    raise ConfigError("model.name_or_path", m.name_or_path, "no config.json there; give a Hugging Face model directory")
                ModelConfig.check_directory(path)
        elif not m.arch:
            raise ConfigError("model.arch", "{}", "pretrained=false builds from the architecture: give model.arch")

    @staticmethod
    def check_directory(path: str) -> None:
        """What from_pretrained would fail on seconds later, with a 40-line traceback: config.json that is not
        JSON, and no weights. (A model_type transformers doesn't know is found when it loads: models.hf_config.)"""
        conf = os.path.join(path, "config.json")
        try:
            with open(conf) as f:
                json.load(f)
        except ValueError as exc:
            raise ConfigError("model.name_or_path", path, f"{conf} is not valid JSON ({exc})") from None
        weights = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin", ".index.json", ".pth", ".pt"))
                   and n != "training_args.bin"]
        if not weights:
            raise ConfigError("model.name_or_path", path, "no weights there (model.safetensors, pytorch_model.bin "
                                                          "or a sharded index); pretrained=false builds from model.arch")


Task = Choice("Task", "classification causal_lm seq2seq")
ENCODER_DECODER = ("bart", "mbart", "t5", "mt5", "pegasus", "marian")  # the model_types task=seq2seq takes


@dataclass
class TaskConfig:
    name: Task = MISSING
    num_labels: int = MISSING  # classification only (0 for the others)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        t = cfg.task
        if t.name == "classification" and t.num_labels < 2:
            raise ConfigError("task.num_labels", t.num_labels, "classification needs at least 2 labels")
        if t.name == "seq2seq" and cfg.model.model_type not in ENCODER_DECODER + ("auto",):
            raise ConfigError("task.name", "seq2seq", f"needs an encoder-decoder model (e.g. model=kobart), not {cfg.model.model_type}")


DataSource = Choice("DataSource", "synthetic files")
DataFormat = Choice("DataFormat", "text alpaca sharegpt messages")  # data=files, task=causal_lm: src/formats.py


@dataclass
class DataConfig:
    source: DataSource = MISSING
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
    format: DataFormat = DataFormat.text  # text: text_column as it is | alpaca | sharegpt | messages: loss on the answers only
    num_proc: int = 1  # tokenisation processes
    tokenizer_vocab_size: int = 8000  # the offline fallback BPE's size, for models without a tokenizer
    seed: int = 0

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        d = cfg.data
        if d.source == "files" and not d.train_file:
            raise ConfigError("data.train_file", None, "data=files needs a path to a CSV, JSONL or Parquet file")
        _positive("data.size", d.size)
        _positive("data.max_length", d.max_length)
        if not d.length_min <= d.length_max:
            raise ConfigError("data.length_min", d.length_min, f"must be <= data.length_max ({d.length_max})")
        if d.format != "text" and cfg.task.name != "causal_lm":
            raise ConfigError("data.format", d.format, f"instruction and chat data train a causal LM: add task=causal_lm "
                                                       f"(task is {cfg.task.name}; data.format=text for other tasks)")
        if d.format != "text" and d.source != "files":
            raise ConfigError("data.format", d.format, "reads instruction or chat rows from a file: add data=files "
                                                       "data.train_file=PATH")


PaddingStrategy = Choice("PaddingStrategy", "max_length longest dynamic grouped packed")  # packed: padding-free
PaddingSide = Choice("PaddingSide", "right left")
PACKED_TASKS = ("classification", "causal_lm")  # the tasks padding=packed takes


@dataclass
class PaddingConfig:
    strategy: PaddingStrategy = MISSING
    pad_to_multiple_of: Optional[int] = None
    side: PaddingSide = PaddingSide.right
    chunk_size: int = 1000  # padding=longest pads each chunk of this many rows to its longest (datasets.map's batch)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        p = cfg.padding
        if p.pad_to_multiple_of is not None:
            _positive("padding.pad_to_multiple_of", p.pad_to_multiple_of)
        if p.strategy == "packed" and cfg.task.name not in PACKED_TASKS:
            raise ConfigError("padding.strategy", "packed", f"padding-free batches are for task=classification or causal_lm, not {cfg.task.name}")


@dataclass
class DataloaderConfig:
    name: str = MISSING
    num_workers: int = MISSING
    pin_memory: bool = MISSING
    prefetch_factor: Optional[int] = MISSING
    persistent_workers: bool = MISSING

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        dl = cfg.dataloader
        if dl.num_workers < 0:
            raise ConfigError("dataloader.num_workers", dl.num_workers, "must be >= 0")
        if dl.prefetch_factor is not None and dl.num_workers == 0:
            raise ConfigError("dataloader.prefetch_factor", dl.prefetch_factor, "needs dataloader.num_workers > 0")


Dtype = Choice("Dtype", "float32 bfloat16 float16 auto")
Amp = Choice("Amp", "none bf16 fp16 auto")


@dataclass
class PrecisionConfig:
    name: str = MISSING  # fp32 | tf32 | bf16 | fp16 | auto: the option's name, for messages
    weights_dtype: Dtype = MISSING
    amp: Amp = MISSING  # autocast dtype for the forward pass
    tf32: bool = MISSING

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        pr = cfg.precision
        if not on_gpu and "fp16" in (pr.amp, pr.weights_dtype.replace("float16", "fp16")):
            raise ConfigError("precision", pr.name, "fp16 needs a CUDA GPU; on the CPU use precision=bf16 or fp32")
        if pr.weights_dtype == "float16" and cfg.peft.method == "none":
            raise ConfigError("precision.weights_dtype", "float16", "fp16 weights can't be trained in full; use peft=lora or precision=bf16")


@dataclass
class BatchConfig:
    size: int = 8
    grad_accum: int = 1
    tokens: Optional[int] = None  # padding=packed: tokens per micro-batch (a fixed shape); None packs `size` rows

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        b = cfg.batch
        _positive("batch.size", b.size)
        _positive("batch.grad_accum", b.grad_accum)
        if b.tokens is not None:
            if cfg.padding.strategy != "packed":
                raise ConfigError("batch.tokens", b.tokens, "a token budget packs sequences: add padding=packed")
            if not isinstance(b.tokens, int) or b.tokens < cfg.data.max_length:
                raise ConfigError("batch.tokens", b.tokens, f"must be an integer >= data.max_length ({cfg.data.max_length}): a pack holds whole sequences")


PeftMethod = Choice("PeftMethod", "none lora qlora")
AdapterDtype = Choice("AdapterDtype", "float32 auto")


@dataclass
class PeftConfig:
    method: PeftMethod = MISSING
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str = "all-linear"
    quant_type: str = "nf4"
    double_quant: bool = True
    compute_dtype: str = "bfloat16"
    adapter_dtype: AdapterDtype = AdapterDtype.auto  # auto: the weights' dtype (bf16: no casts) | float32 (peft's default: a cast around every adapter matmul)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        pe = cfg.peft
        if pe.method != "none":
            _positive("peft.r", pe.r)
        if pe.method == "qlora":
            if not on_gpu:
                raise ConfigError("peft", "qlora", "4-bit QLoRA (bitsandbytes) needs a CUDA GPU; on the CPU use peft=lora")
            if importlib.util.find_spec("bitsandbytes") is None:
                raise ConfigError("peft", "qlora", "needs bitsandbytes: pip install bitsandbytes (or pip install -e .[qlora])")


Attention = Choice("Attention", "auto eager sdpa varlen flex_attention flash_attention_2")


@dataclass
class AttentionConfig:
    implementation: Attention = MISSING

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        att = cfg.attention.implementation
        if att == "varlen":
            if not on_gpu or importlib.util.find_spec("torch.nn.attention.varlen") is None:
                raise ConfigError("attention", att, "varlen is PyTorch's flash kernel for CUDA GPUs (torch >= 2.10); on the CPU use attention=sdpa")
            if cfg.task.name == "seq2seq":
                raise ConfigError("attention", att, "varlen is causal self-attention for decoder-only models, not seq2seq")
        if att == "flex_attention" and not on_gpu:  # on the CPU its packed-sequence mask gives NaN (torch 2.13)
            raise ConfigError("attention", att, "flex_attention runs on CUDA GPUs here; on the CPU use attention=sdpa")
        if att == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
            raise ConfigError("attention", att, "needs the flash-attn package (pip install flash-attn); or use attention=sdpa")


@dataclass
class EnvConfig:
    name: str = MISSING
    tf32: bool = MISSING
    cudnn_benchmark: bool = MISSING
    sdp_backends: List[str] = MISSING  # empty: torch's own choice
    num_threads: int = 0  # 0: torch's default
    alloc_conf: Optional[str] = MISSING  # PYTORCH_CUDA_ALLOC_CONF, set before CUDA starts


LoggerName = Choice("LoggerName", "none csv wandb")
LoggerMode = Choice("LoggerMode", "offline online disabled")


@dataclass
class LoggerConfig:
    name: LoggerName = MISSING
    project: str = "trainsweep"
    entity: Optional[str] = None
    mode: LoggerMode = LoggerMode.offline


CompileScope = Choice("CompileScope", "regional model")
CompileMode = Choice("CompileMode", "default reduce-overhead max-autotune max-autotune-no-cudagraphs")  # CompileMode["reduce-overhead"]
CompileBackend = Choice("CompileBackend", "inductor aot_eager eager")


@dataclass
class TrainerConfig:
    max_steps: int = 60
    lr: float = II("model.lr")
    warmup_steps: int = 0
    scheduler: str = "constant_with_warmup"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch_fused"
    gradient_checkpointing: bool = False
    checkpoint_reentrant: bool = False  # the older checkpointing; with LoRA it needs input grads (a diagnostic checks)
    checkpoint_every: int = 1  # with gradient_checkpointing: recompute every k-th decoder layer only (k=2: half)
    torch_compile: bool = False  # torch.compile: each decoder layer (compile_scope=regional) or the whole model
    compile_scope: CompileScope = CompileScope.regional  # regional: one layer compiled, the rest reuse it (seconds) | model: the Trainer's whole-model compile
    compile_mode: Optional[CompileMode] = None  # None/default | reduce-overhead (CUDA graphs) | max-autotune | max-autotune-no-cudagraphs
    compile_backend: CompileBackend = CompileBackend.inductor  # aot_eager | eager: no codegen, for tests
    recompile_limit: int = 8  # new shapes compiled before torch falls back to eager for that frame
    use_liger_kernel: bool = False  # Liger's Triton kernels (RMSNorm, SwiGLU, RoPE, fused linear CE); CUDA, needs liger-kernel
    logging_steps: int = 10
    eval_steps: int = 0  # 0: no evaluation
    generation_max_length: int = 64  # seq2seq eval: summaries are generated for ROUGE
    generation_num_beams: int = 1
    save_steps: int = 0  # 0: no checkpoints
    save_total_limit: int = 2  # checkpoints kept (each holds the trainable weights and optimizer state)
    save_final: bool = True  # after training: the adapter (PEFT) or the whole model, and the tokenizer, in <run dir>/final
    seed: int = 0
    args: Dict[str, Any] = field(default_factory=dict)  # any other TrainingArguments field, passed as given (src/train.py)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        tr = cfg.trainer
        _positive("trainer.max_steps", tr.max_steps)
        _positive("trainer.checkpoint_every", tr.checkpoint_every)
        _positive("trainer.recompile_limit", tr.recompile_limit)
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
        if tr.eval_steps and not (cfg.data.eval_size or cfg.data.eval_file):
            raise ConfigError("trainer.eval_steps", tr.eval_steps, "needs an eval set: data.eval_size > 0 or data.eval_file")


@dataclass
class MeasureConfig:
    warmup_steps: int = 5  # steps excluded from timing (allocator growth, autotune, new shapes)
    profile_steps: int = 3  # GPU only: steps after the timed window run under torch.profiler (GPU busy share)
    peak_tflops: Optional[float] = None  # override the card's peak for MFU
    predict_memory: bool = True  # GPU: trace a 1-2 layer copy before training and predict the peak (seconds)
    stop_when_stable: bool = False  # end training once the mean step time is known to rel_error (sweeps)
    rel_error: float = 0.03  # stop_when_stable: the 95% interval's half-width / mean step time to stop at
    min_steps: int = 20  # timed steps before stop_when_stable may stop (an interval needs a few batch means)
    enabled: bool = True

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        me, max_steps = cfg.measure, cfg.trainer.max_steps
        if me.warmup_steps < 0 or me.profile_steps < 0:
            raise ConfigError("measure", f"{me.warmup_steps}/{me.profile_steps}", "warmup_steps and profile_steps must be >= 0")


@dataclass
class GpuConfig:
    memory_cap_gb: Optional[float] = None  # per-process cap (set_per_process_memory_fraction): emulate a smaller card

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        cap = cfg.gpu.memory_cap_gb
        if cap is not None and (cap <= 0 or not on_gpu):
            raise ConfigError("gpu.memory_cap_gb", cap, "must be > 0 GB, on a CUDA GPU")


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

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        if cfg.debug.collate_delay_ms < 0:
            raise ConfigError("debug.collate_delay_ms", cfg.debug.collate_delay_ms, "must be >= 0")


DistributedStrategy = Choice("DistributedStrategy", "auto ddp fsdp")  # auto: ddp when torchrun starts several processes
DistributedBackend = Choice("DistributedBackend", "auto nccl gloo")  # auto: nccl on GPUs, gloo on CPUs


@dataclass
class DistributedConfig:
    strategy: DistributedStrategy = DistributedStrategy.auto
    nproc_per_job: int = 1  # sweeps: processes (GPUs) per job, started by the launcher as torchrun would
    backend: DistributedBackend = DistributedBackend.auto
    find_unused_parameters: bool = False  # true walks the graph for unused params every step
    bucket_cap_mb: Optional[int] = None  # DDP gradient bucket size; None: torch's 25 MB
    fsdp_reshard_after_forward: bool = True  # false keeps gathered params until backward: more memory, fewer all-gathers
    fsdp_cpu_offload: bool = False  # params and grads in host memory between uses: fits more, much slower
    fsdp_activation_checkpointing: bool = False  # FSDP's own recompute (not trainer.gradient_checkpointing)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        dd = cfg.distributed
        _positive("distributed.nproc_per_job", dd.nproc_per_job)
        if dd.strategy == "fsdp":
            if not on_gpu:  # accelerate falls back to DDP on CPU processes without saying so
                raise ConfigError("distributed", "fsdp", "FSDP shards over CUDA GPUs; on the CPU use distributed=ddp")
            if cfg.peft.method == "qlora":
                raise ConfigError("distributed", "fsdp", "FSDP over 4-bit QLoRA weights is not supported here; use distributed=ddp")
        if dd.backend == "nccl" and not on_gpu:
            raise ConfigError("distributed.backend", "nccl", "NCCL needs CUDA GPUs; use gloo (or auto) on the CPU")


@dataclass
class DiagnosticsConfig:
    enabled: bool = True  # the cheap checks before every run (one forward and backward on a real batch)
    expensive: bool = False  # also the grad-accumulation equivalence (always on in mode=diagnose)
    stop_on_fail: bool = False  # true: a failed check stops the run before training


Device = Choice("Device", "auto cuda cpu")
Mode = Choice("Mode", "train diagnose")  # diagnose: every check, no training; exit 1 if any fails


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
    mode: Mode = Mode.train
    device: Device = Device.auto
    rerun: bool = False  # true: recompute a run whose directory already holds a finished report
    resume: bool = False  # true: continue the interrupted run in hydra.run.dir from its last checkpoint
    baseline: Optional[str] = None  # a sweep's reference job, by an override (debug=none): the summary compares each job with it
    repeat: int = 0  # which repeat of a sweep job (sweep.repeats: hydra_plugins/trainsweep/launcher.py); the run ignores it


def validate(cfg: DictConfig, cuda_available: bool) -> None:
    """Check what the schema's types can't, group by group. Raises ConfigError naming the first bad key."""
    if cfg.device == "cuda" and not cuda_available:
        raise ConfigError("device", "cuda", "no CUDA device is visible; use device=auto or device=cpu")
    on_gpu = cuda_available and cfg.device != "cpu"
    for group in (InitConfig, ModelConfig, TaskConfig, DataConfig, PaddingConfig, DataloaderConfig, PrecisionConfig,
                  BatchConfig, PeftConfig, AttentionConfig, DistributedConfig, GpuConfig, DebugConfig, TrainerConfig,
                  MeasureConfig):
        group.check(cfg, on_gpu)


ConfigStore.instance().store(name="config_schema", node=Config)
# Job directory names from override sets: `batch='16',batch.grad_accum=2` -> `batch=16,batch.grad_accum=2`.
MAX_DIRNAME = 200  # bytes; most file systems stop at 255, and a sweep with a dozen overrides passes that


def job_dirname(overrides: str) -> str:
    """A sweep job's directory name: its overrides, readable; past MAX_DIRNAME their start and a hash of the whole,
    so the name stays unique and the same on a rerun (which finds the finished jobs by it)."""
    name = overrides.replace("'", "").replace("/", "-") or "defaults"
    if len(name.encode()) <= MAX_DIRNAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return name.encode()[:MAX_DIRNAME - 13].decode(errors="ignore") + "-" + digest


OmegaConf.register_new_resolver("job_dirname", job_dirname, replace=True)
# Run directories: under torchrun every rank names the same one (src/distributed.py says how).
OmegaConf.register_new_resolver("run_stamp", lambda fmt: run_stamp(fmt), replace=True, use_cache=True)
# This package's import name, for the config's `_target_`s: `src` in a checkout, `trainsweep` installed.
OmegaConf.register_new_resolver("package", lambda: __package__, replace=True)
PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(PACKAGE_DIR)
# The config groups: beside the package in a checkout (src/../conf), inside it when installed (trainsweep/conf).
CONF_DIR = next(d for d in (os.path.join(PACKAGE_DIR, "conf"), os.path.join(ROOT, "conf")) if os.path.isdir(d))
# Hydra finds launchers and sweepers by walking the hydra_plugins namespace, which is rebuilt from
# sys.path; an editable install doesn't put the repo root there, so a run started elsewhere would miss
# the `isolated` launcher and the `batch_search` sweeper.
if ROOT not in sys.path:
    sys.path.append(ROOT)


def compose(overrides: list[str]) -> DictConfig:
    """The config `python -m src.run OVERRIDES` would run, for tests and benchmarks; a value outside a
    closed set raises ConfigError, as the command line refuses it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from .cli import check_choices, quote_numeric_choices, rewrite  # here: src.cli imports this module

    check_choices(overrides)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return hydra_compose("config", overrides=quote_numeric_choices(rewrite(list(overrides))))
