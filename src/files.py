"""Local text files (CSV, JSONL, Parquet) through `datasets`: memory-mapped Arrow, tokenised with
`map(batched=True, num_proc=...)`, cached by fingerprint so a second run does not re-tokenise."""
from __future__ import annotations

import logging
import os
from pathlib import Path

from datasets import Dataset, load_dataset

from src.config import ConfigError

log = logging.getLogger(__name__)
CACHE = Path(os.environ.get("TRAINSWEEP_CACHE", "outputs/cache"))
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]

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


def train_tokenizer(cfg, vocab_limit: int):
    """The offline fallback for models without a tokenizer (random init): a byte-level BPE trained on the
    training texts, cached by the file's fingerprint. Byte-level: any text encodes, nothing is unknown."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

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
        texts = (batch[d.text_column] for batch in ds.iter(batch_size=10_000))
        tok.train_from_iterator(texts, trainer, length=len(ds))
        PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                unk_token="<unk>").save_pretrained(path)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = cfg.padding.side
    return tok


def load_files(cfg, tokenizer) -> tuple[Dataset, Dataset | None]:
    d, task = cfg.data, cfg.task.name
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
