"""The schema of the groups that say how a run trains and measures: env, logger, trainer, measure, gpu, debug,
distributed, diagnostics."""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional

from omegaconf import II, MISSING, DictConfig

from ..base import ranks
from .compiling import inductor_options_check, layers_once_check
from .errors import Choice, ConfigError, positive, seed_in_range


@dataclass
class EnvConfig:
    name: str = MISSING
    tf32: bool = MISSING
    cudnn_benchmark: bool = MISSING
    sdp_backends: List[str] = MISSING  # the sdpa kernels allowed (flash mem_efficient cudnn math); empty: torch's own choice
    num_threads: int = 0  # 0: torch's default
    alloc_conf: Optional[str] = MISSING  # PYTORCH_CUDA_ALLOC_CONF, set before CUDA starts

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        if not isinstance(cfg.env.num_threads, int) or cfg.env.num_threads < 0:
            raise ConfigError("env.num_threads", cfg.env.num_threads, "must be 0 (torch's default) or a positive integer")
        known = ("flash", "mem_efficient", "cudnn", "math")
        for name in cfg.env.sdp_backends:
            if name not in known:
                raise ConfigError("env.sdp_backends", list(cfg.env.sdp_backends), f"{name!r} is no sdpa kernel: allowed: {', '.join(known)}")
        if cfg.attention.kernel == "cudnn" and cfg.env.sdp_backends and "cudnn" not in cfg.env.sdp_backends:
            raise ConfigError("attention.kernel", "cudnn", f"env.sdp_backends={list(cfg.env.sdp_backends)} leaves cuDNN's kernel out")


# The TrainingArguments names people already type, for the knobs trainsweep owns (src/config/cli.py renames them)
HF_NAMES = {"learning_rate": "trainer.lr", "per_device_train_batch_size": "batch.size",
            "gradient_accumulation_steps": "batch.grad_accum", "max_steps": "trainer.max_steps",
            "num_train_epochs": "trainer.epochs"}


def own_keys() -> dict:
    """TrainingArguments fields trainsweep sets from its own keys, which the report reads: trainer.args may not
    set them, and the Hugging Face names on the command line become these keys (src/config/cli.py)."""
    return {**HF_NAMES, "output_dir": "hydra.run.dir", "bf16": "precision", "fp16": "precision",
            "torch_compile": "trainer.torch_compile", "gradient_checkpointing": "trainer.gradient_checkpointing",
            "use_liger_kernel": "trainer.use_liger_kernel", "report_to": "logger",
            "eval_strategy": "trainer.eval_steps", "eval_steps": "trainer.eval_steps"}


def training_argument_fields(seq2seq: bool = False) -> set[str] | None:
    """TrainingArguments' field names (Seq2SeqTrainingArguments' too with seq2seq), read from transformers' source
    rather than imported (seconds of torch), so a typo in trainer.args answers before anything is built. None where
    the source can't be read: src/train/trainer.py checks the names again on the imported class."""
    import ast
    import os

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return None
    classes = {"training_args.py": "TrainingArguments", "training_args_seq2seq.py": "Seq2SeqTrainingArguments"}
    names: set[str] = set()
    for file, cls in list(classes.items())[:2 if seq2seq else 1]:
        try:
            with open(os.path.join(spec.submodule_search_locations[0], file)) as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError):
            return None
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if body is None:
            return None
        names |= {n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    return names


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


def uses_cuda_graphs(tr) -> bool:
    """The compile modes that capture CUDA graphs (torch's cudagraph trees)."""
    return bool(tr.torch_compile) and tr.compile_mode in ("reduce-overhead", "max-autotune")


@dataclass
class TrainerConfig:
    max_steps: int = 60
    epochs: Optional[float] = None  # passes over the train rows: sets max_steps from the data (max_steps is then unused, and said)
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
    compile_workers_early: bool = False  # start inductor's compile workers as the run starts: a loss on an H200 (experiments/speed), kept off
    inductor: Dict[str, Any] = field(default_factory=dict)  # torch._inductor.config options for this run's compiles, e.g. coordinate_descent_tuning
    compile_layers_once: bool = False  # compile_scope=model: each decoder layer a nested compile region, compiled once (cold compile shorter; step and memory lose: experiments/speed)
    compile_one_graph: bool = True  # regional under LoRA: one layer graph for all (half the compile); the first layer's unused input grad cost no measurable step time
    use_liger_kernel: bool = False  # Liger's Triton kernels (RMSNorm, SwiGLU, RoPE, fused linear CE); CUDA, needs liger-kernel
    logging_steps: int = 10
    eval_steps: int = 0  # 0: no evaluation
    generation_max_length: int = 64  # seq2seq eval: summaries are generated for ROUGE
    generation_num_beams: int = 1
    save_steps: int = 0  # 0: no checkpoints
    save_total_limit: int = 2  # checkpoints kept (each holds the trainable weights and optimizer state)
    save_final: bool = True  # after training: the adapter (PEFT) or the whole model, and the tokenizer, in <run dir>/final
    seed: int = 0
    args: Dict[str, Any] = field(default_factory=dict)  # any other TrainingArguments field, passed as given (src/train/trainer.py)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        tr = cfg.trainer
        positive("trainer.max_steps", tr.max_steps)
        positive("trainer.checkpoint_every", tr.checkpoint_every)
        positive("trainer.recompile_limit", tr.recompile_limit)
        if uses_cuda_graphs(tr) and tr.compile_scope == "regional":
            # every layer replays one CUDA graph, overwriting the previous layer's output that backward still needs
            raise ConfigError("trainer.compile_mode", tr.compile_mode, "CUDA graphs need the whole model compiled: add trainer.compile_scope=model")
        if tr.compile_layers_once:
            layers_once_check(cfg)
        if tr.inductor:
            inductor_options_check(tr)
        if tr.use_liger_kernel:
            if not on_gpu:
                raise ConfigError("trainer.use_liger_kernel", True, "Liger's kernels are Triton kernels for CUDA GPUs")
            if importlib.util.find_spec("liger_kernel") is None:
                raise ConfigError("trainer.use_liger_kernel", True, "needs the liger-kernel package (pip install liger-kernel)")
        positive("trainer.logging_steps", tr.logging_steps)
        seed_in_range("trainer.seed", tr.seed)
        own = own_keys()
        known = training_argument_fields(cfg.task.name == "seq2seq") if tr.args else None
        for key, value in (tr.args or {}).items():  # in a second, not after the data is built
            if key in own:
                raise ConfigError(f"trainer.args.{key}", value, f"trainsweep sets it: use {own[key]}")
            if known is not None and key not in known:
                import difflib

                near = difflib.get_close_matches(key, known, n=1)
                kind = "Seq2SeqTrainingArguments" if cfg.task.name == "seq2seq" else "TrainingArguments"
                raise ConfigError(f"trainer.args.{key}", value, f"not a {kind} field"
                                  + (f"; did you mean trainer.args.{near[0]}?" if near else ""))
        if tr.lr <= 0:
            raise ConfigError("trainer.lr", tr.lr, "must be > 0")
        if tr.epochs is not None and tr.epochs <= 0:
            raise ConfigError("trainer.epochs", tr.epochs, "must be > 0 (or null: trainer.max_steps decides)")
        for key in ("warmup_steps", "eval_steps", "save_steps"):
            if tr[key] < 0:
                raise ConfigError(f"trainer.{key}", tr[key], "must be >= 0")
        if tr.eval_steps and not (cfg.data.eval_size or cfg.data.eval_file):
            raise ConfigError("trainer.eval_steps", tr.eval_steps, "needs an eval set: data.eval_size > 0 or data.eval_file")


@dataclass
class MeasureConfig:
    warmup_steps: int = 5  # steps excluded from timing (allocator growth, autotune, new shapes)
    profile_steps: int = 3  # GPU only: steps after the timed window run under torch.profiler (GPU busy share)
    host_ops: bool = False  # the profiled steps record the host's ops too (report: host_ops); GPU busy then reads low
    peak_tflops: Optional[float] = None  # override the card's peak for MFU
    predict_memory: bool = True  # GPU: trace a 1-2 layer copy before training and predict the peak (seconds)
    ceiling: bool = True  # GPU: time this card's GEMMs at the run's shapes (seconds, cached) for "% of the ceiling"
    stop_when_stable: bool = False  # end training once the mean step time is known to rel_error (sweeps)
    rel_error: float = 0.03  # stop_when_stable: the 95% interval's half-width / mean step time to stop at
    min_steps: int = 20  # timed steps before stop_when_stable may stop (an interval needs a few batch means)
    enabled: bool = True

    @staticmethod
    def known(settings: dict) -> dict:
        """attach()'s measure settings, or a TypeError naming one it doesn't have, at the call (a typo such as
        warmup_step=2 turned measuring off at train begin, with no report)."""
        names = [f.name for f in fields(MeasureConfig)]
        for key in settings:
            if key not in names:
                raise TypeError(f"attach() got an unexpected keyword argument {key!r}; measure settings: "
                                f"{', '.join(names)}")
        return settings

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
    nproc_per_job: int = 1  # sweeps: processes (GPUs) per node of a job, started by the launcher as torchrun would
    nodes: int = 1  # hosts per job: hydra/launcher=slurm allocates them; torchrun --nnodes=N launches them by hand
    backend: DistributedBackend = DistributedBackend.auto
    find_unused_parameters: bool = False  # true walks the graph for unused params every step
    bucket_cap_mb: Optional[int] = None  # DDP gradient bucket size; None: torch's 25 MB
    fsdp_reshard_after_forward: bool = True  # false keeps gathered params until backward: more memory, fewer all-gathers
    fsdp_cpu_offload: bool = False  # params and grads in host memory between uses: fits more, much slower
    fsdp_activation_checkpointing: bool = False  # FSDP's own recompute (not trainer.gradient_checkpointing)

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        dd = cfg.distributed
        positive("distributed.nproc_per_job", dd.nproc_per_job)
        positive("distributed.nodes", dd.nodes)
        if dd.nodes > 1 and ranks.nodes() != dd.nodes:  # else a launcher that can't span hosts ran it on one, unsaid
            raise ConfigError("distributed.nodes", dd.nodes,
                              f"this launch spans {ranks.nodes()} node(s): start it with `torchrun --nnodes={dd.nodes}` "
                              "on each node, or sweep with hydra/launcher=slurm (the local launcher runs on one host)")
        asked = dd.nodes * dd.nproc_per_job
        if "SUBMITIT_EXECUTOR" in os.environ and ranks.world_size() != asked:  # a sweep job: its launcher started it
            raise ConfigError("distributed.nproc_per_job", dd.nproc_per_job,
                              f"this job asked for {dd.nodes} node(s) x {dd.nproc_per_job} processes but its launcher "
                              f"started {ranks.world_size()}: the launcher resolved its shape once for the whole sweep "
                              "(hydra-submitit's own submitit_slurm does); use hydra/launcher=slurm or the default")
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


