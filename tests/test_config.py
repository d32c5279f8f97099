"""Every option of every config group composes and validates; bad values are one clear line and exit 2."""
import copy
import dataclasses
import importlib.util
import json
import pickle
import re
import typing

import pytest
import torch
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

from src.config import data as config_data
from src.config import model as config_model
from src.config import training as config_training
from src.machine import env
from src.model import build as models
from src.train import trainer as train
from src.config.cli import choice_type, quote_numeric_choices
from src.config.schema import Config, validate
from src.config.errors import ConfigError
from tests.conftest import CONF, QUICK, cli, compose

GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("experiment", "sweep", "rung", "lever"))  # rung, lever: composed by tests/test_experiments.py
OPTIONS = [(g, f.stem) for g in GROUPS for f in sorted((CONF / g).glob("*.yaml"))]
# Options that only make sense with another choice, and what they need on a CPU-only machine.
NEEDS = {("task", "seq2seq"): ["model=tiny-bart"], ("model", "tiny-bart"): ["task=seq2seq"],
         ("model", "auto"): ["model.name_or_path=/nonexistent"],
         ("data", "files"): ["data.train_file=tests/data/accounts.csv", "task.num_labels=5"]}  # its 5 accounts
CPU_REFUSES = {("precision", "fp16"): "fp16 needs a CUDA GPU", ("peft", "qlora"): "needs a CUDA GPU",
               ("model", "auto"): "no config.json there", ("distributed", "fsdp"): "FSDP shards over CUDA GPUs",
               ("attention", "flex_attention"): "flex_attention runs on CUDA GPUs",
               ("attention", "varlen"): "varlen is PyTorch's flash kernel for CUDA GPUs",
               ("precision", "fp8"): "FP8 matmuls need a CUDA GPU",
               ("attention", "cudnn"): "cuDNN's attention runs on CUDA GPUs"}
GPU_ONLY_PACKAGE = {("attention", "flash_attention_2"): "flash_attn", ("attention", "flash_attention_3"): "flash_attn_interface",
                    ("peft", "qlora"): "bitsandbytes"}


def test_every_group_has_options():
    assert {"model", "task", "data", "padding", "dataloader", "precision", "batch", "peft", "attention",
            "env", "logger"} <= set(GROUPS)
    assert {"tiny", "qwen3", "llama3.2-3b", "kobart", "solar-10.7b", "polyglot-ko-12.8b", "kullm-v2", "auto"} <= \
        {o for g, o in OPTIONS if g == "model"}
    assert {o for g, o in OPTIONS if g == "batch"} == {"1", "2", "4", "8", "16", "32", "64", "128"}


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_option_composes_and_validates(group, option):
    cfg = compose(f"{group}={option}", *NEEDS.get((group, option), []))
    assert cfg[group] is not None
    assert not OmegaConf.missing_keys(cfg)  # a field the schema leaves MISSING, every option must set
    refusal = CPU_REFUSES.get((group, option))
    if (group, option) in GPU_ONLY_PACKAGE:
        import importlib.util
        if importlib.util.find_spec(GPU_ONLY_PACKAGE[(group, option)]) is None:
            refusal = refusal or "needs"
    if refusal:
        with pytest.raises(ConfigError, match=refusal):
            validate(cfg, cuda_available=False)
    else:
        validate(cfg, cuda_available=False)


@pytest.mark.parametrize("option", [o for g, o in OPTIONS if g == "model" and o != "auto"])
def test_model_architectures_build(option):
    """Each shipped architecture builds with no download (on the meta device: no memory)."""
    cfg = compose(f"model={option}", *NEEDS.get(("model", option), []), "task=causal_lm")
    conf = models.hf_config(cfg)
    auto = AutoModelForSeq2SeqLM if conf.is_encoder_decoder else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(conf)
    n = sum(p.numel() for p in model.parameters())
    expected = {"qwen3": 4.02e9, "llama3.2-3b": 3.21e9, "kobart": 0.124e9, "solar-10.7b": 10.7e9,
                "polyglot-ko-12.8b": 12.9e9, "kullm-v2": 12.9e9}.get(option)
    if expected:
        assert abs(n - expected) / expected < 0.01, f"{option}: {n / 1e9:.3f}B params"


def test_batch_options_set_size_and_grad_accum_is_a_key():
    cfg = compose("batch=16", "batch.grad_accum=2")
    assert (cfg.batch.size, cfg.batch.grad_accum) == (16, 2)


def test_numeric_group_choices_are_quoted_for_hydra():
    assert quote_numeric_choices(["batch=16", "batch=4,8", "trainer.max_steps=3", "batch.size=3"]) == \
        ["batch='16'", "batch='4','8'", "trainer.max_steps=3", "batch.size=3"]


def test_experiment_composes():
    cfg = compose("experiment=qwen3_lora_bs16")
    assert (cfg.model.name, cfg.batch.size, cfg.precision.name) == ("qwen3-4b", 16, "bf16")


BAD = [
    (["batch.size=0"], "batch.size=0: must be a positive integer"),
    (["batch.grad_accum=-1"], "batch.grad_accum=-1: must be a positive integer"),
    (["task.name=regression"], "task.name=regression: allowed: classification, causal_lm, seq2seq"),
    (["padding.strategy=random"], "padding.strategy=random: allowed"),
    (["task=seq2seq"], "needs an encoder-decoder model"),
    (["padding=packed", "task=seq2seq", "model=tiny-bart"],
     "padding.strategy=packed: padding-free batches are for task=classification or causal_lm, not seq2seq"),
    (["batch.tokens=1024"], "batch.tokens=1024: a token budget packs sequences: add padding=packed"),
    (["padding=packed", "batch.tokens=256"], "batch.tokens=256: must be auto or an integer >= data.max_length (320)"),
    (["trainer.lr=0"], "trainer.lr=0"),
    (["trainer.eval_steps=5"], "needs an eval set"),
    (["data=files"], "data.train_file=None"),
    (["dataloader.prefetch_factor=2", "dataloader.num_workers=0"], "needs dataloader.num_workers > 0"),
    (["precision=fp16", "peft=none", "device=cuda"], "device=cuda"),
]


@pytest.mark.parametrize("overrides,message", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_values_raise_config_error(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(compose(*overrides), cuda_available=False)


@pytest.mark.parametrize("args,message", [
    (["batch.size=0"], "config error: batch.size=0: must be a positive integer"),
    (["peft=qlora"], "config error: peft=qlora: 4-bit QLoRA (bitsandbytes) needs a CUDA GPU"),
    (["model=auto", "model.name_or_path=/no/such/dir"], "config error: model.name_or_path=/no/such/dir: no config.json there"),
    (["precision=fp16"], "config error: precision=fp16: fp16 needs a CUDA GPU"),
])
def test_bad_value_on_the_command_line_is_one_line_and_exit_2(args, message, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("these values are valid on a GPU")
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr[-2000:]


@pytest.mark.parametrize("args,message", [
    (["model=nosuchmodel"], "model=nosuchmodel: no such model"),
    (["batch=0"], "batch.size=0: must be a positive integer"),  # any other N works (conf/batch holds the usual ones)
    (["batch.size=abc"], "batch.size"),
    (["trainer.no_such_key=1"], "no_such_key"),
])
def test_hydra_composition_errors_exit_2(args, message, tmp_path):
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


# -- closed sets: Choice (str Enum) fields, refused while Hydra composes --------------------------------
def _choice_fields(node=Config, prefix=""):
    out = []
    for name, typ in typing.get_type_hints(node).items():
        if dataclasses.is_dataclass(typ):
            out += _choice_fields(typ, f"{prefix}{name}.")
        elif choice_type(prefix + name):
            out.append((prefix + name, choice_type(prefix + name)))
    return out


CHOICES = _choice_fields()
# What each closed set takes: the values validate() used to allow, in its order (its messages list them so).
CLOSED_SETS = {
    "model.init.head_init": "auto default zero scaled", "task.name": "classification causal_lm seq2seq",
    "data.source": "synthetic files", "data.format": "text alpaca sharegpt messages", "padding.strategy": "max_length longest dynamic grouped packed",
    "padding.side": "right left", "precision.weights_dtype": "float32 bfloat16 float16 auto",
    "precision.amp": "none bf16 fp16 auto", "peft.method": "none lora qlora", "peft.adapter_dtype": "float32 auto",
    "precision.fp8": "none rowwise tensorwise",
    "attention.implementation": "auto eager sdpa varlen flex_attention flash_attention_2 flash_attention_3",
    "attention.kernel": "auto cudnn",
    "logger.name": "none csv wandb", "logger.mode": "offline online disabled",
    "trainer.compile_scope": "regional model",
    "trainer.compile_mode": "default reduce-overhead max-autotune max-autotune-no-cudagraphs",
    "trainer.compile_backend": "inductor aot_eager eager", "distributed.strategy": "auto ddp fsdp",
    "distributed.backend": "auto nccl gloo", "mode": "train diagnose", "device": "auto cuda cpu",
}


def test_closed_sets_are_choices_with_the_values_they_always_took():
    assert {key: " ".join(c.__members__) for key, c in CHOICES} == CLOSED_SETS
    assert all(member.value == name for _, c in CHOICES for name, member in c.__members__.items())


@pytest.mark.parametrize("key,choice", CHOICES, ids=[k for k, _ in CHOICES])
def test_a_choice_takes_each_of_its_values_and_refuses_others_while_composing(key, choice):
    for value in choice.__members__:
        assert compose(f"{key}={value}")[key.split(".")[0]] is not None
    allowed = ", ".join(choice.__members__)
    with pytest.raises(ConfigError, match=re.escape(f"{key}=bogus: allowed: {allowed}")):
        compose(f"{key}=bogus")
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):  # Hydra itself, without src.cli's check
        with pytest.raises(ConfigCompositionException) as err:
            hydra_compose("config", overrides=[f"{key}=bogus"])
    assert f"expected one of [{allowed}]" in str(err.value.__cause__)


@pytest.mark.parametrize("args,message", [
    (["padding.strategy=bogus"], "config error: padding.strategy=bogus: allowed: max_length, longest, dynamic, grouped, packed"),
    (["trainer.compile_scope=whole"], "config error: trainer.compile_scope=whole: allowed: regional, model"),
    (["-m", "trainer.compile_mode=default,fast"],  # a sweep: refused before any job runs
     "config error: trainer.compile_mode=fast: allowed: default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs"),
])
def test_a_value_outside_a_closed_set_on_the_command_line_is_one_line_and_exit_2(args, message, tmp_path):
    proc = cli(*args, f"hydra.run.dir={tmp_path}", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert [l for l in proc.stderr.splitlines() if l.strip()] == [message], proc.stderr[-2000:]
    assert not list(tmp_path.rglob("report.json"))


def test_choice_values_compare_print_and_serialise_as_plain_strings():
    """Code compares these fields with strings, prints them in f-strings, and report.json, config.yaml and
    W&B hold them: all must see "packed", never "PaddingStrategy.packed"."""
    cfg = compose("padding=packed", "trainer.compile_scope=model", "trainer.compile_mode=reduce-overhead")
    p = cfg.padding.strategy
    assert p == "packed" and p in ("packed",) and {"packed": 1}[p] == 1 and p != "dynamic"
    assert f"{p}" == str(p) == "%s" % p == "{}".format(p) == "packed" and f"{p:>7}" == " packed"
    assert "-".join([p, cfg.trainer.compile_mode]) == "packed-reduce-overhead"
    assert str({"chosen": p}) == "{'chosen': 'packed'}"  # a check's value dict, printed in the run's summary
    as_json = json.loads(json.dumps(OmegaConf.to_container(cfg, resolve=True), default=str))  # as report.write
    assert as_json["padding"]["strategy"] == "packed" and as_json["trainer"]["compile_mode"] == "reduce-overhead"
    assert "strategy: packed" in OmegaConf.to_yaml(cfg, resolve=True)
    for copied in (pickle.loads(pickle.dumps(cfg)), copy.deepcopy(cfg)):  # submitit pickles a sweep job's config
        assert copied.trainer.compile_mode == "reduce-overhead" and copied.padding.strategy is p


# -- each group's checks, next to its dataclass --------------------------------------------------------
# group -> (overrides, cuda_available, the message's start); every group with a `check` has cases here.
GROUP_CHECKS = {
    "validate": [(["device=cuda"], False, "device=cuda: no CUDA device is visible")],
    "InitConfig": [
        (["task=causal_lm", "model.init.head_init=zero"], False,
         "model.init.head_init=zero: re-initialises a classification head; task is causal_lm"),
        (["model.init.hidden_norm=0"], False, "model.init.hidden_norm=0.0: must be > 0")],
    "ModelConfig": [
        (["model=auto"], False, "model.name_or_path=None: set it to a local model directory"),
        (["model=auto", "model.name_or_path=/no/such/dir"], False, "model.name_or_path=/no/such/dir: no config.json there"),
        (["model=auto", "model.model_type=qwen3", "model.pretrained=false"], False,
         "model.arch={}: pretrained=false builds from the architecture")],
    "TaskConfig": [
        (["task.num_labels=1"], False, "task.num_labels=1: classification needs at least 2 labels"),
        (["task=seq2seq"], False, "task.name=seq2seq: needs an encoder-decoder model (e.g. model=kobart), not qwen3")],
    "DataConfig": [
        (["data=files"], False, "data.train_file=None: data=files needs a path"),
        (["data.size=0"], False, "data.size=0: must be a positive integer"),
        (["data.max_length=0"], False, "data.max_length=0: must be a positive integer"),
        (["data.length_min=300", "data.length_max=200"], False, "data.length_min=300: must be <= data.length_max (200)"),
        (["data.format=alpaca"], False, "data.format=alpaca: instruction and chat data train a causal LM: add task=causal_lm"),
        (["task=causal_lm", "data.format=messages"], False, "data.format=messages: reads instruction or chat rows from a file")],
    "PaddingConfig": [
        (["padding.pad_to_multiple_of=0"], False, "padding.pad_to_multiple_of=0: must be a positive integer"),
        (["padding=packed", "task=seq2seq", "model=tiny-bart"], False,
         "padding.strategy=packed: padding-free batches are for task=classification or causal_lm, not seq2seq")],
    "DataloaderConfig": [
        (["dataloader.num_workers=-1"], False, "dataloader.num_workers=-1: must be >= 0"),
        (["dataloader=basic", "dataloader.prefetch_factor=2"], False,
         "dataloader.prefetch_factor=2: needs dataloader.num_workers > 0"),
        (["dataloader.pin_memory=false"], False,
         "dataloader.non_blocking=True: needs dataloader.pin_memory=true")],
    "PrecisionConfig": [
        (["precision=fp16"], False, "precision=fp16: fp16 needs a CUDA GPU"),
        (["precision=bf16", "precision.amp=fp16"], False, "precision=bf16: fp16 needs a CUDA GPU"),
        (["precision=fp16", "peft=none"], True, "precision.weights_dtype=float16: fp16 weights can't be trained in full"),
        (["precision=fp8", "trainer.torch_compile=true"], False, "precision.fp8=rowwise: FP8 matmuls need a CUDA GPU"),
        (["precision=fp8", "trainer.torch_compile=true", "peft=none"], True, "precision.fp8=rowwise: quantises LoRA's frozen "
         "base weights once: needs peft=lora"),
        (["precision=fp8", "trainer.torch_compile=true", "precision.amp=fp16"], True, "precision.fp8=rowwise: the rest of "
         "the step runs in bf16: needs precision.amp=bf16"),
        (["precision=fp8"], True, "precision.fp8=rowwise: FP8 without compile is slower than bf16")],
    "BatchConfig": [
        (["batch.size=0"], False, "batch.size=0: must be a positive integer"),
        (["batch.grad_accum=0"], False, "batch.grad_accum=0: must be a positive integer"),
        (["batch.tokens=1024"], False, "batch.tokens=1024: a token budget packs sequences: add padding=packed"),
        (["padding=packed", "batch.tokens=256"], False, "batch.tokens=256: must be auto or an integer >= data.max_length (320)"),
        (["padding=packed", "batch.tokens=16k"], False, "batch.tokens=16k: must be auto or an integer"),
        (["padding=packed", "batch.tokens=auto", "trainer.torch_compile=true", "trainer.compile_scope=model"], False,
         "batch.tokens=auto: probes the model as the run will train it")],
    "PeftConfig": [
        (["peft.r=0"], False, "peft.r=0: must be a positive integer"),
        (["peft=none", "peft.fused=true"], False, "peft.fused=True: fuses LoRA adapters: needs peft=lora or peft=qlora"),
        (["peft=none", "peft.adapters_on_device=true"], False,
         "peft.adapters_on_device=True: places LoRA adapters: needs peft=lora or peft=qlora"),
        (["peft=qlora"], False, "peft=qlora: 4-bit QLoRA (bitsandbytes) needs a CUDA GPU")],
    "AttentionConfig": [
        (["attention=varlen"], False, "attention=varlen: varlen is PyTorch's flash kernel for CUDA GPUs"),
        (["attention=flex_attention"], False, "attention=flex_attention: flex_attention runs on CUDA GPUs here"),
        (["attention=cudnn"], False, "attention.kernel=cudnn: cuDNN's attention runs on CUDA GPUs"),
        (["attention.kernel=cudnn", "padding=packed"], True, "attention.kernel=cudnn: packed rows attend through varlen's flash kernel"),
        (["attention=eager", "attention.kernel=cudnn"], True, "attention.kernel=cudnn: picks sdpa's kernel, and attention=eager is not sdpa")],
    "EnvConfig": [
        (["env.sdp_backends=[flash,cuDNN]"], False, "env.sdp_backends=['flash', 'cuDNN']: 'cuDNN' is no sdpa kernel: allowed: flash, mem_efficient, cudnn, math"),
        (["env.sdp_backends=[flash,math]", "attention=cudnn"], True, "attention.kernel=cudnn: env.sdp_backends=['flash', 'math'] leaves cuDNN's kernel out")],
    "DistributedConfig": [
        (["distributed.nproc_per_job=0"], False, "distributed.nproc_per_job=0: must be a positive integer"),
        (["distributed=fsdp"], False, "distributed=fsdp: FSDP shards over CUDA GPUs"),
        (["distributed.backend=nccl"], False, "distributed.backend=nccl: NCCL needs CUDA GPUs")],
    "GpuConfig": [
        (["gpu.memory_cap_gb=24"], False, "gpu.memory_cap_gb=24.0: must be > 0 GB, on a CUDA GPU"),
        (["gpu.memory_cap_gb=0"], True, "gpu.memory_cap_gb=0.0: must be > 0 GB")],
    "DebugConfig": [(["debug.collate_delay_ms=-1"], False, "debug.collate_delay_ms=-1.0: must be >= 0")],
    "TrainerConfig": [
        (["trainer.max_steps=0"], False, "trainer.max_steps=0: must be a positive integer"),
        (["trainer.checkpoint_every=0"], False, "trainer.checkpoint_every=0: must be a positive integer"),
        (["trainer.recompile_limit=0"], False, "trainer.recompile_limit=0: must be a positive integer"),
        (["trainer.torch_compile=true", "trainer.compile_mode=reduce-overhead"], False,
         "trainer.compile_mode=reduce-overhead: CUDA graphs need the whole model compiled"),
        (["trainer.torch_compile=true", "trainer.compile_layers_once=true"], False,
         "trainer.compile_layers_once=True: for a whole-model compile: add trainer.torch_compile=true trainer.compile_scope=model"),
        (["trainer.use_liger_kernel=true"], False, "trainer.use_liger_kernel=True: Liger's kernels are Triton kernels"),
        (["trainer.logging_steps=0"], False, "trainer.logging_steps=0: must be a positive integer"),
        (["trainer.lr=0"], False, "trainer.lr=0.0: must be > 0"),
        (["trainer.warmup_steps=-1"], False, "trainer.warmup_steps=-1: must be >= 0"),
        (["trainer.save_steps=-1"], False, "trainer.save_steps=-1: must be >= 0"),
        (["trainer.eval_steps=5"], False, "trainer.eval_steps=5: needs an eval set"),
        (["trainer.inductor.coordinate_descent_tuning=true"], True,
         "trainer.inductor.coordinate_descent_tuning=True: an option of inductor's compiles: needs "
         "trainer.torch_compile=true and trainer.compile_backend=inductor"),
        (["trainer.torch_compile=true", "trainer.compile_backend=eager", "trainer.inductor.combo_kernels=true"], True,
         "trainer.inductor.combo_kernels=True: an option of inductor's compiles: needs trainer.torch_compile=true and "
         "trainer.compile_backend=inductor"),
        (["trainer.torch_compile=true", "trainer.inductor.cpu_gpu_bw=fast"], True,
         "trainer.inductor.cpu_gpu_bw=fast: must be a number, as its default (50.0)"),
        (["trainer.torch_compile=true", "trainer.inductor.max_autotune_gemm_backends=1"], True,
         "trainer.inductor.max_autotune_gemm_backends=1: must be a string, as its default ('ATEN,TRITON,CPP')"),
        (["trainer.torch_compile=true", "trainer.inductor.coordinate_descent_tunning=true"], True,
         "trainer.inductor.coordinate_descent_tunning=True: not a torch._inductor.config option; did you mean "
         "trainer.inductor.coordinate_descent_tuning?"),
        (["trainer.torch_compile=true", "trainer.inductor.combo_kernels=1"], True,
         "trainer.inductor.combo_kernels=1: must be true or false, as its default (False)"),
        (["trainer.torch_compile=true", "trainer.inductor.max_fusion_size=yes"], True,
         "trainer.inductor.max_fusion_size=yes: must be an integer, as its default (64)"),
        (["trainer.torch_compile=true", "trainer.inductor.triton.no_such=true"], True,
         "trainer.inductor.triton.no_such=True: not a torch._inductor.config option")],
    "MeasureConfig": [
        (["measure.warmup_steps=-1"], False, "measure=-1/3: warmup_steps and profile_steps must be >= 0")],
}
CHECK_CASES = [(group, *case) for group, cases in GROUP_CHECKS.items() for case in cases]


def test_every_group_with_checks_has_cases():
    groups = {name for module in (config_model, config_data, config_training) for name, obj in vars(module).items()
              if dataclasses.is_dataclass(obj) and hasattr(obj, "check")}
    assert groups | {"validate"} == set(GROUP_CHECKS)


@pytest.mark.parametrize("group,overrides,cuda,message", CHECK_CASES,
                         ids=[f"{g}:{' '.join(o)}" for g, o, _, _ in CHECK_CASES])
def test_group_check_refuses(group, overrides, cuda, message):
    with pytest.raises(ConfigError) as err:
        validate(compose(*overrides), cuda_available=cuda)
    assert str(err.value).startswith(message)


# -- defaults in one place -------------------------------------------------------------------------------
# The default config's own option values (model=tiny's lr, padding=dynamic's multiple of 8): the dataclass
# default is what the group's other options get (qwen3's lr, max_length's no multiple).
OPTION_VALUES = {"model.lr", "padding.pad_to_multiple_of"}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in d.items():
        out.update(_flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key: value})
    return out


def test_dataclass_defaults_are_what_the_default_config_gets():
    """A default written both in a dataclass and in conf/*.yaml is the same in both, so reading either tells
    what a run gets; where only the YAML may say (every option of the group sets it), the field is MISSING."""
    schema = OmegaConf.structured(Config)
    for name, typ in typing.get_type_hints(Config).items():
        if dataclasses.is_dataclass(typ):
            schema[name] = OmegaConf.structured(typ)  # the groups Config leaves MISSING, with their defaults
    defaults = _flat(OmegaConf.to_container(schema, enum_to_str=True))
    composed = _flat(OmegaConf.to_container(compose(), enum_to_str=True))  # unresolved: trainer.lr is ${model.lr}
    assert {k for k, v in defaults.items() if v != "???"} <= set(composed)
    drift = {k: (v, composed[k]) for k, v in defaults.items() if v != "???" and k not in OPTION_VALUES and composed[k] != v}
    assert drift == {}, "dataclass default vs conf/*.yaml"


def test_the_names_hugging_face_users_type_reach_trainsweeps_keys():
    cfg = compose("learning_rate=3e-4", "per_device_train_batch_size=16", "gradient_accumulation_steps=4", "max_steps=9")
    assert (cfg.trainer.lr, cfg.batch.size, cfg.batch.grad_accum, cfg.trainer.max_steps) == (3e-4, 16, 4, 9)
    assert compose("num_train_epochs=2").trainer.epochs == 2  # the README names it; it said "no such key"


def test_a_baseline_is_typed_as_the_override_it_names_and_changes_no_job():
    from src.report.files import config_hash

    assert compose("baseline=debug=none").baseline == compose("baseline='debug=none'").baseline == "debug=none"
    assert compose("experiment=loop_overheads").baseline == "debug=none"
    assert config_hash(compose("baseline=debug=none")) == config_hash(compose())  # a summary choice: nothing reruns


def test_any_trainingarguments_field_passes_through_trainer_args(tmp_path):

    cfg = compose("trainer.args.lr_scheduler_type=cosine", "trainer.args.adam_beta2=0.95")
    args = train.training_args(cfg, env.resolve(cfg), tmp_path)
    assert args.lr_scheduler_type == "cosine" and args.adam_beta2 == 0.95
    assert args.learning_rate == cfg.trainer.lr  # trainsweep's own settings stay


@pytest.mark.parametrize("dataloader, non_blocking", [("workers", True), ("basic", False)])
def test_batches_go_to_the_gpu_without_waiting_for_it_only_from_pinned_memory(dataloader, non_blocking, tmp_path):
    import dataclasses

    cfg = compose(f"dataloader={dataloader}")
    on_gpu = dataclasses.replace(env.resolve(cfg), device="cuda")
    assert train.training_args(cfg, on_gpu, tmp_path).accelerator_config.non_blocking is non_blocking
    assert train.training_args(cfg, env.resolve(cfg), tmp_path).accelerator_config.non_blocking is False  # a CPU run


@pytest.mark.parametrize("overrides, order, enabled", [
    (("env=default",), None, {"cudnn", "flash", "mem_efficient", "math"}),  # torch's own choice: nothing changed
    (("env=default", "attention=cudnn"), ["cudnn", "flash", "mem_efficient", "math"], {"cudnn", "flash", "mem_efficient", "math"}),
    ((), None, {"cudnn", "flash", "mem_efficient", "math"}),  # env=tuned, the default: the kernels it names, in torch's order
    (("env.sdp_backends=[flash,math]",), None, {"flash", "math"}),
    (("attention=cudnn", "env.sdp_backends=[cudnn,flash]"), ["cudnn", "flash"], {"cudnn", "flash"}),
])
def test_sdpa_runs_the_kernels_allowed_and_cudnn_first_when_asked(overrides, order, enabled):
    from torch.nn.attention import SDPBackend

    names = {SDPBackend.CUDNN_ATTENTION: "cudnn", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.MATH: "math"}
    default_order = torch._C._get_sdp_priority_order()
    try:
        env.apply(compose(*overrides))
        flags = {"cudnn": torch.backends.cuda.cudnn_sdp_enabled(), "flash": torch.backends.cuda.flash_sdp_enabled(),
                 "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(), "math": torch.backends.cuda.math_sdp_enabled()}
        assert {name for name, on in flags.items() if on} == enabled
        now = [names[SDPBackend(i)] for i in torch._C._get_sdp_priority_order() if SDPBackend(i) in names]
        assert now[:len(order)] == order if order else torch._C._get_sdp_priority_order() == default_order
    finally:
        env.apply(compose("env=default"))  # back to torch's own settings for the tests after this one
    assert torch._C._get_sdp_priority_order() == default_order and torch.backends.cuda.math_sdp_enabled()


@pytest.mark.parametrize("override, message", [
    ("trainer.args.adam_epsilonn=1e-06", "trainer.args.adam_epsilonn=1e-06: not a TrainingArguments field; did you mean trainer.args.adam_epsilon?"),
    ("trainer.args.learning_rate=0.1", "trainer.args.learning_rate=0.1: trainsweep sets it: use trainer.lr"),
    ("trainer.args.lr_scheduler_type=cosinee", "trainer.args={'lr_scheduler_type': 'cosinee'}: "),
])
def test_a_bad_trainer_arg_is_one_config_error(override, message, tmp_path):

    cfg = compose(override)
    with pytest.raises(ConfigError) as err:
        train.training_args(cfg, env.resolve(cfg), tmp_path)
    assert str(err.value).startswith(message)


def test_a_bad_trainer_arg_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    proc = cli("trainer.args.adam_epsilonn=1e-06", *QUICK, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[0] == \
        "config error: trainer.args.adam_epsilonn=1e-06: not a TrainingArguments field; did you mean trainer.args.adam_epsilon?"


def test_inductor_options_arrive_flat_a_mapping_valued_option_whole():
    """The command line nests dotted keys; a section's options flatten to torch's dotted names, while an option
    whose value is a mapping stays one value (flattened, it would be refused as no option, or dropped)."""
    from src.config.compiling import flat_inductor_options

    cfg = compose("trainer.torch_compile=true", "trainer.inductor.triton.cudagraph_trees=false",
                  "trainer.inductor.post_grad_fusion_options.batch_linear_post_grad={}",
                  "trainer.inductor.cpu_gpu_bw=75", "trainer.inductor.force_disable_caches=true")
    assert flat_inductor_options(cfg.trainer) == {"triton.cudagraph_trees": False, "cpu_gpu_bw": 75,
                                                  "post_grad_fusion_options": {"batch_linear_post_grad": {}},
                                                  "force_disable_caches": True}
    validate(cfg, cuda_available=True)  # every one a known option of the right type (an int for a float is fine)
    assert flat_inductor_options(compose().trainer) == {}


def test_any_positive_micro_batch_works_not_only_the_sizes_with_a_yaml():
    assert (compose("batch=12").batch.size, compose("batch=12").batch.grad_accum) == (12, 1)
    assert compose("batch=16").batch.size == 16  # a size with a YAML still takes it


def test_a_saved_sweep_without_multirun_says_it_needs_m(tmp_path):
    proc = cli("sweep=padding", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "config error: sweep=padding: a saved sweep runs with -m: python -m src.run -m sweep=padding"
    assert not list(tmp_path.iterdir())  # nothing ran


@pytest.mark.parametrize("old, new", [
    ("padding=bucketed", "padding=grouped (length-grouped sampling; padding=buckets"),
    ("dataloader=tuned", "dataloader=workers (2 workers, pinned memory"),
])
def test_an_old_option_name_says_its_new_name(tmp_path, old, new):
    proc = cli(old, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2 and proc.stderr.strip().startswith(f"config error: {old}: renamed: {new}")


def test_help_lists_each_groups_options_with_what_they_do_in_numeric_order():
    proc = cli("--help")
    assert proc.returncode == 0 and "== Config ==" not in proc.stdout  # not Hydra's whole-config dump
    batch = [line.split()[0] for line in proc.stdout.split("batch:\n")[1].split("\n\n")[0].splitlines()]
    assert batch == ["1", "2", "4", "8", "16", "32", "64", "128"]
    assert "  grouped     Dynamic padding with length-grouped sampling" in proc.stdout
    groups = {f.parent.name for f in CONF.glob("*/*.yaml") if f.parent.name != "hydra"}
    assert all(f"\n{g}:\n" in "\n" + proc.stdout for g in groups)


def test_help_gives_whole_sentences_without_the_field_reports_jargon():
    out = cli("--help").stdout
    text = " ".join(out.split())  # a sentence wraps over lines: read it as one
    assert "Micro-batch 8 per device." in text and "fewer launches per sample" not in text  # first sentence, whole
    assert "the seed's" not in out and "ELMo" not in out and "seed backup" not in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_a_group_choice_typo_is_one_line_naming_the_nearest_before_anything_runs(tmp_path):
    """Hydra's own answer to `padding=dynamc` is fifteen lines; a sweep's list is checked choice by choice."""
    proc = cli("padding=dynamc", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "padding=dynamc: no such padding; did you mean dynamic? (allowed: buckets, dynamic," in proc.stderr
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match=r"lever=fp9: no such lever; did you mean fp8\?"):
        compose("+lever=fp9")
    with pytest.raises(ConfigError, match="model=tinyy: no such model; did you mean tiny"):
        compose("model=tiny,tinyy")  # a sweep's second choice
    assert compose("batch=17").batch.size == 17  # a micro-batch without a YAML is batch.size, not a typo


@pytest.mark.parametrize("release, args, refused", [
    ((2, 11), ["peft.fused=true"], "peft.fused=false, or this off"),
    ((2, 11), ["precision=fp8", "peft.fused=true"], "peft.fused=false, precision=bf16, or this off"),
    ((2, 11), ["peft=qlora"], "peft=lora, or this off"),
    ((2, 11), ["trainer.use_liger_kernel=true"], "trainer.use_liger_kernel=false, or this off"),
    ((2, 11), [], None),
    ((2, 13), ["precision=fp8", "peft.fused=true"], None),
    ((2, 13), ["trainer.gradient_checkpointing=true"], "checkpointing wraps each layer's call"),
    ((2, 7), [], "needs torch >= 2.8 (torch.compiler.nested_compile_region)")])
def test_compile_layers_once_is_refused_where_torch_would_not_use_the_regions_or_fails_on_them(
        monkeypatch, release, args, refused):
    """torch 2.11 raised KeyError 'example_value' comparing two layer graphs that hold an autograd Function (the fused
    linear, bitsandbytes' 4-bit layers; seen on the CPU): refused before the run on such a release, with the ways out
    named. Under checkpointing torch inlines the layers whatever the release."""
    from src.config import compiling

    monkeypatch.setattr(compiling, "torch_release", lambda: release)
    real = importlib.util.find_spec  # liger-kernel: present for its own check
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "liger_kernel" else real(name, *a))
    cfg = compose("padding=packed", "batch.tokens=2048", "trainer.torch_compile=true", "trainer.compile_scope=model",
                  "trainer.compile_layers_once=true", *args)
    if refused is None:
        validate(cfg, cuda_available=True)
        return
    with pytest.raises(ConfigError, match=re.escape(refused)):
        validate(cfg, cuda_available=True)


@pytest.mark.parametrize("text, release", [("2.11.0+cu130", (2, 11)), ("2.13.0a0+git1234", (2, 13)), ("2.12.0rc1", (2, 12)),
                                           ("2.13rc1", (2, 13)), ("nightly", (0, 0))])
def test_the_torch_release_reads_local_and_pre_release_versions(monkeypatch, text, release):
    from src.config import compiling

    monkeypatch.setattr(compiling, "torch_release_text", lambda: text)
    assert compiling.torch_release() == release


def test_the_torch_release_is_read_without_importing_torch():
    import subprocess
    import sys

    code = ("import sys; from src.config.compiling import torch_release; r = torch_release(); "
            "assert 'torch' not in sys.modules and r >= (2, 4), r")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=CONF.parent)
