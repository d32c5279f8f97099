"""Local text files (CSV, TSV, JSONL, Parquet) through `datasets`: memory-mapped Arrow, tokenised with
`map(batched=True, num_proc=...)` and cached by fingerprint, so a second run does not re-tokenise.

Rows become `input_ids`, `length` and, per task, `labels` (class ids, or target ids for seq2seq). String
labels are mapped to ids in sorted order (the mapping is saved with the run); integer labels are used as
they are. Bad input is a ConfigError naming the key: missing file, unknown extension, missing column (with
the columns that exist), no rows, labels out of range, bytes that are not UTF-8 (with the line).
"""
from __future__ import annotations

import logging
import os
import time

from datasets import ClassLabel, Dataset, load_dataset
from datasets.fingerprint import Hasher

from src.config import ConfigError
from src.env import CACHE

log = logging.getLogger(__name__)
LOADERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def _first_bad_line(path: str) -> tuple[int, int] | None:
    """(line, byte) of the first line that is not UTF-8, or None."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, exc.start
    return None


def _read(path: str, key: str) -> Dataset:
    if not os.path.isfile(path):
        raise ConfigError(key, path, "no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in LOADERS:
        raise ConfigError(key, path, "unknown extension; allowed: " + ", ".join(LOADERS))
    if ext != ".parquet":  # found before datasets does: its error names neither the line nor the fix
        bad = _first_bad_line(path)
        if bad:
            raise ConfigError(key, path, f"not UTF-8 at line {bad[0]} (byte {bad[1]}); re-encode it, "
                                         f"e.g. iconv -f cp949 -t utf-8")
    kwargs = {"delimiter": "\t"} if ext == ".tsv" else {}
    try:
        ds = load_dataset(LOADERS[ext], data_files=path, split="train", cache_dir=str(CACHE / "datasets"), **kwargs)
    except ValueError as exc:
        if "corresponds to no data" in str(exc):  # how datasets says a file has a header and no rows
            raise ConfigError(key, path, "the file has no rows") from None
        raise ConfigError(key, path, f"could not be read: {str(exc).splitlines()[0]}") from None
    except Exception as exc:  # malformed CSV, broken JSON line, truncated Parquet
        raise ConfigError(key, path, f"could not be read: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    if len(ds) == 0:
        raise ConfigError(key, path, "the file has no rows")
    return ds


def _need_column(ds: Dataset, key: str, column: str) -> None:
    if column not in ds.column_names:
        raise ConfigError(key, column, "no such column; the file has: " + ", ".join(ds.column_names))


def label_map(ds: Dataset, column: str, num_labels: int) -> dict | None:
    """None for integer labels (ids as they are, checked for range), else names -> ids in sorted order."""
    feature = ds.features[column]
    if isinstance(feature, ClassLabel):
        names = feature.names
    elif feature.dtype.startswith(("int", "uint")):
        values = ds[column]
        bad = [(row, v) for row, v in enumerate(values) if not 0 <= v < num_labels]
        if bad:
            row, value = bad[0]
            raise ConfigError("data.label_column", column, f"{len(bad)} labels outside [0, {num_labels}) "
                                                           f"(first: row {row}, label {value}); set task.num_labels")
        return None
    else:
        names = sorted({str(x) for x in ds[column]})
    if len(names) > num_labels:
        raise ConfigError("task.num_labels", num_labels, f"the data has {len(names)} labels; set at least that")
    return {name: i for i, name in enumerate(names)}


def train_tokenizer(cfg, vocab_limit: int):
    """The offline fallback for models without a tokenizer (random init): a byte-level BPE trained on the
    training texts, cached by the file's fingerprint. Byte-level: any text encodes, nothing is unknown."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    d = cfg.data
    ds = _read(d.train_file, "data.train_file")
    _need_column(ds, "data.text_column", d.text_column)
    vocab = min(d.tokenizer_vocab_size, vocab_limit)
    path = CACHE / "tokenizers" / f"bpe{vocab}-{ds._fingerprint}"
    if (path / "tokenizer.json").exists():
        log.info("fallback tokenizer: cache hit %s", path)
    else:
        log.info("no tokenizer with this model: training a %d-token byte-level BPE on %s", vocab, d.train_file)
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator((batch[d.text_column] for batch in ds.iter(batch_size=10_000)), trainer, length=len(ds))
        PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                unk_token="<unk>").save_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = cfg.padding.side
    return tok


def load_files(cfg, tokenizer) -> tuple[Dataset, Dataset | None, dict]:
    """(train, eval, info): info has the label map and what tokenising each split cost."""
    d, task = cfg.data, cfg.task.name
    raw = {"train": _read(d.train_file, "data.train_file")}
    if d.eval_file:
        raw["eval"] = _read(d.eval_file, "data.eval_file")
    limits = {"train": d.max_train_samples, "eval": d.max_eval_samples}
    for split, ds in raw.items():
        _need_column(ds, "data.text_column", d.text_column)
        if task == "classification":
            _need_column(ds, "data.label_column", d.label_column)
        if task == "seq2seq":
            if not d.target_column:
                raise ConfigError("data.target_column", None, "task=seq2seq needs the summary column's name")
            _need_column(ds, "data.target_column", d.target_column)
        if limits[split]:  # before tokenising: a quick run tokenises only what it uses
            raw[split] = ds.select(range(min(limits[split], len(ds))))

    label2id = label_map(raw["train"], d.label_column, cfg.task.num_labels) if task == "classification" else None

    def tokenize(batch):
        enc = tokenizer(batch[d.text_column], truncation=True, max_length=d.max_length)
        out = {"input_ids": enc["input_ids"], "length": [len(x) for x in enc["input_ids"]]}
        if task == "classification":
            labels = batch[d.label_column]
            out["labels"] = [label2id.get(str(x), -1) for x in labels] if label2id else labels
        elif task == "seq2seq":
            out["labels"] = tokenizer(text_target=batch[d.target_column], truncation=True,
                                      max_length=d.max_target_length)["input_ids"]
        return out

    out, info = {}, {"label2id": label2id, "tokenize": {}}
    key = Hasher.hash((tokenizer, task, d.text_column, d.label_column, d.target_column, d.max_length,
                       d.max_target_length, label2id))
    for split, ds in raw.items():
        fingerprint = Hasher.hash((ds._fingerprint, key))
        cache = CACHE / "datasets" / f"tokenized-{fingerprint}.arrow"
        hit = any(cache.parent.glob(f"{cache.stem}*.arrow"))
        num_proc = min(d.num_proc, os.cpu_count() or 1, max(1, len(ds) // 1000))
        start = time.perf_counter()
        out[split] = ds.map(tokenize, batched=True, num_proc=num_proc if num_proc > 1 else None,
                            remove_columns=ds.column_names, new_fingerprint=fingerprint,
                            cache_file_name=str(cache), desc=f"tokenising {split}")
        seconds = time.perf_counter() - start
        info["tokenize"][split] = {"rows": len(ds), "num_proc": num_proc, "cache_hit": hit, "seconds": seconds}
        log.info("tokenising %s (%d rows): %s in %.2f s", split, len(ds),
                 f"cache hit {cache.name}" if hit else f"num_proc={num_proc}, cached as {cache.name}", seconds)
        if task == "classification" and label2id and min(out[split]["labels"]) < 0:
            raise ConfigError("data.eval_file", d.eval_file, "has labels that the training file does not")
    return out["train"], out.get("eval"), info
