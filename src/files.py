"""Local text files (CSV, TSV, JSONL, Parquet) through `datasets`: memory-mapped Arrow, tokenised with
`map(batched=True, num_proc=...)` and cached by fingerprint, so a second run does not re-tokenise.

Rows become `input_ids`, `length` and, per task, `labels` (class ids, or target ids for seq2seq). String
labels are mapped to ids in sorted order (the mapping is saved with the run); integer labels (and floats
that are whole numbers) are used as they are. Bad input is a ConfigError naming the key: missing file,
unknown extension, missing column (with the columns that exist), no rows, a text cell that is not a string
(with its row), labels out of range, fractional or missing, classes other than task.num_labels (with the
override), numbers mixed with names, bytes that are not UTF-8 (with the line), a broken JSON line (with its
number). Rows whose text is empty are dropped with a warning.

data.format=alpaca|sharegpt|messages reads instruction and chat rows for a causal LM instead (src/formats.py):
rendered by the tokenizer's chat template, labels on the answers only.

Caches are keyed by the file's content (a streamed hash), not its name and mtime: a file replaced by other
rows with the same mtime (`cp -p`) is read and tokenised anew.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time

import pyarrow.compute as pc
from datasets import ClassLabel, Dataset, load_dataset
from datasets.fingerprint import Hasher

from . import formats
from .config import ConfigError
from .env import CACHE
from .report_files import atomic_write

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


def _hasher():
    try:
        import xxhash

        return xxhash.xxh3_128()  # several GB/s
    except ImportError:
        return hashlib.blake2b(digest_size=16)


def content_hash(path: str) -> str:
    """A fast hash of the file's bytes, streamed. Remembered under CACHE/hashes by path, size, mtime, ctime and
    inode, so an unchanged file is not read again: `cp -p` (or rsync -t) of other rows keeps the mtime, and
    maybe the size, but the kernel sets ctime on every write and no tool can set it back."""
    st = os.stat(path)
    full = os.path.abspath(path)
    key = [full, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    memo = CACHE / "hashes" / (hashlib.blake2b(full.encode(), digest_size=8).hexdigest() + ".json")
    try:
        saved = json.loads(memo.read_text())
        if saved["key"] == key:
            return saved["hash"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    h = _hasher()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    memo.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(memo, json.dumps({"key": key, "hash": digest}))
    return digest


def _read(path: str, key: str) -> tuple[Dataset, str]:
    """The file's rows and its content hash."""
    if not os.path.isfile(path):
        raise ConfigError(key, path, "no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in LOADERS:
        raise ConfigError(key, path, "unknown extension; allowed: " + ", ".join(LOADERS))
    if os.path.getsize(path) == 0:
        raise ConfigError(key, path, "the file has no rows (it is empty, 0 bytes)")
    if ext != ".parquet":  # found before datasets does: its error names neither the line nor the fix
        bad = _first_bad_line(path)
        if bad:
            raise ConfigError(key, path, f"not UTF-8 at line {bad[0]} (byte {bad[1]}); re-encode it, "
                                         f"e.g. iconv -f cp949 -t utf-8")
    kwargs = {"delimiter": "\t"} if ext == ".tsv" else {}
    digest = content_hash(path)
    # datasets keys its own Arrow copy by path and mtime: a cache directory per content makes it by content
    cache_dir = CACHE / "datasets" / f"file-{digest[:16]}"
    try:
        ds = load_dataset(LOADERS[ext], data_files=path, split="train", cache_dir=str(cache_dir), **kwargs)
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
            raise ConfigError(key, column, f"row {row} is empty (null/NaN): every text cell must be a string; "
                                           "fill or drop that row")
        return
    values = ds[column]
    row = next((r for r, v in enumerate(values) if not isinstance(v, str)), None)
    if row is not None:
        found = "empty (null/NaN)" if values[row] is None else f"{type(values[row]).__name__} {values[row]!r}"
        raise ConfigError(key, column, f"row {row} is {found}, not text (the column holds {ds.features[column]})")


def _labels(ds: Dataset, column: str) -> list:
    """The label column's values, whole-number floats as ints. Refused: a missing label, a fractional one
    (classes are ids or names; 0.5 is neither), numbers mixed with names (which would each be a class)."""
    key = "data.label_column"
    values = ds[column]
    for row, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ConfigError(key, column, f"row {row} has no label (an empty cell)")
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


def label_map(ds: Dataset, column: str, num_labels: int, path: str = "the data") -> dict | None:
    """None for integer labels (ids as they are), else names -> ids in sorted order. The classes the data
    has (its names, or its largest id + 1) must be task.num_labels: a head of another width trains, and the
    report's ln(num_labels) baseline is then for a different head."""
    feature = ds.features[column]
    if isinstance(feature, ClassLabel):
        names = feature.names
    else:
        values = _labels(ds, column)
        if values and isinstance(values[0], int):
            bad = [(row, v) for row, v in enumerate(values) if not 0 <= v < num_labels]
            classes = max(values) + 1
            if bad:
                row, value = bad[0]
                fix = f"set task.num_labels={classes}" if min(values) >= 0 else "class ids start at 0"
                raise ConfigError("data.label_column", column, f"{len(bad)} labels outside [0, {num_labels}) "
                                                               f"(first: row {row}, label {value}); {fix}")
            if classes != num_labels:
                raise ConfigError("task.num_labels", num_labels, f"{path} has label ids 0..{classes - 1}: {classes} "
                                                                 f"classes, not {num_labels}; set task.num_labels={classes}")
            return None
        names = sorted({str(x) for x in values})
    if len(names) != num_labels:
        raise ConfigError("task.num_labels", num_labels, f"{path} has {len(names)} label names in column {column}, "
                                                         f"not {num_labels}; set task.num_labels={len(names)}")
    return {name: i for i, name in enumerate(names)}


def train_tokenizer(cfg, vocab_limit: int):
    """The offline fallback for models without a tokenizer (random init): a byte-level BPE trained on the
    training texts, cached by the file's fingerprint. Byte-level: any text encodes, nothing is unknown."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    d = cfg.data
    ds, digest = _read(d.train_file, "data.train_file")
    if d.format == "text":
        _need_column(ds, "data.text_column", d.text_column)
        _need_text(ds, "data.text_column", d.text_column)
        texts, source = (lambda batch: batch[d.text_column]), d.text_column
    else:  # instruction and chat rows: trained on their turns' text
        formats.check(ds, d.format, d.train_file)
        texts, source = (lambda batch: formats.texts(batch, d.format)), f"format={d.format}"
    vocab = min(d.tokenizer_vocab_size, vocab_limit)
    path = CACHE / "tokenizers" / f"bpe{vocab}-{Hasher.hash((digest, source))}"  # by content, not name
    if (path / "tokenizer.json").exists():
        log.info("fallback tokenizer: cache hit %s", path)
    else:
        log.info("no tokenizer with this model: training a %d-token byte-level BPE on %s", vocab, d.train_file)
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator((texts(batch) for batch in ds.iter(batch_size=10_000)), trainer, length=len(ds))
        PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                unk_token="<unk>").save_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = cfg.padding.side
    return tok


def load_files(cfg, tokenizer) -> tuple[Dataset, Dataset | None, dict]:
    """(train, eval, info): info has the label map and what tokenising each split cost."""
    d, task = cfg.data, cfg.task.name
    raw, digests = {}, {}
    raw["train"], digests["train"] = _read(d.train_file, "data.train_file")
    if d.eval_file:
        raw["eval"], digests["eval"] = _read(d.eval_file, "data.eval_file")
    limits = {"train": d.max_train_samples, "eval": d.max_eval_samples}
    paths = {"train": d.train_file, "eval": d.eval_file}
    for split, ds in raw.items():
        if d.format != "text":  # instruction or chat rows (task=causal_lm, DataConfig.check)
            if limits[split]:
                raw[split] = ds = ds.select(range(min(limits[split], len(ds))))
            formats.check(ds, d.format, paths[split])
            continue
        _need_column(ds, "data.text_column", d.text_column)
        if task == "classification":
            _need_column(ds, "data.label_column", d.label_column)
        if task == "seq2seq":
            if not d.target_column:
                raise ConfigError("data.target_column", None, "task=seq2seq needs the summary column's name")
            _need_column(ds, "data.target_column", d.target_column)
        if limits[split]:  # before tokenising: a quick run tokenises only what it uses
            raw[split] = ds = ds.select(range(min(limits[split], len(ds))))
        _need_text(ds, "data.text_column", d.text_column)
        if task == "seq2seq":
            _need_text(ds, "data.target_column", d.target_column)
        if task == "classification":
            _labels(ds, d.label_column)  # the eval file's labels checked too

    label2id = label_map(raw["train"], d.label_column, cfg.task.num_labels, d.train_file) if task == "classification" else None

    def tokenize(batch):
        enc = tokenizer(batch[d.text_column], truncation=True, max_length=d.max_length)
        out = {"input_ids": enc["input_ids"], "length": [len(x) for x in enc["input_ids"]]}
        if task == "classification":
            labels = batch[d.label_column]
            out["labels"] = [label2id.get(str(x), -1) for x in labels] if label2id else [int(x) for x in labels]
        elif task == "seq2seq":
            out["labels"] = tokenizer(text_target=batch[d.target_column], truncation=True,
                                      max_length=d.max_target_length)["input_ids"]
        return out

    out, info = {}, {"label2id": label2id, "tokenize": {}}
    key = (tokenizer, task, d.text_column, d.label_column, d.target_column, d.max_length, d.max_target_length, label2id)
    if d.format != "text":  # the format and the template that renders it (the tokenizer's own, or the plain one)
        own = formats.template(tokenizer) is None
        key += (d.format, tokenizer.chat_template if own else formats.PLAIN_TEMPLATE)
        info["format"] = {"name": d.format, "template": "chat_template" if own else "plain"}
        log.info("data.format=%s: rendered with %s; loss on the assistant turns only", d.format,
                 "the tokenizer's chat template" if own else
                 "the plain ### Instruction / ### Response template (the tokenizer has no chat template)")
    key = Hasher.hash(key)
    for split, ds in raw.items():
        fingerprint = Hasher.hash((digests[split], ds._fingerprint, key))  # the content, not only name and mtime
        cache = CACHE / "datasets" / f"tokenized-{fingerprint}.arrow"
        hit = any(cache.parent.glob(f"{cache.stem}*.arrow"))
        num_proc = min(d.num_proc, os.cpu_count() or 1, max(1, len(ds) // 1000))
        start = time.perf_counter()
        fn = tokenize if d.format == "text" else formats.encoder(tokenizer, d.format, paths[split], d.max_length)
        out[split] = ds.map(fn, batched=True, with_indices=d.format != "text", num_proc=num_proc if num_proc > 1 else None,
                            remove_columns=ds.column_names, new_fingerprint=fingerprint,
                            cache_file_name=str(cache), desc=f"tokenising {split}")
        seconds = time.perf_counter() - start
        info["tokenize"][split] = {"rows": len(ds), "num_proc": num_proc, "cache_hit": hit, "seconds": seconds}
        log.info("tokenising %s (%d rows): %s in %.2f s", split, len(ds),
                 f"cache hit {cache.name}" if hit else f"num_proc={num_proc}, cached as {cache.name}", seconds)
        lengths = out[split]["length"]
        if 0 in lengths:  # empty text (or, for chat formats, no answer token left): no token to pool or predict from
            empty = [row for row, n in enumerate(lengths) if n == 0]
            if d.format == "text":
                log.warning("%s: %d of %d rows have empty text (0 tokens; first: row %d): dropped", split, len(empty),
                            len(lengths), empty[0])
            else:
                log.warning("%s: %d of %d rows have no answer tokens within data.max_length=%d (no assistant turn, or "
                            "the prompt fills it; first: row %d): dropped", split, len(empty), len(lengths),
                            d.max_length, empty[0])
            if len(empty) == len(lengths):
                if d.format == "text":
                    raise ConfigError("data.text_column", d.text_column, f"every {split} row's text is empty")
                raise ConfigError("data.max_length", d.max_length, f"no {split} row has an answer token within it "
                                                                   "(or none has an assistant turn); raise it")
            out[split] = out[split].select([row for row, n in enumerate(lengths) if n])
        if task == "classification":  # names the training file lacks map to -1; ids past its classes are too high
            labels = out[split]["labels"]
            if min(labels) < 0 or max(labels) >= cfg.task.num_labels:
                raise ConfigError("data.eval_file", d.eval_file, "has labels that the training file does not")
    return out["train"], out.get("eval"), info
