"""Where a run's rows come from, read and checked once: synthetic token ids shaped like the seed data, or
local text files (CSV, TSV, JSONL, Parquet) through `datasets` (memory-mapped Arrow).

Bad input is a ConfigError naming the key: missing file, unknown extension, missing column (with the columns
that exist), no rows, a text cell that is not a string (with its row), labels out of range, fractional or
missing, classes other than task.num_labels (with the override), numbers mixed with names, bytes that are
not UTF-8 (with the line), a broken JSON line (with its number), a header naming a column twice, a list or a dict
as a label, names in the eval file where the train file has ids. String labels are mapped to ids in sorted
order (the mapping is saved with the run); integer labels (and floats that are whole numbers) are used as
they are. data.format=alpaca|sharegpt|messages rows are checked by src/data/formats.py.

Files are keyed by their content (a streamed hash), not their name and mtime: a file replaced by other rows
with the same mtime (`cp -p`) is read anew, and the tokenised cache (src/data/tokenize.py) follows the hash.
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets import ClassLabel, Dataset, load_dataset

from ..base import files as disk  # disk.CACHE read when used: a test or script may point it elsewhere
from ..config.data import FILE_LOADERS, check_file
from ..config.errors import ConfigError
from . import formats

log = logging.getLogger(__name__)


def _first_bad_line(path: str) -> tuple[int, int] | None:
    """(line, byte) of the first line that is not UTF-8, or None."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, exc.start
    return None


def _repeated_column(path: str, delimiter: str) -> str | None:
    """A header naming one column twice: pandas would read the second as `text.1` and the run the first, unsaid."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f, delimiter=delimiter), [])
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if name in seen:
            return f"the header names column {name!r} twice (columns {seen[name]} and {i}); give each column its own name"
        seen[name] = i
    return None


def _first_bad_json_line(path: str) -> str | None:
    """Where a JSON-lines file stops parsing, e.g. "line 3 is not JSON: Expecting ...", or None."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                try:
                    json.loads(line)
                except ValueError as exc:
                    return f"line {number} is not JSON: {exc}"
    return None


def _read(path: str, key: str, na_values: list | None = None) -> tuple[Dataset, str]:
    """The file's rows and its content hash. In CSV/TSV only the na_values cells are missing (data.na_values: the
    empty ones): pandas' own list would read a class named "None" or a text cell "NA" as no value."""
    check_file(key, path)  # validate() checked it before the heavy imports; a file can go missing in between
    ext = os.path.splitext(path)[1].lower()
    if ext != ".parquet":  # found before datasets does: its error names neither the line nor the fix
        bad = _first_bad_line(path)
        if bad:
            raise ConfigError(key, path, f"not UTF-8 at line {bad[0]} (byte {bad[1]}); re-encode it, "
                                         f"e.g. iconv -f cp949 -t utf-8")
    kwargs = {"delimiter": "\t"} if ext == ".tsv" else {}
    if ext in (".csv", ".tsv"):
        kwargs.update(keep_default_na=False, na_values=list(na_values if na_values is not None else [""]))
        if twice := _repeated_column(path, "\t" if ext == ".tsv" else ","):
            raise ConfigError(key, path, twice)
    digest = disk.content_hash(path)
    # datasets keys its own Arrow copy by path and mtime: a cache directory per content makes it by content
    cache_dir = disk.CACHE / "datasets" / f"file-{digest[:16]}"
    try:
        ds = load_dataset(FILE_LOADERS[ext], data_files=path, split="train", cache_dir=str(cache_dir), **kwargs)
    except ValueError as exc:
        if "corresponds to no data" in str(exc):  # how datasets says a file has a header and no rows
            raise ConfigError(key, path, "the file has no rows") from None
        raise ConfigError(key, path, f"could not be read: {str(exc).splitlines()[0]}") from None
    except Exception as exc:  # malformed CSV, broken JSON line, truncated Parquet
        bad = _first_bad_json_line(path) if ext == ".jsonl" else None
        if bad:
            raise ConfigError(key, path, bad) from None
        raise ConfigError(key, path, f"could not be read: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    if len(ds) == 0:
        raise ConfigError(key, path, "the file has no rows")
    return ds, digest


def _need_column(ds: Dataset, key: str, column: str) -> None:
    if column not in ds.column_names:
        raise ConfigError(key, column, "no such column; the file has: " + ", ".join(ds.column_names))


def _need_text(ds: Dataset, key: str, column: str) -> None:
    """Every cell a string: an empty CSV cell (NaN) or a number column would reach the tokenizer as a TypeError."""
    if getattr(ds.features[column], "dtype", None) in ("string", "large_string"):
        cells = ds.with_format("arrow")[column]
        if cells.null_count:
            row = pc.index(pc.is_null(cells), True).as_py()
            raise ConfigError(key, column, f"data row {row + 1} is empty (null/NaN; rows counted from 1, a CSV's "
                                           "header apart): every text cell must be a string; fill or drop that row")
        return
    values = ds[column]
    row = next((r for r, v in enumerate(values) if not isinstance(v, str)), None)
    if row is not None:
        found = "empty (null/NaN)" if values[row] is None else f"{type(values[row]).__name__} {values[row]!r}"
        raise ConfigError(key, column, f"data row {row + 1} is {found}, not text (rows counted from 1, a CSV's header "
                                       f"apart; the column holds {ds.features[column]})")


def _labels(ds: Dataset, column: str) -> list:
    """The label column's values, whole-number floats as ints. Refused: a missing label, a fractional one
    (classes are ids or names; 0.5 is neither), numbers mixed with names (which would each be a class)."""
    key = "data.label_column"
    values = ds[column]
    for row, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ConfigError(key, column, f"row {row} has no label (an empty cell)")
        if isinstance(v, (list, dict)):  # its text would be a class: "[1, 2]"
            raise ConfigError(key, column, f"row {row} has the {type(v).__name__} {v!r}: a class label is one id or one "
                                           "name (rows of several labels are not supported)")
    numeric = [isinstance(v, (int, float)) for v in values]
    if any(numeric) and not all(numeric):
        n, t = numeric.index(True), numeric.index(False)
        raise ConfigError(key, column, f"mixes numbers and names (row {n}: {values[n]!r}, row {t}: {values[t]!r}); "
                                       "use one or the other")
    if not all(numeric):
        return values
    fraction = next((row for row, v in enumerate(values) if v != int(v)), None)
    if fraction is not None:
        raise ConfigError(key, column, f"row {fraction} has {values[fraction]!r}: a class label is a whole number "
                                       "(an id) or a name")
    return [int(v) for v in values]


def label_map(ds: Dataset, column: str, num_labels: int | None, path: str = "the data") -> tuple[dict | None, int]:
    """(None for integer labels (ids as they are), else names -> ids in sorted order; the number of classes). The
    classes the data has (its names, or its largest id + 1) are the head's width: task.num_labels, where set,
    must agree (a head of another width trains, and the report's ln(num_labels) baseline is then for another
    head); None takes the data's."""
    feature = ds.features[column]
    if isinstance(feature, ClassLabel):
        names = feature.names
    else:
        values = _labels(ds, column)
        if values and isinstance(values[0], int):
            classes = max(values) + 1
            width = classes if num_labels is None else num_labels
            bad = [(row, v) for row, v in enumerate(values) if not 0 <= v < width]
            if len(set(values)) < 2:
                raise ConfigError("data.label_column", column, f"{path} has one class (label {values[0]}) in {len(values)} "
                                                               "rows: a classifier needs rows of at least 2 classes")
            if bad:
                row, value = bad[0]
                fix = f"set task.num_labels={classes}" if min(values) >= 0 else "class ids start at 0"
                raise ConfigError("data.label_column", column, f"{len(bad)} labels outside [0, {width}) "
                                                               f"(first: row {row}, label {value}); {fix}")
            if num_labels is not None and classes != num_labels:
                raise ConfigError("task.num_labels", num_labels, f"{path} has label ids 0..{classes - 1}: {classes} "
                                                                 f"classes, not {num_labels}; set task.num_labels={classes} "
                                                                 "(or leave it unset: the data's count)")
            return None, classes
        names = sorted({str(x) for x in values})
    if len(names) < 2:
        raise ConfigError("data.label_column", column, f"{path} has one class ({names[0]!r}): a classifier needs rows "
                                                       "of at least 2 classes")
    if num_labels is not None and len(names) != num_labels:
        raise ConfigError("task.num_labels", num_labels, f"{path} has {len(names)} label names in column {column}, "
                                                         f"not {num_labels}; set task.num_labels={len(names)} (or leave it "
                                                         "unset: the data's count)")
    return {name: i for i, name in enumerate(names)}, len(names)


@dataclass
class Files:
    """data=files, read and checked: each split's rows (cut to max_*_samples), content hash and path, and the
    label names' ids (None for integer labels)."""
    rows: dict = field(default_factory=dict)
    digests: dict = field(default_factory=dict)
    paths: dict = field(default_factory=dict)
    label2id: dict | None = None
    num_labels: int | None = None  # the classes the train file has (classification)


def read_files(cfg) -> Files:
    """Every split's file read once and checked before anything is tokenised: the columns the task needs, the
    text cells, the labels (the eval file's too), or the instruction/chat format."""
    d, task = cfg.data, cfg.task.name
    out = Files()
    for split, path, key, limit in (("train", d.train_file, "data.train_file", d.max_train_samples),
                                    ("eval", d.eval_file, "data.eval_file", d.max_eval_samples)):
        if not path:
            continue
        ds, out.digests[split] = _read(path, key, list(d.na_values))
        out.paths[split] = path
        if d.format != "text":  # instruction or chat rows (task=causal_lm, DataConfig.check)
            if limit:
                ds = ds.select(range(min(limit, len(ds))))
            formats.check(ds, d.format, path)
            out.rows[split] = ds
            continue
        _need_column(ds, "data.text_column", d.text_column)
        if task == "classification":
            _need_column(ds, "data.label_column", d.label_column)
        if task == "seq2seq":
            if not d.target_column:
                raise ConfigError("data.target_column", None, "task=seq2seq needs the summary column's name")
            _need_column(ds, "data.target_column", d.target_column)
        if limit:  # before tokenising: a quick run tokenises only what it uses
            ds = ds.select(range(min(limit, len(ds))))
        _need_text(ds, "data.text_column", d.text_column)
        if task == "seq2seq":
            _need_text(ds, "data.target_column", d.target_column)
        if task == "classification":
            _labels(ds, d.label_column)  # the eval file's labels checked too
        out.rows[split] = ds
    if task == "classification" and d.format == "text":
        out.label2id, out.num_labels = label_map(out.rows["train"], d.label_column, cfg.task.num_labels, d.train_file)
        if "eval" in out.rows:  # a class the head was never trained on can't be scored: named, not just counted
            seen = _labels(out.rows["eval"], d.label_column)
            if out.label2id is None and (name := next((v for v in seen if isinstance(v, str)), None)) is not None:
                raise ConfigError("data.eval_file", d.eval_file, f"has label names ({name!r}) where the training file "
                                                                 "has class ids: use one or the other in both")
            unknown = sorted({str(v) for v in seen if (str(v) not in out.label2id if out.label2id
                                                      else not 0 <= int(v) < out.num_labels)})
            if unknown:
                raise ConfigError("data.eval_file", d.eval_file, f"has labels the training file does not: "
                                                                 f"{', '.join(repr(u) for u in unknown[:5])}"
                                                                 f"{' ...' if len(unknown) > 5 else ''}")
    return out


# -- synthetic rows -------------------------------------------------------------------------------------
N_SPECIAL = 4  # synthetic ids start here, clear of the usual pad/bos/eos/unk ids


def _ragged(values: np.ndarray, lengths: np.ndarray) -> pa.ListArray:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.astype(np.int32)))


def _zipf_tokens(rng, n: int, vocab: int, specials) -> np.ndarray:
    """Zipf-distributed ids like natural text, so a causal LM has a unigram to learn."""
    ids = (rng.zipf(1.2, n) - 1) % (vocab - N_SPECIAL) + N_SPECIAL
    for s in specials:
        ids[ids == s] = N_SPECIAL
    return ids


def synthetic(cfg, conf, n_rows: int, seed: int) -> Dataset:
    """Token ids made directly: lengths ~N(mean, std) clipped, a learnable signal per task."""
    d, task = cfg.data, cfg.task.name
    rng = np.random.default_rng(seed)
    vocab = conf.vocab_size
    specials = {t for t in (conf.pad_token_id, conf.bos_token_id, conf.eos_token_id) if t is not None}
    lengths = np.clip(np.rint(rng.normal(d.length_mean, d.length_std, n_rows)), d.length_min, d.length_max)
    lengths = np.minimum(lengths, d.max_length).astype(np.int64)
    ids = _zipf_tokens(rng, int(lengths.sum()), vocab, specials)
    cols = {"length": pa.array(lengths.astype(np.int32))}
    if task == "classification":
        k = cfg.task.num_labels or d.labels
        labels = rng.integers(0, k, n_rows)
        # Half the tokens come from a band of ids owned by the row's label: learnable from a bag of tokens. A
        # wide band (the default, vocab / classes ids) is learnt only by training the embeddings or memorising
        # rows: a frozen random model averages its ids' embeddings to nothing. A few ids (data.cue_ids) keep a
        # class's direction, which LoRA on random weights can learn (experiments/speed, FP8 at full depth).
        band = d.cue_ids or max(1, (vocab - N_SPECIAL) // k)
        # narrow bands sit in the vocabulary's upper half: the first ids are the Zipf text's most frequent, in every row
        first = (vocab - N_SPECIAL) // 2 if d.cue_ids else 0
        room = vocab - N_SPECIAL - first
        if d.cue_ids and k * band > room:
            raise ConfigError("data.cue_ids", d.cue_ids, f"{k} classes x {band} ids must fit in the upper half of the "
                                                         f"vocabulary ({room} ids): at most {max(1, room // k)} here")
        row_label = np.repeat(labels, lengths)
        cue = N_SPECIAL + (first + row_label * band + rng.integers(0, band, ids.size)) % (vocab - N_SPECIAL)
        for s in specials:
            cue[cue == s] = N_SPECIAL
        ids = np.where(rng.random(ids.size) < 0.5, cue, ids)
        cols["labels"] = pa.array(labels.astype(np.int64))
    elif task == "seq2seq":
        # The summary is the first tokens of the source: a copy task an encoder-decoder learns quickly.
        tl = np.clip(np.rint(rng.normal(d.target_length_mean, d.target_length_mean / 4, n_rows)), 4, d.target_length_max)
        tl = np.minimum(np.minimum(tl, lengths), d.max_target_length).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        targets = np.concatenate([ids[s:s + n] for s, n in zip(starts, tl)])
        cols["labels"] = _ragged(targets, tl)
    cols["input_ids"] = _ragged(ids, lengths)
    return Dataset(pa.table(cols))


def synthetic_splits(cfg, conf) -> tuple[Dataset, Dataset | None]:
    """data=synthetic: the train rows and, with data.eval_size, the eval rows (another seed)."""
    d = cfg.data
    train = synthetic(cfg, conf, d.size, d.seed)
    evals = synthetic(cfg, conf, d.eval_size, d.seed + 1) if d.eval_size else None
    if d.max_train_samples:
        train = train.select(range(min(d.max_train_samples, len(train))))
    if evals is not None and d.max_eval_samples:
        evals = evals.select(range(min(d.max_eval_samples, len(evals))))
    return train, evals
