"""Training data: synthetic token ids shaped like the seed data, or local files, and the batch collator.

Rows are `datasets.Dataset` rows with `input_ids`, `length` and, per task, `labels` (class id or target ids;
for causal LM rows of an instruction or chat format, ids with -100 on the prompt, else made here from input_ids).
Padding happens in the collator, except padding=longest, which reproduces the seed's tokenisation-time
padding by storing padded rows.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch
from datasets import Dataset
from transformers import AutoTokenizer

log = logging.getLogger(__name__)
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
        k = cfg.task.num_labels
        labels = rng.integers(0, k, n_rows)
        # Half the tokens come from a band of ids owned by the row's label: learnable from a bag of tokens.
        band = max(1, (vocab - N_SPECIAL) // k)
        row_label = np.repeat(labels, lengths)
        cue = N_SPECIAL + (row_label * band + rng.integers(0, band, ids.size)) % (vocab - N_SPECIAL)
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


def pad_chunks(ds: Dataset, pad_id: int, chunk_size: int, token_labels: bool = False) -> Dataset:
    """padding=longest at tokenisation time (the seed's "before"): every chunk of rows that
    datasets.map tokenises together is padded to the longest row in it. token_labels: the rows carry a label
    per token (causal LM chat formats), padded with -100 alike so they stay aligned with input_ids."""
    def pad(batch):
        longest = max(len(x) for x in batch["input_ids"])
        batch["attention_mask"] = [[1] * len(x) + [0] * (longest - len(x)) for x in batch["input_ids"]]
        batch["input_ids"] = [x + [pad_id] * (longest - len(x)) for x in batch["input_ids"]]
        if token_labels:
            batch["labels"] = [x + [-100] * (longest - len(x)) for x in batch["labels"]]
        return batch
    return ds.map(pad, batched=True, batch_size=chunk_size, desc="padding chunks to longest")


@dataclass
class PadCollator:
    """Pads a list of rows into tensors. strategy=max_length gives one fixed shape; otherwise each
    batch is padded to its longest row (rounded up to pad_to_multiple_of)."""

    task: str
    pad_id: int
    max_length: int
    fixed: bool = False
    multiple: int | None = None
    side: str = "right"
    max_target_length: int = 64
    decoder_start_id: int | None = None  # seq2seq: decoder inputs are the labels shifted right

    def _width(self, longest: int, fixed_width: int) -> int:
        width = fixed_width if self.fixed else longest
        return int(math.ceil(width / self.multiple) * self.multiple) if self.multiple else width

    def _pad(self, seqs, width: int, value: int):
        out = torch.full((len(seqs), width), value, dtype=torch.long)
        for i, s in enumerate(seqs):
            n = min(len(s), width)
            if self.side == "right":
                out[i, :n] = torch.as_tensor(s[:n])
            else:
                out[i, width - n:] = torch.as_tensor(s[:n])
        return out

    def __call__(self, rows: list[dict]) -> dict:
        seqs = [r["input_ids"] for r in rows]
        width = self._width(max(len(s) for s in seqs), self.max_length)
        input_ids = self._pad(seqs, width, self.pad_id)
        if "attention_mask" in rows[0]:  # rows padded at tokenisation time carry their own mask
            mask = self._pad([r["attention_mask"] for r in rows], width, 0)
        else:
            mask = self._pad([[1] * len(s) for s in seqs], width, 0)
        batch = {"input_ids": input_ids, "attention_mask": mask}
        if self.task == "classification":
            batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.long)
        elif self.task == "causal_lm" and "labels" in rows[0]:  # chat formats: the prompt is -100 already
            batch["labels"] = self._pad([r["labels"] for r in rows], width, -100)
        elif self.task == "causal_lm":
            batch["labels"] = input_ids.masked_fill(mask == 0, -100)
        else:
            targets = [r["labels"] for r in rows]
            t_width = self._width(max(len(t) for t in targets), self.max_target_length)
            labels = self._pad(targets, t_width, -100)
            # Made here, not by the model from its labels: the Trainer's token-level loss takes the labels away.
            decoder = torch.full_like(labels, self.pad_id)
            decoder[:, 0] = self.decoder_start_id
            decoder[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == -100, self.pad_id)
            batch.update(labels=labels, decoder_input_ids=decoder)
        return batch


def build_collator(cfg, pad_id: int, decoder_start_id: int | None = None, shortest: int | None = None):
    p, d = cfg.padding, cfg.data
    if p.strategy == "packed":
        from .packing import PackCollator, max_sequences

        budget = cfg.batch.tokens
        shortest = shortest or max(1, d.length_min if d.source == "synthetic" else 1)
        slots = max(max_sequences(budget, shortest, d.max_length) if budget else 0, cfg.batch.size + 2)
        return PackCollator(task=cfg.task.name, pad_id=pad_id, max_length=d.max_length, budget=budget, slots=slots)
    return PadCollator(task=cfg.task.name, pad_id=pad_id, max_length=cfg.data.max_length,
                       fixed=p.strategy == "max_length", multiple=p.pad_to_multiple_of, side=p.side,
                       max_target_length=cfg.data.max_target_length, decoder_start_id=decoder_start_id)


def to_device(batch: dict, device) -> dict:
    """A collated batch on the device, as the model takes it (without the collator's host-side counts)."""
    from .packing import PACK_STATS

    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items() if k != PACK_STATS}


def collator_for(cfg, conf, lengths: dict | None = None):
    """The collator for this model's special tokens (and, padding-free, the data's shortest row)."""
    return build_collator(cfg, conf.pad_token_id, getattr(conf, "decoder_start_token_id", None),
                          (lengths or {}).get("min"))


def for_trainer(cfg, train: Dataset):
    """What the Trainer iterates: the rows, or with a token budget the rows grouped into packs (one per
    micro-batch; the Trainer shuffles the packs every epoch)."""
    if cfg.padding.strategy != "packed" or not cfg.batch.tokens:
        return train
    from .packing import PackedDataset, first_fit

    lengths = np.minimum(np.asarray(train["length"]), cfg.data.max_length)
    packs = first_fit(lengths, cfg.batch.tokens, cfg.data.seed)
    log.info("packed %d rows into %d micro-batches of %d tokens (%.1f%% filled)", len(train), len(packs),
             cfg.batch.tokens, 100 * lengths.sum() / (len(packs) * cfg.batch.tokens))
    return PackedDataset(train, packs)


def load_tokenizer(cfg):
    """The model directory's tokenizer, or None for random-init models (synthetic data needs none)."""
    m = cfg.model
    if not (m.pretrained or m.model_type == "auto"):
        return None
    tok = AutoTokenizer.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code)
    tok.padding_side = cfg.padding.side
    if tok.pad_token is None:
        # Common practice, and the loss-69 report's suspect: the diagnostics check pad == eos.
        log.warning("tokenizer has no pad token; using eos (%s) as pad", tok.eos_token)
        tok.pad_token = tok.eos_token
    return tok


@dataclass
class Prepared:
    """The data side of a run, handed to the model side explicitly."""
    tokenizer: object | None
    train: Dataset
    eval: Dataset | None
    info: dict  # the report's "data" section: lengths, the label map, tokenisation costs of file data
    for_model: dict  # what the model's config must agree with: the pad id the rows are padded with, label names


def prepare(cfg, conf, out_dir) -> Prepared:
    """The tokenizer (the model's, or the offline fallback for text files), the datasets, and what the report
    says about them. Writes labels.json when labels have names. `conf` is read, never changed."""
    import json

    from . import files
    from .report_files import atomic_write

    tokenizer = load_tokenizer(cfg)
    if tokenizer is None and cfg.data.source == "files":
        tokenizer = files.train_tokenizer(cfg, conf.vocab_size)  # offline fallback, cached
    for_model = {}
    if tokenizer is not None:  # it pads the data: sequence classification must pool by its pad id
        for_model["pad_token_id"] = tokenizer.pad_token_id
    train, evals, info = build_datasets(cfg, conf, tokenizer, for_model.get("pad_token_id", conf.pad_token_id))
    if info.get("label2id"):  # the names behind the ids, kept with the run and in the model's config
        atomic_write(out_dir / "labels.json", json.dumps(info["label2id"], ensure_ascii=False, indent=1))
        for_model["label2id"] = info["label2id"]
        for_model["id2label"] = {i: name for name, i in info["label2id"].items()}
    return Prepared(tokenizer, train, evals, {"lengths": length_stats(train), **info}, for_model)


def build_datasets(cfg, conf, tokenizer=None, pad_id: int | None = None) -> tuple[Dataset, Dataset | None, dict]:
    """(train, eval, info): info has the label map and tokenisation costs of file data."""
    d, info = cfg.data, {}
    if d.source == "synthetic":
        train = synthetic(cfg, conf, d.size, d.seed)
        evals = synthetic(cfg, conf, d.eval_size, d.seed + 1) if d.eval_size else None
        if d.max_train_samples:
            train = train.select(range(min(d.max_train_samples, len(train))))
        if evals is not None and d.max_eval_samples:
            evals = evals.select(range(min(d.max_eval_samples, len(evals))))
    else:
        from .files import load_files

        train, evals, info = load_files(cfg, tokenizer)
    if cfg.padding.strategy == "longest":
        token_labels = cfg.task.name == "causal_lm" and "labels" in train.column_names
        train = pad_chunks(train, conf.pad_token_id if pad_id is None else pad_id, cfg.padding.chunk_size, token_labels)
    return train, evals, info


def length_stats(ds: Dataset) -> dict:
    lengths = np.asarray(ds["length"], dtype=np.float64)
    return {"rows": len(lengths), "mean": float(lengths.mean()), "min": int(lengths.min()), "max": int(lengths.max()),
            "p50": float(np.percentile(lengths, 50)), "p90": float(np.percentile(lengths, 90)),
            # attention costs seq per token: the token-weighted mean length is sum(L^2)/sum(L)
            "token_weighted_mean": float((lengths ** 2).sum() / lengths.sum())}

