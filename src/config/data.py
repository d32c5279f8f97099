"""The schema of the groups that say what the model is fed: data, padding, dataloader, batch."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, List, Optional

from omegaconf import MISSING, DictConfig

from .errors import Choice, ConfigError, positive, seed_in_range


DataSource = Choice("DataSource", "synthetic files")
DataFormat = Choice("DataFormat", "text alpaca sharegpt messages")  # data=files, task=causal_lm: src/data/formats.py


@dataclass
class DataConfig:
    source: DataSource = MISSING
    size: int = 4096  # synthetic rows
    eval_size: int = 0  # synthetic eval rows (0: no eval set)
    labels: int = 280  # synthetic rows' classes for task=classification (the account-tax data's 280 accounts)
    cue_ids: Optional[int] = None  # classification: token ids each class's cue draws from (None: vocab / labels of them)
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
    na_values: List[str] = field(default_factory=lambda: [""])  # CSV/TSV cells read as missing: only empty ones, not pandas' "NA", "None", "null", "nan"
    num_proc: int = 1  # tokenisation processes
    tokenizer_vocab_size: int = 8000  # the offline fallback BPE's size, for models without a tokenizer
    seed: int = 0

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        d = cfg.data
        if d.source == "files" and not d.train_file:
            raise ConfigError("data.train_file", None, "data=files needs a path to a CSV, JSONL or Parquet file")
        if d.source == "files":
            for key in ("train_file", "eval_file"):
                if d[key]:
                    check_file(f"data.{key}", d[key])
        positive("data.size", d.size)
        positive("data.max_length", d.max_length)
        positive("data.length_min", d.length_min)  # synthetic rows of 0 tokens failed in the collator
        if d.cue_ids is not None:
            positive("data.cue_ids", d.cue_ids)
        seed_in_range("data.seed", d.seed)
        for key in ("max_train_samples", "max_eval_samples"):  # 0 read as "no limit": every row trained
            if d[key] is not None and (not isinstance(d[key], int) or d[key] < 1):
                raise ConfigError(f"data.{key}", d[key], "must be a positive integer (null: every row)")
        if not d.length_min <= d.length_max:
            raise ConfigError("data.length_min", d.length_min, f"must be <= data.length_max ({d.length_max})")
        if d.format != "text" and cfg.task.name != "causal_lm":
            raise ConfigError("data.format", d.format, f"instruction and chat data train a causal LM: add task=causal_lm "
                                                       f"(task is {cfg.task.name}; data.format=text for other tasks)")
        if d.format != "text" and d.source != "files":
            raise ConfigError("data.format", d.format, "reads instruction or chat rows from a file: add data=files "
                                                       "data.train_file=PATH")


FILE_LOADERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}  # datasets' loaders


def check_file(key: str, path: str) -> None:
    """A data file that is missing, of an unknown kind or empty: one line before anything heavy is imported."""
    if not os.path.isfile(path):  # what it is instead: "no such file" for a directory sent users looking for a typo
        if os.path.isdir(path):
            raise ConfigError(key, path, "is a directory, not a file: give the CSV, JSONL or Parquet file in it")
        if os.path.exists(path):
            raise ConfigError(key, path, "not a regular file (a FIFO, socket or device): the rows are read twice, "
                                         "so give a file on disk")
        if os.path.islink(path):
            raise ConfigError(key, path, "a symlink that leads to no file (a loop, or its target is gone)")
        raise ConfigError(key, path, "no such file")
    if os.path.splitext(path)[1].lower() not in FILE_LOADERS:
        raise ConfigError(key, path, "unknown extension; allowed: " + ", ".join(FILE_LOADERS))
    if os.path.getsize(path) == 0:
        raise ConfigError(key, path, "the file has no rows (it is empty, 0 bytes)")


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
            positive("padding.pad_to_multiple_of", p.pad_to_multiple_of)
        if p.strategy == "packed" and cfg.task.name not in PACKED_TASKS:
            raise ConfigError("padding.strategy", "packed", f"padding-free batches are for task=classification or causal_lm, not {cfg.task.name}")


@dataclass
class DataloaderConfig:
    name: str = MISSING
    num_workers: int = MISSING
    pin_memory: bool = MISSING
    prefetch_factor: Optional[int] = MISSING
    persistent_workers: bool = MISSING
    non_blocking: bool = MISSING  # copies to the GPU that don't wait for it: the host may launch the next step early

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        dl = cfg.dataloader
        if dl.num_workers < 0:
            raise ConfigError("dataloader.num_workers", dl.num_workers, "must be >= 0")
        if dl.non_blocking and not dl.pin_memory:
            raise ConfigError("dataloader.non_blocking", True, "needs dataloader.pin_memory=true (a copy from "
                              "pageable memory waits for the GPU anyway)")
        if dl.prefetch_factor is not None and dl.num_workers == 0:
            raise ConfigError("dataloader.prefetch_factor", dl.prefetch_factor, "needs dataloader.num_workers > 0")


@dataclass
class BatchConfig:
    size: int = 8
    grad_accum: int = 1
    # padding=packed: tokens per micro-batch (a fixed shape); None packs `size` rows; "auto" (a GPU) probes the run's
    # model for the smallest budget the GPU, not the host, sets the pace of (src/train/budget.py)
    tokens: Any = None

    @staticmethod
    def check(cfg: DictConfig, on_gpu: bool) -> None:
        b = cfg.batch
        positive("batch.size", b.size)
        positive("batch.grad_accum", b.grad_accum)
        if b.tokens is not None:
            if cfg.padding.strategy != "packed":
                raise ConfigError("batch.tokens", b.tokens, "a token budget packs sequences: add padding=packed")
            if b.tokens == "auto":
                if cfg.trainer.torch_compile and cfg.trainer.compile_scope == "model":
                    raise ConfigError("batch.tokens", "auto", "probes the model as the run will train it, which "
                                      "compile_scope=model compiles later: set a budget (e.g. 16384)")
                return
            if isinstance(b.tokens, bool) or not isinstance(b.tokens, int) or b.tokens < cfg.data.max_length:
                raise ConfigError("batch.tokens", b.tokens, f"must be auto or an integer >= data.max_length ({cfg.data.max_length}): a pack holds whole sequences")


