"""A collator of the script's own (a function calling tokenizer.pad, a small class, a transformers collator that
src/levers/rows.py does not list) read by what it does, not by its name, before speedup packs its rows.

A few of the script's train rows, the same ones every run, are handed to it as the Trainer's train dataloader
hands them (unused columns removed), in groups that mix lengths so that each batch is padded; the longest row is
among them, so a collator that truncates shows. Each group must come back:

- the same on a second call: a collator that draws (random masking, augmentation) trains on something packed rows,
  rebuilt once from the row, would not;
- holding only input_ids, attention_mask, labels, and position_ids where they count 0, 1, ... over each row's
  attended tokens, as the packs' do. Anything else would be dropped by the packs: token_type_ids too, since GPT-2
  adds an embedding for them even where they are all 0, and a key the model reads (a loss weight) changes its loss;
- with each row's attended tokens (its attention_mask's ones) exactly the row's own, in order;
- with labels a known collator makes of the row: its class (a classifier, integer labels: float ones are read as
  multi-label by transformers); for a causal LM the row's own labels or its input_ids at the attended tokens and
  -100 everywhere else, pad-id tokens scored or not (transformers' LM collator unscores them). Where some row holds
  a pad id (the model's, or one the collator pads with) among its own tokens, as rows ending in eos = pad do, the
  first such row is probed too (found in one pass over the token column): it tells a collator that unscores or
  masks out pad-id tokens from one that doesn't. Where no row holds one, the two make the same of every row.

A collator that fails any of these, or raises, leaves the script's batches as they are, with one line saying which
check and which row. What a dozen rows can't show (a collator that draws rarely, a rule only some rows meet) is
left to the verification (src/levers/verify.py): the same rows' loss, the script's batches against the packs',
within 2%.

Token classification is not packed, whatever its collator (DataCollatorForTokenClassification pads its labels as
DataCollatorForSeq2Seq does, and is packed by this probe on a causal LM's rows): a token classifier's labels are
not shifted, and the packs unscore each sequence's first token, which a causal LM never scores but a token
classifier does (src/data/packing.py); src/levers/apply.py refuses the model before the collator is read.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import torch

from ..base.rng import held_by, rng_kept
from ..data.row_shapes import as_row
from .rows import PACKS, collator_name, own_tokens, rebuild

GROUPS, SIZE = 3, 4  # a dozen rows in three batches, each collated twice: milliseconds before training
KEYS = ("input_ids", "attention_mask", "labels", "position_ids")


class Reading(NamedTuple):
    kind: str  # the known kind the collator pads as (src/levers/rows.py)
    pad_id: int | None  # the id whose tokens that kind unscores (hf_lm), else the one rows.py was given
    line: str  # what was checked, for the lever's line


class Refusal(Exception):
    """What the collator made that packed rows would not: which check, which row."""


def probe(trainer, rows) -> tuple[Reading | None, str | None]:
    """(the reading, None), or (None, why the script's batches stay as its collator makes them)."""
    name = collator_name(trainer.data_collator)
    try:
        with rng_kept(*held_by(trainer)):  # a collator that draws: as it was
            return _read(trainer, rows, name), None
    except Refusal as exc:
        return None, f"your collator ({name}) {exc}: your batches stay as it makes them. {PACKS}"


def _read(trainer, rows, name: str) -> Reading:
    hand, collate = _handed(trainer, rows.dataset)
    source = lambda i: (f"train row {i}", as_row(rows.dataset[i]))  # noqa: E731  (what packing rebuilds the row from)
    groups = _groups(rows.lengths)
    probed = [(_batch(collate, hand(idx)), [source(i) for i in idx]) for idx in groups]
    seen = set().union(*(_padded_with(b) for b, _ in probed)) - {rows.pad_id, None}
    pads = ([rows.pad_id] if rows.pad_id is not None else []) + sorted(seen)[:3]  # junk padding: a few tried
    # a row holding a pad id among its own tokens (eos = pad) is what tells a collator that unscores pad-id tokens,
    # or masks them out, from one that doesn't; rows holding none can't be told apart, and needn't be
    longest, held = groups[-1][-1], _holding(rows.dataset, pads)
    for p, i in held.items():
        other = longest if rows.lengths[longest] != rows.lengths[i] else groups[0][0]
        probed.append((_batch(collate, hand([i, other])), [source(i), source(other)]))
    candidates = [("padding", rows.pad_id)]
    if rows.task != "classification":
        candidates += [("hf_lm", p) for p in pads]
    for batch, sources in probed:
        _tokens(batch, sources)
        kept = [c for c in candidates if _labels(batch, sources, rows.task, *c) is None]
        if not kept:
            raise Refusal(_labels(batch, sources, rows.task, *candidates[0]))
        candidates = kept
    kind, pad_id = candidates[0]
    known, labels = _known(rows.task, kind, pad_id, "labels" in probed[0][1][0][1], alike=not held)
    return Reading(kind, pad_id, f"your collator ({name}) pads as {known} does on {len(probed)} probed batches of "
                                 f"your rows (each made the same twice, each row's attended tokens its own, labels "
                                 f"{labels}, no other keys): packed")


def _holding(dataset, pads: list[int]) -> dict[int, int]:
    """{pad id: the first row holding it among its attended tokens}, for the pad ids some row holds. One pass: a
    datasets.Dataset's columns through Arrow, other datasets row by row (as their lengths were read)."""
    found = {}
    if not pads:
        return found
    columns = getattr(dataset, "column_names", None) or []
    if "input_ids" in columns and hasattr(dataset, "select_columns") and dataset.format.get("type") != "custom":
        # its stored columns whatever its format (torch, numpy): not under set_transform, which makes the rows
        import pyarrow.compute as pc

        columns = [c for c in ("input_ids", "attention_mask") if c in columns]
        offset = 0
        table = dataset.select_columns(columns).with_format("arrow")[:]
        for part in table.combine_chunks().to_batches():  # a shuffled set's rows come as a chunk each: one pass
            ids = part.column(0)
            flat, parent = pc.list_flatten(ids), pc.list_parent_indices(ids)
            attended = pc.not_equal(pc.cast(pc.list_flatten(part.column(1)), "int64"), 0) if len(columns) == 2 else None
            for p in pads:
                hit = pc.equal(flat, p) if attended is None else pc.and_(pc.equal(flat, p), attended)
                k = pc.index(hit, True).as_py()
                if p not in found and k >= 0:
                    found[p] = offset + parent[k].as_py()
            offset += part.num_rows
        return found
    for i in range(len(dataset)):
        held = set(own_tokens(as_row(dataset[i]))) & set(pads)
        for p in held - set(found):
            found[p] = i
        if len(found) == len(pads):
            break
    return found


def _handed(trainer, dataset):
    """(rows of given indices, the collator) as the Trainer's train dataloader pairs them: a datasets.Dataset
    without the columns the model's forward doesn't take, any other dataset through the column-removing wrapper."""
    collator = trainer.data_collator
    try:
        import datasets

        arrow = isinstance(dataset, datasets.Dataset)
    except ImportError:
        arrow = False
    if arrow and hasattr(trainer, "_remove_unused_columns"):
        dataset = trainer._remove_unused_columns(dataset, description="training")
    elif hasattr(trainer, "_get_collator_with_removed_columns"):
        collator = trainer._get_collator_with_removed_columns(collator, description="training")
    return (lambda idx: [dataset[int(i)] for i in idx]), collator


def _groups(lengths: np.ndarray) -> list[list[int]]:
    """A dozen row indices spread over the rows' lengths, shortest to longest, dealt into groups that each mix
    short and long rows (so each is padded); the first group starts with the shortest, the last ends with the
    longest."""
    order = np.argsort(lengths, kind="stable")
    picks = np.unique(np.linspace(0, len(order) - 1, min(len(order), GROUPS * SIZE)).round().astype(int))
    chosen = order[picks].tolist()
    return [chosen[g::GROUPS] for g in range(min(GROUPS, len(chosen)))]


def _batch(collate, handed: list) -> dict:
    """The collator's batch of these rows, made twice from copies (a collator may pop a row's fields)."""
    made = []
    for _ in range(2):
        try:
            made.append(collate(copy.deepcopy(handed)))
        except Exception as exc:  # the user's code: any error is a reason, never raised into their training
            said = (str(exc).splitlines() or [""])[0][:120]
            raise Refusal(f"raised {type(exc).__name__} ({said}) on a batch of {len(handed)} of your rows") from None
    first, second = (_as_tensors(m) for m in made)
    if first.keys() != second.keys() or any(not _same(first[k], second[k]) for k in first):
        raise Refusal("made two different batches of the same rows (it draws: random masking or augmentation), "
                      "which packed rows, rebuilt from each row once, would not")
    extra = sorted(set(first) - set(KEYS))
    if extra:
        raise Refusal(f"puts {', '.join(extra)} in its batches, which packed batches would not hold")
    for key in first:
        if not isinstance(first[key], torch.Tensor):
            raise Refusal(f"makes {key} of type {type(first[key]).__name__}, not a tensor")
    return first


def _as_tensors(made) -> dict:
    if not isinstance(made, Mapping):
        raise Refusal(f"returns a {type(made).__name__}, not a dict of tensors")
    out = {}
    for key, value in made.items():
        try:
            out[key] = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        except Exception:
            out[key] = value
    return out


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    return type(a) is type(b) and a == b


def _padded_with(batch: dict) -> set:
    """The ids it pads input_ids with (where attention_mask is 0): the pad id it may also unscore."""
    mask, ids = batch.get("attention_mask"), batch["input_ids"]
    return set() if mask is None or mask.shape != ids.shape else set(ids[mask == 0].tolist())


def _tokens(batch: dict, sources: list) -> None:
    """Each batch row's attended tokens are its row's own, in order; position_ids, if any, count them from 0."""
    ids = batch.get("input_ids")
    if ids is None or ids.dim() != 2 or ids.shape[0] != len(sources) or ids.dtype.is_floating_point:
        shape = "none" if ids is None else f"{tuple(ids.shape)} {ids.dtype}"
        raise Refusal(f"makes input_ids of {shape} from {len(sources)} rows, not one integer row each")
    mask = batch.get("attention_mask")
    if mask is None:
        if any(len(own_tokens(r)) != ids.shape[1] for _, r in sources):
            raise Refusal("pads without an attention_mask: the model attends its padding, packed rows don't")
        mask = torch.ones_like(ids)
    if mask.shape != ids.shape or not set(mask.unique().tolist()) <= {0, 1}:
        raise Refusal(f"makes an attention_mask of {tuple(mask.shape)} that is not 0s and 1s over input_ids")
    positions = batch.get("position_ids")
    for j, (where, r) in enumerate(sources):
        own = own_tokens(r)
        keep = mask[j].nonzero().flatten()
        got = ids[j, keep].tolist()
        if got != own:
            padded = _padded_with(batch)
            if padded and got == [t for t in own if t not in padded]:
                raise Refusal(f"gives {where}'s own tokens that hold the id it pads with "
                              f"({', '.join(map(str, sorted(padded)))}) an attention_mask of 0, where packed rows "
                              "attend them")
            if got == own[:len(got)]:
                raise Refusal(f"cuts {where} from {len(own)} tokens to {len(got)} (truncation), which packed rows "
                              "would keep whole")
            raise Refusal(f"gives {where} attended tokens other than its own ({len(got)} where it holds {len(own)}, "
                          f"first difference at token {_first_difference(got, own)})")
        if positions is not None and (positions.shape != ids.shape
                                      or positions[j, keep].tolist() != list(range(len(keep)))):
            raise Refusal(f"makes position_ids that don't count {where}'s tokens from 0, as packed rows' do")


def _labels(batch: dict, sources: list, task: str, kind: str, pad_id: int | None) -> str | None:
    """Why the batch's labels are not what the collator of `kind` makes of these rows, or None."""
    labels = batch.get("labels")
    if labels is None:
        return "makes batches without labels, which packed rows would have"
    if labels.dtype.is_floating_point:
        return f"makes labels of {labels.dtype} (a classifier reads float labels as multi-label), not integers"
    width = () if task == "classification" else tuple(batch["input_ids"].shape[1:])
    if tuple(labels.shape) != (len(sources), *width):
        return f"makes labels of {tuple(labels.shape)} for {len(sources)} rows"
    mask = batch.get("attention_mask", torch.ones_like(batch["input_ids"]))
    for j, (where, r) in enumerate(sources):
        expected = rebuild(r, task, kind, pad_id)["labels"]
        if task == "classification":
            if int(labels[j]) != expected:
                return f"gives {where} the label {int(labels[j])} where its class is {expected}"
            continue
        keep = mask[j].bool()
        got = labels[j, keep].tolist()
        if got != expected:
            if got[:-1] == expected[1:]:
                return (f"shifts {where}'s labels one token to the left; the model shifts them itself, so packed "
                        "rows would be scored a token off")
            k = _first_difference(got, expected)
            return (f"gives {where} labels other than those a listed collator makes of it (token {k}: "
                    f"{got[k] if k < len(got) else 'none'} where {expected[k] if k < len(expected) else 'none'})")
        if bool((labels[j, ~keep] != -100).any()):
            return f"scores {where}'s padding (labels other than -100 where attention_mask is 0)"
    return None


def _first_difference(a: list, b: list) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _known(task: str, kind: str, pad_id: int | None, row_labels: bool, alike: bool) -> tuple[str, str]:
    """(the collator it pads as, what its labels are) for the line. alike: no row holds a pad id, so transformers'
    LM collator and one that scores pad-id tokens make the same of every row: named as the one users know."""
    if task == "classification":
        return "transformers' DataCollatorWithPadding", "a class per row"
    if kind == "hf_lm":
        return ("transformers' DataCollatorForLanguageModeling(mlm=False)",
                f"the input_ids, padding and the pad id {pad_id}'s tokens -100")
    if row_labels:
        return "transformers' DataCollatorForSeq2Seq", "each row's own, padding -100"
    if alike:
        return ("transformers' DataCollatorForLanguageModeling(mlm=False)",
                "the input_ids, padding -100 (no row holds the pad id)")
    return "TRL's collator", "the input_ids, padding -100, pad-id tokens scored"
