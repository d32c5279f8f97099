"""trainsweep's measurement in your own Hugging Face Trainer script: two added lines,

    import trainsweep
    trainsweep.attach(trainer)        # before trainer.train()

give the run what `python -m src.run` gives its own: the preflight checks at train begin, and at train end the
printed summary and verdict and report.json + report.md (in <output_dir>/trainsweep/). Nothing else in the
script changes: no Trainer subclass, no new arguments, and training computes what it computed without it.

What src.run reads from its Hydra config is read here from the Trainer instead (`config_from_trainer`): the
task from the model's class, batch size, grad accumulation, precision and schedule from TrainingArguments,
padding and lengths from the first rows of the train dataset. The measuring itself is src/measure/meter.py's.
Past 350 lines for one concern: reading a user's Trainer (its rows, packed or padded, its arguments, its model)
into what src.run would have known takes the room.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from omegaconf import OmegaConf
from transformers import TrainerCallback

from .base.rng import rng_kept
from .checks import preflight
from .checks.script_words import in_script_words
from .checks.training import device_facts, precision_checks, schedule_check
from .config.training import MeasureConfig
from .data.prepare import length_stats
from .machine import env
from .measure import meter
from .model import build as models
from .model import flops
from .report import analysis, document
from .report import files as report_files
from .report.sections import Flops

log = logging.getLogger(__name__)
TASKS = ("classification", "causal_lm", "seq2seq")  # the tasks the model checks know; others get the rest
SAMPLE_ROWS = 2000  # rows of the train dataset the data checks read (the tokenizer check reads as many)


class Rows:
    """The first rows of the Trainer's train dataset, as the preflight checks read trainsweep's own datasets:
    a row by index (what the collator gets), or a column by name; `length` is a row's attended tokens."""

    def __init__(self, rows: list[dict]):
        self.rows = rows

    @classmethod
    def head(cls, dataset, n: int = SAMPLE_ROWS) -> "Rows | None":
        """None for a dataset without indexed rows (an IterableDataset): there is nothing to read ahead."""
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")) or not len(dataset):
            return None
        rows = [dataset[i] for i in range(min(n, len(dataset)))]
        return cls(rows) if isinstance(rows[0], dict) and "input_ids" in rows[0] else None

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key):
        if key == "length":  # a packed row (TRL's packing, padding-free) holds several sequences: each one's length
            return [n for r in self.rows for n in self._lengths(r)]
        return [self._column(r, key) for r in self.rows] if isinstance(key, str) else self.rows[key]

    @property
    def packed(self) -> bool:
        return bool(self.rows) and ("seq_lengths" in self.rows[0] or "position_ids" in self.rows[0])

    def _lengths(self, row: dict) -> list[int]:
        if "seq_lengths" in row:
            return [int(n) for n in row["seq_lengths"]]
        if "position_ids" in row:  # sequences restart their positions at 0
            positions = list(row["position_ids"])
            starts = [i for i, p in enumerate(positions) if p == 0] + [len(positions)]
            return [b - a for a, b in zip(starts, starts[1:]) if b > a]
        return [self._column(row, "length")]

    def select(self, indices) -> "Rows":
        return Rows([self.rows[i] for i in indices])

    @staticmethod
    def _column(row: dict, key: str):
        if key == "length":
            mask = row.get("attention_mask")
            return int(sum(mask)) if mask is not None else len(row["input_ids"])
        if key == "labels" and "labels" not in row:
            key = "label"  # a dataset's own name; the Trainer's collators hand it to the model as labels
        value = row[key]
        return value.tolist() if hasattr(value, "tolist") else value


def task_of(model) -> str:
    """classification | causal_lm | seq2seq from the model's class, else the class name."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    name = type(base).__name__
    if name.endswith("ForSequenceClassification"):
        return "classification"
    if getattr(base.config, "is_encoder_decoder", False):
        return "seq2seq"
    if name.endswith(("ForCausalLM", "LMHeadModel")):
        return "causal_lm"
    return name


def peft_of(model) -> dict:
    """peft's method and rank as trainsweep's config names them (none: a full fine-tune)."""
    adapters = getattr(model, "peft_config", None) or {}
    if not adapters:
        return {"method": "none", "r": None, "compute_dtype": None}
    conf = next(iter(adapters.values()))
    quant = getattr(model.config, "quantization_config", None)
    four_bit = getattr(quant, "load_in_4bit", False)
    dtype = getattr(quant, "bnb_4bit_compute_dtype", None) if four_bit else None
    return {"method": "qlora" if four_bit else str(getattr(conf.peft_type, "value", conf.peft_type)).lower(),
            "r": getattr(conf, "r", None), "compute_dtype": str(dtype).replace("torch.", "") if dtype else None}


def padding_of(rows: Rows | None, args, collator) -> dict:
    """How the batches are padded: rows that carry padding were padded at tokenisation (all to one width:
    max_length; else longest), otherwise the collator pads each batch (grouped with length-grouped sampling)."""
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    multiple = getattr(collator, "pad_to_multiple_of", None)
    masks = [r.get("attention_mask") for r in rows.rows] if rows else []
    flattening = type(collator).__name__ == "DataCollatorWithFlattening" or getattr(collator, "padding_free", False)
    if (rows and rows.packed) or flattening:  # padding-free: sequences side by side, no pad between them
        strategy = "packed"
    elif masks and all(m is not None for m in masks) and any(0 in list(m) for m in masks):
        strategy = "max_length" if len({len(m) for m in masks}) == 1 else "longest"
    elif getattr(args, "group_by_length", False) or getattr(args, "train_sampling_strategy", None) == "group_by_length":
        strategy = "grouped"
    else:
        strategy = "dynamic"
    return {"strategy": strategy, "pad_to_multiple_of": multiple, "chunk_size": 1000}


def resolved_of(args, model) -> env.Resolved:
    """What src.run's env.resolve would have chosen, read from what the Trainer runs."""
    amp = "bf16" if args.bf16 else "fp16" if args.fp16 else "none"
    world = args.world_size
    strategy = "none" if world == 1 else "fsdp" if args.fsdp else "ddp"
    attention = getattr(model.config, "_attn_implementation", None) or "eager"
    return env.Resolved("cuda" if args.device.type == "cuda" else "cpu", next(model.parameters()).dtype, amp,
                        attention, strategy, world)


def checkpointing_of(args) -> tuple[bool, bool | None]:
    """(on, use_reentrant) from TrainingArguments; transformers 5.2x renamed gradient_ to activation_."""
    prefix = "activation" if hasattr(args, "activation_checkpointing") else "gradient"
    kwargs = getattr(args, f"{prefix}_checkpointing_kwargs", None) or {}
    return bool(getattr(args, f"{prefix}_checkpointing")), kwargs.get("use_reentrant")


def max_length_of(rows: Rows | None, padding: dict, tokenizer, conf) -> int | None:
    """The truncation length the data checks compare rows with: the rows' own width when they were padded to
    one; the length the rows were cut to when tokenising (a script's --max_seq_length 128, under the tokenizer's
    512): the longest row length when rows pile up there (at least three times as many as at each length just
    under it, which uncut text doesn't do); else the longest the tokenizer or the model takes."""
    if rows and padding["strategy"] == "max_length":
        return len(rows[0]["input_ids"])
    limit = getattr(tokenizer, "model_max_length", None)
    limit = limit if limit and limit < 10**6 else getattr(conf, "max_position_embeddings", None)
    if rows:
        lengths = rows["length"]
        longest = max(lengths)
        at_cap = lengths.count(longest)
        below = sum(lengths.count(longest - k) for k in range(1, 6)) / 5  # the lengths just under it, on average
        # a cut piles the whole tail up at one length: far more rows there than at its neighbours
        if at_cap >= max(2, len(lengths) // 100) and at_cap >= 3 * below and (limit is None or longest < limit):
            return longest
    return limit


def config_from_trainer(args, state, model, rows: Rows | None, collator, tokenizer, measure_settings: dict):
    """The keys of trainsweep's config that measuring, the analysis, the checks and the summary read, from
    the Trainer's arguments, its model, tokenizer and collator, and the first rows of its train dataset."""
    conf = model.config
    padding = padding_of(rows, args, collator)
    checkpointing, reentrant = checkpointing_of(args)
    return OmegaConf.create({
        # name_or_path is empty for a model built from a config: it has random weights
        "model": {"name": conf.name_or_path or conf.model_type, "model_type": conf.model_type,
                  "pretrained": bool(conf.name_or_path), "init": {"hidden_norm": None, "head_init": "default"}},
        "task": {"name": task_of(model), "num_labels": getattr(conf, "num_labels", 0)},
        "batch": {"size": args.per_device_train_batch_size, "grad_accum": args.gradient_accumulation_steps,
                  "tokens": None},
        "padding": padding,
        "data": {"max_length": max_length_of(rows, padding, tokenizer, conf)},
        "peft": peft_of(model),
        "trainer": {"max_steps": state.max_steps, "lr": args.learning_rate,
                    "warmup_steps": args.get_warmup_steps(state.max_steps),
                    "scheduler": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
                    "args": {"lr_scheduler_kwargs": dict(args.lr_scheduler_kwargs or {})},
                    "max_grad_norm": args.max_grad_norm, "gradient_checkpointing": checkpointing,
                    "checkpoint_reentrant": reentrant, "torch_compile": args.torch_compile, "seed": args.seed},
        "measure": OmegaConf.structured(MeasureConfig(predict_memory=False, **measure_settings)),
        "gpu": {"memory_cap_gb": None},
    })


def _to_meter(hook: str):
    """A Trainer hook that hands its call to the meter (src/measure/meter.py's Measure) once train begin has built it."""
    def forward(self, args, state, control, **kw):
        if self.meter:
            getattr(self.meter, hook)(args, state, control, **kw)
    return forward


class TrainsweepCallback(TrainerCallback):
    """Preflight checks at train begin; tokens, step times and memory while training (src/measure/meter.py's
    Measure, built once the Trainer knows its step count); the report at train end. Tokens are counted by a
    forward pre-hook on the model, from each training micro-batch's own tensors: summed on the device, read
    once at the end, as src.run's Trainer counts them."""

    def __init__(self, out_dir: str | Path | None = None, checks: bool = True, **measure_settings):
        self.out_dir = Path(out_dir) if out_dir else None  # None: <TrainingArguments.output_dir>/trainsweep
        self.checks = checks
        self.measure_settings = measure_settings  # MeasureConfig's fields: warmup_steps=5, profile_steps=3, ...
        self.meter = self._hook = None
        self.speedup = None  # attach(trainer, speedup=True): what trainsweep.speedup did, for the report

    def on_train_begin(self, args, state, control, model=None, processing_class=None, train_dataloader=None, **kw):
        self.started = time.perf_counter()
        self.out_dir = self.out_dir or Path(args.output_dir) / "trainsweep"
        # The dataloader's dataset and collator: the Trainer has removed the columns the model doesn't take.
        dataset = getattr(train_dataloader, "dataset", None)
        collator = getattr(train_dataloader, "collate_fn", None)
        with rng_kept():  # a dataset may draw random numbers per row: reading ahead must not move them
            rows = Rows.head(dataset) if dataset is not None else None
        tokenizer = getattr(processing_class, "tokenizer", processing_class)  # a processor holds its tokenizer
        tokenizer = tokenizer if hasattr(tokenizer, "pad_token_id") else None
        cfg = config_from_trainer(args, state, model, rows, collator, tokenizer, self.measure_settings)
        if self.speedup is not None and self.speedup.on("padding-free batches"):  # one pack of a token budget a micro-batch
            OmegaConf.update(cfg, "batch", {"size": 1, "tokens": self.speedup.packing["tokens"]}, merge=True)
        res = resolved_of(args, model)
        self.cfg, self.res = cfg, res
        rep = document.Report(config=OmegaConf.to_container(cfg), resolved=env.describe(res), env=env.info(res.device),
                            params=models.parameter_counts(model), timing_s={})
        if rows:
            rep.data = {"lengths": length_stats(rows), "rows": len(dataset)}  # lengths of the first rows
            rep.flops = self._flops(model, rep.data["lengths"]["token_weighted_mean"])
        if self.checks:
            padded = bool(rows) and "attention_mask" in rows[0] and any(0 in (r.get("attention_mask") or [1]) for r in rows.rows)
            rep.diagnostics = in_script_words(self._preflight(model, tokenizer, collator, rows), padded)
            rep.timing_s["diagnostics"] = time.perf_counter() - self.started
        if self.speedup is not None:
            rep.speedup = self.speedup.as_dict()
        self.report = rep
        counter = meter.TokenCounter(cfg.task.name)
        self.meter = meter.Measure.from_config(counter, res.device, cfg)
        self._hook = model.register_forward_pre_hook(self._counting(counter), with_kwargs=True)
        self.meter.on_train_begin(args, state, control, **kw)
        self.train_begin = time.perf_counter()

    def _preflight(self, model, tokenizer, collator, rows: Rows | None) -> list[dict]:
        """src.run's cheap checks, on the model, collator and rows the Trainer trains with; a check that can't
        run here costs a warning, never the user's training."""
        cfg, res = self.cfg, self.res
        accum = [] if getattr(self, "loss_kwargs", None) is None else [self._grad_accum_loss(cfg)]
        try:
            with rng_kept():
                if rows and collator is not None and cfg.task.name in TASKS:
                    return accum + preflight.preflight(cfg, res, model, None, collator, rows, tokenizer, model.config,
                                                       expensive=False)
                return preflight.each([("train.schedule", lambda: [schedule_check(cfg)]),
                                       ("precision", lambda: precision_checks(cfg, res, device_facts(res)))])
        except Exception as exc:  # reading the rows or collating them: no check could run, and the report says so
            log.warning("trainsweep: preflight checks could not run: %s: %s", type(exc).__name__, exc)
            return [preflight.result("preflight", "not_run", f"{type(exc).__name__}: {exc}", "checks that run",
                                     "no check could run on this setup")]
        finally:  # a check cut short must not leave its gradients for the first step to add to
            model.zero_grad(set_to_none=True)

    def _grad_accum_loss(self, cfg) -> dict:
        """The Trainer hands num_items_in_batch to a model whose forward takes **kwargs and then skips its own
        division by gradient_accumulation_steps; a sequence classifier's loss ignores it (a mean per micro-batch),
        so its loss and gradients come out grad_accum times too large (transformers#47688). src.run fixes it."""
        ga = cfg.batch.grad_accum
        wrong = cfg.task.name == "classification" and ga > 1 and bool(self.loss_kwargs)
        return preflight.result(
            "train.grad_accum_loss", "fail" if wrong else "pass",
            f"gradient_accumulation_steps {ga}, model_accepts_loss_kwargs {self.loss_kwargs}", "the loss of the whole batch",
            f"the logged loss and the gradients are {ga}x too large: set trainer.model_accepts_loss_kwargs = False "
            "before trainer.train() (transformers#47688)" if wrong else "")

    def _flops(self, model, seq: float) -> Flops:
        return Flops(**flops.flops_per_token(model, model.config, seq, self.cfg.trainer.gradient_checkpointing))

    @staticmethod
    def _counting(counter: meter.TokenCounter):
        def count(module, args, kwargs):
            # training micro-batches only: evaluation runs in eval mode, generation without grad
            if module.training and torch.is_grad_enabled() and "input_ids" in kwargs:
                counter.add(kwargs)
        return count

    # The Trainer's step hooks, handed to the meter once it exists.
    on_step_begin = _to_meter("on_step_begin")
    on_pre_optimizer_step = _to_meter("on_pre_optimizer_step")
    on_optimizer_step = _to_meter("on_optimizer_step")
    on_step_end = _to_meter("on_step_end")

    def on_evaluate(self, args, state, control, metrics=None, **kw):
        if self.meter:  # during training: the meter keeps the evaluating step out of the timed ones
            self.meter.on_evaluate(args, state, control, metrics=metrics, **kw)
        elif getattr(self, "report", None) is not None and metrics and state.is_world_process_zero:
            # after train() (a script's --do_eval): the report gains the evaluation, rewritten in place
            final = {k.removeprefix("eval_"): v for k, v in metrics.items() if k.startswith("eval_")}
            history = (self.report.get("eval") or {}).get("history", []) + [{**metrics, "step": state.global_step}]
            self.report.eval = {"final": final, "step": state.global_step, "history": history}
            try:
                report_files.write(self.out_dir, self.report)
            except OSError as exc:
                log.error("trainsweep: report not updated with the evaluation: %s", exc)
    on_log = _to_meter("on_log")

    def on_train_end(self, args, state, control, model=None, **kw):
        if not self.meter:
            return
        self.meter.on_train_end(args, state, control, **kw)
        self._hook.remove()
        rep = self.report
        rep.timing_s["train"] = time.perf_counter() - self.train_begin
        tokens = self.meter.results()["tokens"]
        if rep.get("flops") is None and tokens and tokens["samples"]:
            # no rows to read ahead (an IterableDataset): attention counted at the window's mean attended
            # length, as the token-weighted mean needs each row's length
            rep.flops = self._flops(model, tokens["real"] / tokens["samples"])
        try:
            analysis.analyse(self.cfg, rep, self.meter, SimpleNamespace(model=model, state=state), self.res.device)
        except Exception as exc:  # the report says so; the user's trained model is theirs either way
            log.exception("trainsweep: analysis failed")
            rep.status, rep.error = "error", f"{type(exc).__name__}: {exc}"
        rep.timing_s["total"] = time.perf_counter() - self.started
        if state.is_world_process_zero:  # under torchrun every rank measures; rank 0 writes
            print(f"\ntrainsweep report: {self.out_dir / 'report.json'}\n{document.format_summary(rep)}", flush=True)
            try:
                report_files.write(self.out_dir, rep)
            except OSError as exc:  # the summary above is on screen; training's result is the script's own
                log.error("trainsweep: report not saved: %s: %s", self.out_dir / "report.json", exc)
        self.meter = None


def attach(trainer, out_dir: str | Path | None = None, speedup: bool | dict = False, **settings) -> TrainsweepCallback:
    """Add the measuring callback to an existing Trainer (before trainer.train()); returns it. Settings are
    TrainsweepCallback's: out_dir, checks=False (no preflight), MeasureConfig's fields (warmup_steps=5, ...).
    speedup=True (or speedup(...)'s arguments as a dict) applies trainsweep.speedup first; the report says what it did."""
    done = None
    if speedup:
        from .levers.apply import speedup as apply_levers

        done = apply_levers(trainer, **(speedup if isinstance(speedup, dict) else {}))
    callback = TrainsweepCallback(out_dir, **settings)
    callback.speedup = done
    callback.loss_kwargs = getattr(trainer, "model_accepts_loss_kwargs", None)  # read by the grad-accum loss check
    trainer.add_callback(callback)
    return callback
