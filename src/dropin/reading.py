"""What the drop-in reads from a user's Trainer: what src.run would have known from its Hydra config, read here
from the Trainer instead (`config_from_trainer`): the task from the model's class and config, batch size, grad
accumulation, precision and schedule from TrainingArguments, padding and lengths from the first rows.

Rows come in every shape a Trainer accepts (src/data/row_shapes.py); rows it cannot read as records (a tuple of
tensors that only the script's own collator understands) are read as that collator makes them, one row at a time.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

from omegaconf import OmegaConf

from ..config.training import MeasureConfig
from ..data.row_shapes import as_row, attended, indexed, plain, tokens
from ..machine import env
from ..model.build import active_adapter, attention_is_causal
from ..train.trainer import own_method
from .padding import padding_of, sequences_per_row

SAMPLE_ROWS = 2000  # rows of the train dataset the data checks read (the tokenizer check reads as many)
COLLATED_ROWS = 256  # rows read through the script's own collator, one at a time, when they aren't records
# Tasks the checks judge; "blocks" is a layout, not a task: a causal LM on text cut into fixed-length blocks.
CLASSIFIERS = ("classification", "regression", "multi_label")
TASKS = CLASSIFIERS + ("token_classification", "causal_lm", "seq2seq")


class Rows:
    """The first rows of the Trainer's train dataset, as the preflight checks read trainsweep's own datasets:
    a row by index (what the collator gets), or a column by name; `length` is a row's attended tokens.
    `items` are the rows as the dataset gave them (what the script's collator takes)."""

    def __init__(self, rows: list[dict], items: list | None = None):
        self.rows = rows
        self.items = items if items is not None else rows

    @classmethod
    def head(cls, dataset, collator=None, n: int = SAMPLE_ROWS) -> tuple["Rows | None", str | None]:
        """(rows, None), or (None, why not): a dataset without indexed rows (an IterableDataset) has nothing to
        read ahead, and a row neither readable as a record nor collatable alone is not guessed at."""
        if not indexed(dataset):
            return None, f"{type(dataset).__name__} has no indexed rows (an IterableDataset): nothing to read ahead"
        if not len(dataset):
            return None, "the train dataset is empty"
        items = [dataset[i] for i in range(min(n, len(dataset)))]
        rows = [as_row(x) for x in items]
        if all(r is not None and tokens(r) is not None for r in rows):
            return cls(rows, items), None
        if collator is None:
            return None, f"rows of type {type(items[0]).__name__} without input_ids, and no collator to read them"
        items = items[:COLLATED_ROWS]
        rows = [_alone(collator, x) for x in items]
        if all(r is not None and tokens(r) is not None for r in rows):
            return cls(rows, items), None
        if _nested_ids(as_row(items[0])):  # it has input_ids: saying "without input_ids" would be untrue
            return None, (f"each row's input_ids are {len(as_row(items[0])['input_ids'])} sequences (a multiple-choice "
                          "row's choices), and the checks read one sequence a row")
        pairs = sequences_per_row(items, collator)
        if pairs > 1:  # TRL's preference collators: a row's chosen and rejected sequences side by side
            return None, (f"each row is {pairs} sequences side by side (a preference pair's chosen and rejected), and "
                          "the checks read one sequence a row")
        return None, (f"rows of type {type(items[0]).__name__} without input_ids, and the collator's batch of one row "
                      "is not one sequence of input_ids")

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key):
        if key == "length":  # a packed row (TRL's packing, padding-free) holds several sequences: each one's length
            return [n for r in self.rows for n in self._lengths(r)]
        if isinstance(key, str):
            return [self._column(r, key) for r in self.rows]
        return self.items[key]  # what the collator gets

    @property
    def packed(self) -> bool:
        return bool(self.rows) and ("seq_lengths" in self.rows[0] or "position_ids" in self.rows[0])

    @property
    def padded(self) -> bool:
        """Rows that carry padding already (padded when tokenised)."""
        return any(0 in _flat(r.get("attention_mask")) for r in self.rows)

    def _lengths(self, row: dict) -> list[int]:
        if "seq_lengths" in row:
            return [int(n) for n in row["seq_lengths"]]
        if "position_ids" in row:  # sequences restart their positions at 0
            positions = _flat(row["position_ids"])
            starts = [i for i, p in enumerate(positions) if p == 0] + [len(positions)]
            return [b - a for a, b in zip(starts, starts[1:]) if b > a]
        return [attended(row)]

    def select(self, indices) -> "Rows":
        return Rows([self.rows[i] for i in indices], [self.items[i] for i in indices])

    @staticmethod
    def _column(row: dict, key: str):
        if key == "length":
            return attended(row)
        if key == "labels" and "labels" not in row:
            key = "label"  # a dataset's own name; the Trainer's collators hand it to the model as labels
        return row[key]


def _nested_ids(row: dict | None) -> bool:
    ids = (row or {}).get("input_ids")
    return isinstance(ids, list) and bool(ids) and isinstance(ids[0], list)


def _alone(collator, item) -> dict | None:
    """One row as the script's collator makes it: its batch of one, the batch dimension taken off."""
    try:
        batch = as_row(collator([item]))
    except Exception:
        return None
    if batch is None:
        return None
    return {k: (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in batch.items()}


def _flat(values) -> list:
    values = plain(values) if values is not None else []
    return values[0] if values and isinstance(values[0], list) else values


def config_of(model):
    """The model's config, or a stand-in for a model of the script's own (an nn.Module that is no PreTrainedModel
    has none): no name, type or label count, rather than a PretrainedConfig's defaults (num_labels=2)."""
    conf = getattr(model, "config", None)
    return conf if conf is not None else SimpleNamespace(name_or_path="", model_type=None)


def trainer_of(callback=None, callback_depth: int = 12):
    """The Trainer whose hook is running (one that holds `callback`, where given: one callback instance in each fold's
    Trainer): the `self` of a calling frame (the Trainer hands its callbacks no reference to itself)."""
    from transformers import Trainer

    frame = sys._getframe(1)
    for _ in range(callback_depth):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        held = getattr(getattr(owner, "callback_handler", None), "callbacks", ())
        if isinstance(owner, Trainer) and (callback is None or any(c is callback for c in held)):
            return owner
        frame = frame.f_back
    return None


def tokenizer_of(processing_class, collator):
    """The tokenizer: the Trainer's processing_class (a processor holds one), else the one the script handed
    only to its collator (DataCollatorWithPadding(tokenizer) without processing_class=)."""
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    for candidate in (processing_class, getattr(collator, "tokenizer", None), getattr(collator, "processing_class", None)):
        candidate = getattr(candidate, "tokenizer", candidate)
        if candidate is not None and hasattr(candidate, "pad_token_id"):
            return candidate
    return None


def trl_trainer(trainer) -> str | None:
    """The name of the first TRL class in the trainer's class hierarchy (a user's subclass of DPOTrainer reads
    "DPOTrainer"), or None for a trainer of transformers' own."""
    first = next((c for c in type(trainer).__mro__ if c.__module__.startswith("trl.")), None)
    return first.__name__ if first is not None else None


def caller_of_model(trainer) -> str | None:
    """What runs the model in a training step, for the report's "calls the model twice": the script's own
    compute_loss or training_step where its Trainer subclass overrides one, else the library class's."""
    if trainer is None:
        return None
    for name in ("compute_loss", "training_step"):
        if own_method(trainer, name) is not None:
            return f"your {name}"
    owner = next((c for c in type(trainer).__mro__ if "compute_loss" in vars(c)), None)
    return f"{owner.__name__}'s compute_loss" if owner is not None else None


def task_of(model, rows: Rows | None = None, trl: str | None = None) -> str:
    """The task the checks judge: classification | regression | multi_label | token_classification | causal_lm |
    seq2seq, from the model's class and config (and float labels: a regression), else the class name; "reward"
    for TRL's RewardTrainer (`trl`: trl_trainer's name), whose one-logit classifier scores pairs, no regression."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    name, conf = type(base).__name__, config_of(base)
    if trl == "RewardTrainer":
        return "reward"
    if name.endswith("ForSequenceClassification"):
        kind = getattr(conf, "problem_type", None)
        if kind == "regression" or (kind is None and getattr(conf, "num_labels", 2) == 1):
            return "regression"
        if kind == "multi_label_classification":
            return "multi_label"
        first = rows["labels"][0] if rows and rows.rows and ("labels" in rows[0] or "label" in rows[0]) else None
        return "multi_label" if isinstance(first, list) else "classification"
    if name.endswith("ForTokenClassification"):
        return "token_classification"
    if getattr(conf, "is_encoder_decoder", False):
        return "seq2seq"
    if name.endswith(("ForCausalLM", "LMHeadModel")):
        return "causal_lm"
    return name


def layout_of(rows: Rows | None, task: str, padding: dict) -> str | None:
    """"blocks": a causal LM on text concatenated and cut into blocks of one length (run_clm's group_texts):
    no padding anywhere, so no pad token is needed and no row was truncated."""
    if task != "causal_lm" or not rows or padding["strategy"] != "dynamic":
        return None
    widths = {len(tokens(r)) for r in rows.rows}
    return "blocks" if len(widths) == 1 and len(rows) > 1 and not rows.padded else None


def peft_of(model) -> dict:
    """peft's method and rank as trainsweep's config names them (none: a full fine-tune)."""
    conf, method = active_adapter(model)
    if conf is None:
        return {"method": "none", "r": None, "compute_dtype": None}
    quant = getattr(config_of(model), "quantization_config", None)
    four_bit = getattr(quant, "load_in_4bit", False)
    dtype = getattr(quant, "bnb_4bit_compute_dtype", None) if four_bit else None
    if method == "lora" and getattr(conf, "use_dora", False):
        method = "dora"  # LoRA's type in PEFT, with a magnitude vector and a normalised weight in every forward
    # AdaLoRA inherits LoRA's r and ignores it: its adapters start at init_r and are pruned towards target_r
    r = getattr(conf, "init_r", None) if method == "adalora" else getattr(conf, "r", None)
    return {"method": "qlora" if four_bit else method, "r": r,
            "compute_dtype": str(dtype).replace("torch.", "") if dtype else None}


def resolved_of(args, model) -> env.Resolved:
    """What src.run's env.resolve would have chosen, read from what the Trainer runs."""
    amp = "bf16" if args.bf16 else "fp16" if args.fp16 else "none"
    world = args.world_size
    strategy = "none" if world == 1 else "fsdp" if args.fsdp else "ddp"
    # a model of the script's own (no config) attends as the first transformers model inside it does
    inner = next((m for m in model.modules() if getattr(m, "config", None) is not None), None)
    # none inside (a GRU of the script's own): no attention transformers could name
    attention = (getattr(inner.config, "_attn_implementation", None) or "eager") if inner is not None \
        else "unknown (a model of your own)"
    return env.Resolved("cuda" if args.device.type == "cuda" else "cpu", next(model.parameters()).dtype, amp,
                        attention, strategy, world)


def checkpointing_of(args, model=None) -> tuple[bool, bool | None]:
    """(on, use_reentrant) from TrainingArguments (transformers 5.2x renamed gradient_ to activation_), or from the
    model where the script turned it on itself (model.gradient_checkpointing_enable() before get_peft_model, with
    no Trainer argument): its layers' checkpoint function holds the keywords it was given."""
    prefix = "activation" if hasattr(args, "activation_checkpointing") else "gradient"
    kwargs = getattr(args, f"{prefix}_checkpointing_kwargs", None) or {}
    if not getattr(args, f"{prefix}_checkpointing") and model is not None:
        layer = next((m for m in model.modules() if getattr(m, "gradient_checkpointing", None) is True), None)
        if layer is not None:
            func = getattr(layer, "_gradient_checkpointing_func", None)
            return True, (getattr(func, "keywords", None) or {}).get("use_reentrant")
    return bool(getattr(args, f"{prefix}_checkpointing")), kwargs.get("use_reentrant")


def max_length_of(rows: Rows | None, padding: dict, tokenizer, conf, args=None) -> int | None:
    """The truncation length the data checks compare rows with: the rows' own width when they were padded to
    one; the one a TRL config cuts rows to (SFTConfig's, DPOConfig's, KTOConfig's max_length: a script's
    --max_length); the length the rows were cut to when tokenising (a script's --max_seq_length 128, under the
    tokenizer's 512): the longest row length when rows pile up there (at least three times as many as at each
    length just under it, which uncut text doesn't do); else the longest the tokenizer or the model takes."""
    if rows and padding["strategy"] == "max_length":  # padded when tokenised, or by the collator to its width
        return padding.get("width") or len(tokens(rows.rows[0]))
    trl_cut = getattr(args, "max_length", None)  # transformers' own TrainingArguments has no such field
    if isinstance(trl_cut, int) and not isinstance(trl_cut, bool) and trl_cut > 0:
        return trl_cut
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


def label_key(args) -> str:
    """The batch's key for the labels: the Trainer's label_names where it names one (`label_names=["target"]`)."""
    names = getattr(args, "label_names", None) or []
    return names[0] if len(names) == 1 else "labels"


def rate_and_schedule_of(args, trainer) -> tuple[float, str]:
    """The peak rate the optimizer trains at (its groups' highest: optimizer_cls_and_kwargs, `optimizers=`, a
    create_optimizer of layer-wise rates), not always learning_rate; a scheduler the script made: "own: <class>"."""
    groups = getattr(getattr(trainer, "optimizer", None), "param_groups", None) or []
    rates = [g.get("initial_lr", g.get("lr")) for g in groups if isinstance(g, dict)]
    rates = [float(r) for r in rates if isinstance(r, (int, float)) and not isinstance(r, bool)]
    scheduler = str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))
    made = getattr(trainer, "lr_scheduler", None)
    if made is not None and getattr(trainer, "_created_lr_scheduler", True) is False:  # passed in by the script
        scheduler = f"own: {type(made).__name__}"
    return (max(rates) if rates else args.learning_rate), scheduler


def batch_size_of(args, trainer) -> int:
    """A device's micro-batch: auto_find_batch_size's smaller one after an out-of-memory error is the Trainer's."""
    size = getattr(trainer, "_train_batch_size", None) if args.auto_find_batch_size else None
    return size // max(1, args.n_gpu) if isinstance(size, int) else args.per_device_train_batch_size


def config_from_trainer(args, state, model, rows: Rows | None, collator, tokenizer, measure_settings: dict,
                        trl: str | None = None, untokenised: dict | None = None, trainer=None):
    """The keys of trainsweep's config that measuring, the analysis, the checks and the summary read, from
    the Trainer's arguments, its model, tokenizer and collator, and the first rows of its train dataset (`trl`:
    the TRL trainer's name, trl_trainer's; `untokenised`: padding.untokenised_of's, for rows without input_ids;
    `trainer`: its optimizer and scheduler, as train() made them)."""
    conf = config_of(model)
    padding = padding_of(rows, args, collator, untokenised)
    checkpointing, reentrant = checkpointing_of(args, model)
    lr, scheduler = rate_and_schedule_of(args, trainer)
    task = task_of(model, rows, trl)
    layout = layout_of(rows, task, padding)
    if getattr(args, "packing", False) and getattr(args, "packing_strategy", None) == "wrapped" and rows:
        layout = "blocks"  # TRL's wrapped packing joins every text and cuts blocks of max_length: nothing is lost
    return OmegaConf.create({
        # name_or_path is empty for a model built from a config: it has random weights
        "model": {"name": conf.name_or_path or conf.model_type or type(model).__name__,
                  "model_type": conf.model_type, "pretrained": bool(conf.name_or_path),
                  "init": {"hidden_norm": None, "head_init": "default"}},
        # num_labels defaults to 2 whatever the head: read only where transformers' head is sized by it (a model of
        # the script's own, an LM, multiple choice: 0, unknown)
        "task": {"name": task, "num_labels": getattr(conf, "num_labels", 0) if task in TASKS else 0},
        "batch": {"size": batch_size_of(args, trainer), "grad_accum": args.gradient_accumulation_steps, "tokens": None},
        "padding": padding,
        # blocks: the block width, which no row was cut to
        "data": {"max_length": len(tokens(rows.rows[0])) if layout
                 else max_length_of(rows, padding, tokenizer, conf, args),
                 # an encoder's rows can't be packed: they would attend to each other
                 "layout": layout, "packable": attention_is_causal(model) is True},
        "peft": peft_of(model),
        # first_step: a resumed run starts past its checkpoint's steps, which it does not run
        "trainer": {"max_steps": state.max_steps, "first_step": state.global_step, "lr": lr,
                    "warmup_steps": args.get_warmup_steps(state.max_steps), "scheduler": scheduler,
                    "args": {"lr_scheduler_kwargs": dict(args.lr_scheduler_kwargs or {})},
                    "max_grad_norm": args.max_grad_norm, "gradient_checkpointing": checkpointing,
                    "checkpoint_reentrant": reentrant, "torch_compile": args.torch_compile, "seed": args.seed},
        "measure": OmegaConf.structured(MeasureConfig(predict_memory=False, **measure_settings)),
        "gpu": {"memory_cap_gb": None},
        # what a data-bound verdict must not tell the script to add (src/report/analysis.py)
        "dataloader": {"num_workers": args.dataloader_num_workers, "pin_memory": args.dataloader_pin_memory,
                       "rows_prepared": False},  # a script's rows may be tokenised or transformed per batch
    })
