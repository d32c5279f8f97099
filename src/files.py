"""Local text files (CSV, JSONL, Parquet) through `datasets`: memory-mapped Arrow, tokenised with
`map(batched=True, num_proc=...)`, cached by fingerprint so a second run does not re-tokenise."""
from __future__ import annotations

import os

from datasets import Dataset, load_dataset

from src.config import ConfigError

LOADERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def _read(path: str, key: str) -> Dataset:
    if not os.path.isfile(path):
        raise ConfigError(key, path, "no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in LOADERS:
        raise ConfigError(key, path, "unknown extension; allowed: " + ", ".join(LOADERS))
    kwargs = {"delimiter": "\t"} if ext == ".tsv" else {}
    ds = load_dataset(LOADERS[ext], data_files=path, split="train", **kwargs)
    if len(ds) == 0:
        raise ConfigError(key, path, "the file has no rows")
    return ds


def _need_column(ds: Dataset, key: str, column: str) -> None:
    if column not in ds.column_names:
        raise ConfigError(key, column, "no such column; the file has: " + ", ".join(ds.column_names))


def load_files(cfg, tokenizer) -> tuple[Dataset, Dataset | None]:
    d, task = cfg.data, cfg.task.name
    if tokenizer is None:
        raise ConfigError("data", "files", "text needs a tokenizer: use model=auto model.name_or_path=DIR")
    raw = {"train": _read(d.train_file, "data.train_file")}
    if d.eval_file:
        raw["eval"] = _read(d.eval_file, "data.eval_file")
    for ds in raw.values():
        _need_column(ds, "data.text_column", d.text_column)
        if task == "classification":
            _need_column(ds, "data.label_column", d.label_column)
        if task == "seq2seq":
            if not d.target_column:
                raise ConfigError("data.target_column", None, "task=seq2seq needs the summary column's name")
            _need_column(ds, "data.target_column", d.target_column)

    label2id = None
    if task == "classification":
        names = sorted({str(x) for x in raw["train"][d.label_column]})
        if len(names) > cfg.task.num_labels:
            raise ConfigError("task.num_labels", cfg.task.num_labels, f"the data has {len(names)} labels; set at least that")
        label2id = {n: i for i, n in enumerate(names)}

    def tokenize(batch):
        enc = tokenizer(batch[d.text_column], truncation=True, max_length=d.max_length)
        out = {"input_ids": enc["input_ids"], "length": [len(x) for x in enc["input_ids"]]}
        if task == "classification":
            out["labels"] = [label2id.get(str(x), -1) for x in batch[d.label_column]]
        elif task == "seq2seq":
            out["labels"] = tokenizer(text_target=batch[d.target_column], truncation=True,
                                      max_length=d.max_target_length)["input_ids"]
        return out

    out = {}
    for split, ds in raw.items():
        num_proc = min(d.num_proc, os.cpu_count() or 1, max(1, len(ds) // 1000)) or None
        out[split] = ds.map(tokenize, batched=True, num_proc=num_proc if num_proc and num_proc > 1 else None,
                            remove_columns=ds.column_names, desc=f"tokenising {split}")
        if task == "classification" and min(out[split]["labels"]) < 0:
            raise ConfigError("data.eval_file", d.eval_file, "has labels that the training file does not")
    return out["train"], out.get("eval")
