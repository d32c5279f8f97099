"""Rows to token ids: the model's tokenizer (or, for a random-init model reading text files, a byte-level BPE
trained offline on the rows), `datasets.map(batched=True, num_proc=...)` cached by fingerprint so a second
run does not re-tokenise, and padding=longest's tokenisation-time padding (the seed's "before").

Rows become `input_ids`, `length` and, per task, `labels` (class ids, or target ids for seq2seq; for causal
LM rows of an instruction or chat format, ids with -100 on the prompt: src/data/formats.py). Rows whose text
is empty are dropped with a warning.
"""
from __future__ import annotations

import logging
import os
import shutil
import time

from datasets import Dataset
from datasets.fingerprint import Hasher
from transformers import AutoTokenizer

from ..base import files as disk  # disk.CACHE read when used: a test or script may point it elsewhere
from ..config.errors import ConfigError
from . import formats, sources

log = logging.getLogger(__name__)
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def load_tokenizer(cfg):
    """The model directory's tokenizer, or None for random-init models (synthetic data needs none)."""
    m = cfg.model
    if not (m.pretrained or m.model_type == "auto"):
        return None
    tok = AutoTokenizer.from_pretrained(m.name_or_path, trust_remote_code=m.trust_remote_code, local_files_only=True)
    if not tok("text", add_special_tokens=False)["input_ids"]:  # loaded from no files: every row became 0 tokens
        raise ConfigError("model.name_or_path", m.name_or_path, "its tokenizer turns text into no tokens: the directory "
                                                                "has no tokenizer files (tokenizer.json, or vocab.json and "
                                                                "merges.txt, or tokenizer.model); copy them beside the model")
    tok.padding_side = cfg.padding.side
    if tok.pad_token is None:
        # Common practice, and the loss-69 report's suspect: the diagnostics check pad == eos.
        log.warning("tokenizer has no pad token; using eos (%s) as pad", tok.eos_token)
        tok.pad_token = tok.eos_token
    return tok


def train_tokenizer(cfg, vocab_limit: int, files: sources.Files | None = None):
    """The offline fallback for models without a tokenizer (random init): a byte-level BPE trained on the
    training rows' texts, cached by the file's content and the rows used. Byte-level: any text encodes, nothing
    is unknown. `files`: the rows read_files gave (read here when not given)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    d = cfg.data
    files = files or sources.read_files(cfg)
    ds, digest = files.rows["train"], files.digests["train"]
    if d.format == "text":
        texts, source = (lambda batch: batch[d.text_column]), d.text_column
    else:  # instruction and chat rows: trained on their turns' text
        texts, source = (lambda batch: formats.texts(batch, d.format)), f"format={d.format}"
    vocab = min(d.tokenizer_vocab_size, vocab_limit)
    path = disk.CACHE / "tokenizers" / f"bpe{vocab}-{Hasher.hash((digest, source, len(ds)))}"  # by content, not name
    if (path / "tokenizer.json").exists():
        try:
            tok = AutoTokenizer.from_pretrained(path)
            log.info("fallback tokenizer: cache hit %s", path)
        except Exception as exc:  # a partial entry (a full disk or a kill before this entry was renamed in)
            log.warning("fallback tokenizer cache %s does not load (%s: %s): trained again", path, type(exc).__name__,
                        str(exc).splitlines()[0] if str(exc) else "")
            shutil.rmtree(path, ignore_errors=True)
            tok = None
    else:
        tok = None
    if tok is None:
        log.info("no tokenizer with this model: training a %d-token byte-level BPE on %s", vocab, d.train_file)
        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        bpe.train_from_iterator((texts(batch) for batch in ds.iter(batch_size=10_000)), trainer, length=len(ds))
        # Saved under a temporary name and renamed in whole: a reader finds a complete entry or none
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                unk_token="<unk>").save_pretrained(tmp)
        shutil.rmtree(path, ignore_errors=True)  # an entry without its tokenizer.json is no entry
        try:
            os.rename(tmp, path)
        except OSError:  # another run put the same entry there in between: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
        tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = cfg.padding.side
    return tok


def tokenize_files(cfg, tokenizer, files: sources.Files | None = None) -> tuple[Dataset, Dataset | None, dict]:
    """(train, eval, info) from the rows read_files gave (read here when not given): info has the label map and
    what tokenising each split cost. Cached by the file's content and every setting that changes the rows."""
    d, task = cfg.data, cfg.task.name
    files = files or sources.read_files(cfg)
    raw, digests, paths, label2id = files.rows, files.digests, files.paths, files.label2id

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

    out, info = {}, {"label2id": label2id, "num_labels": files.num_labels, "tokenize": {}}
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
        cache = disk.CACHE / "datasets" / f"tokenized-{fingerprint}.arrow"
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
            if min(labels) < 0 or max(labels) >= (cfg.task.num_labels or files.num_labels):
                raise ConfigError("data.eval_file", d.eval_file, "has labels that the training file does not")
    return out["train"], out.get("eval"), info


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
