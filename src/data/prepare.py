"""The data side of a run in one pass: source (synthetic or files, read and checked once) -> tokenise (the
tokenizer loaded once) -> pack or bucket -> collate. Each step runs once, in that order; the model side gets
what it must agree with (the pad id the rows are padded with, the label names) explicitly.

Padding happens in the collator, except padding=longest, which reproduces the seed's tokenisation-time
padding by storing padded rows.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass

import numpy as np
from datasets import Dataset

from ..base.files import atomic_write
from . import collate, sources, tokenize
from .packing import PackedDataset, first_fit

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """The data side of a run, handed to the model side explicitly."""
    tokenizer: object | None
    train: Dataset  # the rows (checks and the memory model read them)
    eval: Dataset | None
    for_trainer: Dataset | PackedDataset  # what the Trainer iterates: the rows, or packs of them
    collator: object
    info: dict  # the report's "data" section: lengths, the label map, tokenisation costs of file data
    for_model: dict  # what the model's config must agree with: the pad id the rows are padded with, label names


def prepare(cfg, conf, out_dir) -> Prepared:
    """The tokenizer (the model's, or the offline fallback for text files), the datasets, the collator and
    what the report says about them. Writes labels.json when labels have names. `conf` is read, never changed."""
    d = cfg.data
    files = sources.read_files(cfg) if d.source == "files" else None
    tokenizer = tokenize.load_tokenizer(cfg)
    if tokenizer is None and files is not None:
        tokenizer = tokenize.train_tokenizer(cfg, conf.vocab_size, files)  # offline fallback, cached
    pad_id = conf.pad_token_id if tokenizer is None else tokenizer.pad_token_id
    train, evals, info = rows(cfg, conf, tokenizer, files)
    lengths = length_stats(train)
    collator = collate.build_collator(cfg, pad_id, getattr(conf, "decoder_start_token_id", None), lengths["min"])
    for_model = {"pad_token_id": pad_id} if tokenizer is not None else {}  # a classifier pools by the data's pad id
    if cfg.task.name == "classification":  # the head's width: set, or the data's classes
        info["num_labels"] = cfg.task.num_labels or info.get("num_labels") or cfg.data.labels
        for_model["num_labels"] = info["num_labels"]
    if info.get("label2id"):  # the names behind the ids, kept with the run and in the model's config
        atomic_write(out_dir / "labels.json", json.dumps(info["label2id"], ensure_ascii=False, indent=1))
        for_model["label2id"] = info["label2id"]
        for_model["id2label"] = {i: name for name, i in info["label2id"].items()}
    return Prepared(tokenizer, train, evals, for_trainer(cfg, train), collator, {"lengths": lengths, **info}, for_model)


def rows(cfg, conf, tokenizer=None, files: sources.Files | None = None) -> tuple[Dataset, Dataset | None, dict]:
    """Source -> tokenise (-> padding=longest's tokenisation-time padding): (train, eval, info). `files`: the
    rows read_files gave (read here when not given)."""
    if cfg.data.source == "synthetic":
        train, evals = sources.synthetic_splits(cfg, conf)
        info = {}
    else:
        train, evals, info = tokenize.tokenize_files(cfg, tokenizer, files)
    if cfg.padding.strategy == "longest":
        pad_id = conf.pad_token_id if tokenizer is None else tokenizer.pad_token_id
        token_labels = cfg.task.name == "causal_lm" and "labels" in train.column_names
        train = tokenize.pad_chunks(train, pad_id, cfg.padding.chunk_size, token_labels)
    return train, evals, info


def for_trainer(cfg, train: Dataset):
    """What the Trainer iterates: the rows, or with a token budget the rows grouped into packs (one per
    micro-batch; the Trainer shuffles the packs every epoch)."""
    if cfg.padding.strategy != "packed" or not cfg.batch.tokens:
        return train
    lengths = np.minimum(np.asarray(train["length"]), cfg.data.max_length)
    packs = first_fit(lengths, cfg.batch.tokens, cfg.data.seed)
    log.info("packed %d rows into %d micro-batches of %d tokens (%.1f%% filled)", len(train), len(packs),
             cfg.batch.tokens, 100 * lengths.sum() / (len(packs) * cfg.batch.tokens))
    return PackedDataset(train, packs)


def rebudget(cfg, prep: Prepared) -> Prepared:
    """The same rows packed to cfg.batch.tokens, which batch.tokens=auto chose after the first packing."""
    collator = collate.build_collator(cfg, prep.collator.pad_id, None, prep.info["lengths"]["min"])
    return dataclasses.replace(prep, for_trainer=for_trainer(cfg, prep.train), collator=collator)


def length_stats(ds: Dataset) -> dict:
    lengths = np.asarray(ds["length"], dtype=np.float64)
    return {"rows": len(lengths), "mean": float(lengths.mean()), "min": int(lengths.min()), "max": int(lengths.max()),
            "p50": float(np.percentile(lengths, 50)), "p90": float(np.percentile(lengths, 90)),
            # attention costs seq per token: the token-weighted mean length is sum(L^2)/sum(L)
            "token_weighted_mean": float((lengths ** 2).sum() / lengths.sum())}
