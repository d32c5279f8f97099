"""The schema of the groups that say what is built: model (and its init), task, precision, peft, attention.
Each dataclass has the checks of its values right under it (src/config/schema.py says how they run)."""
from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from omegaconf import MISSING, DictConfig

from .errors import Choice, ConfigError, positive


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


# The sizes a model's config.json gives as positive whole numbers (top level; text_config nests are not read)
SIZE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
             "head_dim", "vocab_size", "max_position_embeddings", "d_model", "encoder_layers", "decoder_layers", "n_layer",
             "n_head", "n_embd")


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
        settings = dict(m.arch or {})  # the model's sizes: its arch, or its directory's config.json
        if m.model_type == "auto" or m.pretrained:
            if not m.name_or_path:
                raise ConfigError("model.name_or_path", None, "set it to a local model directory (or a hub id)")
            path = os.path.expanduser(m.name_or_path)
            # a path, if it is written as one or exists; else a hub id ("Qwen/Qwen3-4B"), which from_pretrained
            # finds in the local Hugging Face cache (models.hf_config says in one line when it can't)
            if m.name_or_path.startswith((".", "/", "~")) or os.path.exists(path):
                if not os.path.isfile(os.path.join(path, "config.json")):
                    raise ConfigError("model.name_or_path", m.name_or_path, "no config.json there; give a Hugging Face model directory")
                settings = ModelConfig.check_directory(path)
        elif not m.arch:
            raise ConfigError("model.arch", "{}", "pretrained=false builds from the architecture: give model.arch")
        for key in SIZE_KEYS:  # a 0 or negative size failed deep inside the model's build, a traceback
            value = (m.arch or {}).get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"model.arch.{key}", value, "must be a positive whole number")
        positions = settings.get("max_position_embeddings")
        if isinstance(positions, int) and isinstance(cfg.data.max_length, int) and cfg.data.max_length > positions:
            # rows past the model's positions: an index error mid-run, or positions it never learned
            raise ConfigError("data.max_length", cfg.data.max_length, f"beyond the model's {positions} positions "
                                                                      f"(max_position_embeddings): at most {positions}")

    @staticmethod
    def check_directory(path: str) -> dict:
        """What from_pretrained would fail on seconds later, with a 40-line traceback: config.json that is not
        JSON, and no weights. (A model_type transformers doesn't know is found when it loads: models.hf_config.)
        Returns config.json's settings."""
        conf = os.path.join(path, "config.json")
        try:
            with open(conf) as f:
                settings = json.load(f)
        except ValueError as exc:
            raise ConfigError("model.name_or_path", path, f"{conf} is not valid JSON ({exc})") from None
        if not isinstance(settings, dict):
            raise ConfigError("model.name_or_path", path, f"{conf} holds {json.dumps(settings)[:40]}, not a JSON object "
                                                          "of the model's settings")
        for key in SIZE_KEYS:  # a size transformers would only trip over while building the model, in a traceback
            value = settings.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError("model.name_or_path", path, f"{conf}: {key} is {value!r}, not a positive whole number")
        weights = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin", ".index.json", ".pth", ".pt"))
                   and n != "training_args.bin"]
        if not weights:
            raise ConfigError("model.name_or_path", path, "no weights there (model.safetensors, pytorch_model.bin "
                                                          "or a sharded index); pretrained=false builds from model.arch")
        return settings


Task = Choice("Task", "classification causal_lm seq2seq")
ENCODER_DECODER = ("bart", "mbart", "t5", "mt5", "pegasus", "marian")  # the model_types task=seq2seq takes


@dataclass
class TaskConfig:
    name: Task = MISSING
    num_labels: Optional[int] = None  # classification: None counts the data's classes (synthetic rows: data.labels); 0 for the others

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        t = cfg.task
        if t.name == "classification" and t.num_labels is not None and t.num_labels < 2:
            raise ConfigError("task.num_labels", t.num_labels, "classification needs at least 2 labels")
        if t.name == "seq2seq" and cfg.model.model_type not in ENCODER_DECODER + ("auto",):
            raise ConfigError("task.name", "seq2seq", f"needs an encoder-decoder model (e.g. model=kobart), not {cfg.model.model_type}")


Dtype = Choice("Dtype", "float32 bfloat16 float16 auto")
Amp = Choice("Amp", "none bf16 fp16 auto")


Fp8 = Choice("Fp8", "none rowwise tensorwise")


@dataclass
class PrecisionConfig:
    name: str = MISSING  # fp32 | tf32 | bf16 | fp16 | fp8 | auto: the option's name, for messages
    weights_dtype: Dtype = MISSING
    amp: Amp = MISSING  # autocast dtype for the forward pass
    tf32: bool = MISSING
    fp8: Fp8 = Fp8.none  # LoRA's frozen base matmuls in FP8 (src/model/fp8.py): rowwise | tensorwise scales

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        pr = cfg.precision
        if not on_gpu and "fp16" in (pr.amp, pr.weights_dtype.replace("float16", "fp16")):
            raise ConfigError("precision", pr.name, "fp16 needs a CUDA GPU; on the CPU use precision=bf16 or fp32")
        if pr.weights_dtype == "float16" and cfg.peft.method == "none":
            raise ConfigError("precision.weights_dtype", "float16", "fp16 weights can't be trained in full; use peft=lora or precision=bf16")
        if pr.fp8 != "none":
            if not on_gpu:
                raise ConfigError("precision.fp8", pr.fp8, "FP8 matmuls need a CUDA GPU of compute capability 8.9+ (H100, H200, L40S, RTX 4090)")
            if cfg.peft.method != "lora":
                raise ConfigError("precision.fp8", pr.fp8, "quantises LoRA's frozen base weights once: needs peft=lora (QLoRA's base "
                                                           f"is 4-bit already; a full fine-tune trains every weight), not peft={cfg.peft.method}")
            if pr.amp != "bf16":
                raise ConfigError("precision.fp8", pr.fp8, f"the rest of the step runs in bf16: needs precision.amp=bf16, not {pr.amp}")
            if not cfg.trainer.torch_compile:
                raise ConfigError("precision.fp8", pr.fp8, "FP8 without compile is slower than bf16 (each quantisation is several "
                                                           "eager kernels): add trainer.torch_compile=true")


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
    fused: bool = False  # one autograd function per LoRA linear (src/model/fused_lora.py) instead of peft's module calls
    adapters_on_device: bool = False  # create the adapters on the base's GPU, not on the CPU and then copied: 0.11-0.20 s less build (H100); A drawn from the GPU's random stream

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        pe = cfg.peft
        if pe.method != "none":
            positive("peft.r", pe.r)
            if not 0 <= pe.dropout < 1:  # torch's Dropout raised only when the model was built
                raise ConfigError("peft.dropout", pe.dropout, "must be from 0 up to (not including) 1")
        elif pe.fused:
            raise ConfigError("peft.fused", True, "fuses LoRA adapters: needs peft=lora or peft=qlora")
        elif pe.adapters_on_device:
            raise ConfigError("peft.adapters_on_device", True, "places LoRA adapters: needs peft=lora or peft=qlora")
        if pe.method == "qlora":
            if not on_gpu:
                raise ConfigError("peft", "qlora", "4-bit QLoRA (bitsandbytes) needs a CUDA GPU; on the CPU use peft=lora")
            if importlib.util.find_spec("bitsandbytes") is None:
                raise ConfigError("peft", "qlora", "needs bitsandbytes: pip install bitsandbytes (or pip install -e .[qlora])")


Attention = Choice("Attention", "auto eager sdpa varlen flex_attention flash_attention_2 flash_attention_3")
AttentionKernel = Choice("AttentionKernel", "auto cudnn")


@dataclass
class AttentionConfig:
    implementation: Attention = MISSING
    kernel: AttentionKernel = AttentionKernel.auto  # auto: torch's order (flash first) | cudnn: cuDNN's kernel first

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
        if att == "flash_attention_3" and importlib.util.find_spec("flash_attn_interface") is None:
            raise ConfigError("attention", att, "needs FlashAttention-3 (flash_attn_interface, built from flash-attention's "
                                                "hopper/ directory; Hopper GPUs); or use attention=auto")
        if cfg.attention.kernel == "cudnn":
            if not on_gpu:
                raise ConfigError("attention.kernel", "cudnn", "cuDNN's attention runs on CUDA GPUs; on the CPU use attention=sdpa")
            if cfg.padding.strategy == "packed" and att in ("auto", "varlen"):
                raise ConfigError("attention.kernel", "cudnn", "packed rows attend through varlen's flash kernel (torch 2.11's "
                                                              "cuDNN varlen backward fails); use a padded layout or attention=auto")
            if att not in ("auto", "sdpa"):
                raise ConfigError("attention.kernel", "cudnn", f"picks sdpa's kernel, and attention={att} is not sdpa")


