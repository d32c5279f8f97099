"""A user's train rows as padding-free sequences: what the Trainer's collator would have made of each row (its
tokens without padding, its labels), read from the collator's kind, so that packed batches compute the loss the
script computed. A collator it cannot read, or rows it does not understand, is a reason, never a guess.

The kind comes from the collator's name where it is one of transformers' or TRL's below; a collator of the script's
own (a function calling tokenizer.pad, a small class, a transformers collator not listed) is OWN until
src/levers/collator_probe.py has read what it makes of a few of the rows and named the kind it pads as."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.row_shapes import as_row, attended, indexed, tokens

# Collators whose output is known row by row: labels from the row (or the class), padding added, nothing else.
# HF's language-modeling collator (mlm=False) makes labels from input_ids and sets every pad-id token to -100.
PADDING = ("DataCollatorWithPadding", "DataCollatorForSeq2Seq", "default_data_collator")
LANGUAGE_MODELING = "DataCollatorForLanguageModeling"
PADDING_FREE = ("DataCollatorWithFlattening",)
OWN = "own"  # not known by name: probed before packing (src/levers/collator_probe.py)
PACKS = ("It packs rows for transformers' DataCollatorWithPadding, DataCollatorForSeq2Seq (rows holding their "
         "labels), DataCollatorForLanguageModeling (mlm=False) and default_data_collator, for TRL's, and for a "
         "collator of your own that pads as one of these does on a few of your rows, probed before training")


def collator_name(collator) -> str:
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    return getattr(collator, "__name__", type(collator).__name__)


def collator_kind(collator) -> tuple[str | None, str | None]:
    """(kind, why not): kind is "padding", "hf_lm" (transformers' LM collator: pad ids are not scored), "trl_lm"
    (TRL's: labels from the row, else the ids) or OWN (a collator known by what it does, once probed)."""
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    name = collator_name(collator)
    module = getattr(collator, "__module__", type(collator).__module__) or ""
    if name in PADDING_FREE or getattr(collator, "padding_free", False):
        return None, f"your batches are padding-free already ({name})"
    if name == LANGUAGE_MODELING:
        if getattr(collator, "mlm", False):
            return None, "a masked-language-model collator (mlm=True): an encoder's objective"
        return ("trl_lm" if module.startswith("trl") else "hf_lm"), None
    if name in PADDING:
        return "padding", None
    return OWN, None


def _kept(r: dict) -> list[int] | None:
    """The positions of a row's attended tokens, or None where it has no attention_mask (every token)."""
    mask = r.get("attention_mask")
    return [k for k, m in enumerate(mask) if m] if mask is not None else None


def own_tokens(r: dict) -> list:
    """A row's attended tokens (padded at tokenisation, either side: only those), what packing keeps of it."""
    ids, keep = list(r["input_ids"]), _kept(r)
    return ids if keep is None else [ids[k] for k in keep]


def rebuild(r: dict, task: str, kind: str, pad_id: int | None) -> dict:
    """One row ({field: list or number}, src/data/row_shapes.py) as the collator of `kind` scores it: its attended
    tokens and their labels (a classifier's: the class)."""
    ids, keep = own_tokens(r), _kept(r)
    if task == "classification":
        label = r.get("labels", r.get("label"))
        return {"input_ids": ids, "labels": int(label)}
    if kind == "hf_lm" or "labels" not in r:
        labels = list(ids)
        if kind == "hf_lm" and pad_id is not None:  # transformers' collator: pad-id tokens unscored
            labels = [-100 if t == pad_id else t for t in labels]
    else:
        labels = list(r["labels"])
        labels = [labels[k] for k in keep] if keep is not None else labels
    return {"input_ids": ids, "labels": labels}


CARRIED = ("input_ids", "attention_mask", "labels", "label", "label_ids", "position_ids")  # what a pack is built from


def dropped_inputs(dataset, model_inputs: set[str]) -> str | None:
    """Why not, where a row holds an input the model's forward takes that a pack would not carry (token_type_ids:
    GPT-2 adds an embedding for them even where all are 0, so dropping them changes the loss), else None."""
    first = as_row(dataset[0]) if hasattr(dataset, "__getitem__") and len(dataset) else None
    extra = sorted(k for k in (first or {}) if k in model_inputs and k not in CARRIED)
    if not extra:
        return None
    return (f"your rows hold {', '.join(extra)}, which the model reads and packed rows would not carry: batches "
            "stay as they are")


def scores_padding(dataset, probe: int = 64) -> bool:
    """Whether the first rows hold a label other than -100 where their attention mask is 0: a causal LM padded to
    max_length at tokenisation with its labels copied from the padded ids scores every pad token (a user's script
    did; packed, 27% of its loss tokens went unscored and nothing said so)."""
    for i in range(min(probe, len(dataset))):
        r = as_row(dataset[i]) or {}
        mask, labels = r.get("attention_mask"), r.get("labels")
        if mask is None or not isinstance(labels, (list, tuple)) or len(labels) != len(mask):
            continue
        if any(not m and y != -100 for m, y in zip(mask, labels)):
            return True
    return False


@dataclass
class TrainRows:
    """The dataset's rows as sequences to pack: `row(i)` is {"input_ids", "labels"} as the collator would score
    them, `lengths` every row's real tokens (what packing needs, read once)."""

    dataset: object
    task: str
    kind: str
    pad_id: int | None
    lengths: np.ndarray

    @classmethod
    def read(cls, dataset, collator, task: str, pad_id: int | None) -> tuple["TrainRows | None", str | None]:
        """The rows, or None and why they can't be packed."""
        kind, why = collator_kind(collator)
        if kind is None:
            return None, why
        if not indexed(dataset) or not len(dataset):
            return None, "a dataset without indexed rows (an IterableDataset): nothing to regroup ahead of time"
        first = as_row(dataset[0])
        if first is None or tokens(first) is None:
            own = f", batched by {collator_name(collator)}" if kind == OWN else ""
            # TRL's preference rows are tokenised too (prompt_ids, chosen_ids): what they lack is one sequence a row
            held = f"with {', '.join(list(first)[:4])}" if first else f"of type {type(dataset[0]).__name__}"
            # input_ids there but not one sequence: [1, L] from tokenizer(..., return_tensors="pt") per row
            lacks = " whose input_ids are not one sequence" if first and "input_ids" in first else " and no input_ids"
            return None, f"rows {held}{lacks}{own}: trainsweep packs rows of one input_ids sequence each"
        if task == "classification":
            label = first.get("labels", first.get("label"))
            if not isinstance(label, int) or isinstance(label, bool):
                return None, "labels that aren't one class per row (multi-label, regression or text)"
        elif kind != "hf_lm" and scores_padding(dataset):
            return None, ("your labels score the padding (labels where the attention mask is 0, as `labels = "
                          "input_ids.copy()` after padding makes them): packs hold no padding, so they would train "
                          "without those targets; batches stay as they are")
        rows = cls(dataset, task, kind, pad_id, np.zeros(0, dtype=np.int64))
        rows.lengths = rows._all_lengths()
        return rows, None

    def _all_lengths(self) -> np.ndarray:
        ds = self.dataset
        columns = getattr(ds, "column_names", None)
        if columns is not None and getattr(ds, "format", {}).get("type") is None:
            # a datasets.Dataset in its own format: whole columns at once, no row-by-row Python
            if "attention_mask" in columns:
                return np.array([sum(m) for m in ds["attention_mask"]], dtype=np.int64)
            return np.array([len(x) for x in ds["input_ids"]], dtype=np.int64)
        return np.array([attended(as_row(ds[i])) for i in range(len(ds))], dtype=np.int64)

    def row(self, i: int) -> dict:
        return rebuild(as_row(self.dataset[int(i)]), self.task, self.kind, self.pad_id)

    def __getitem__(self, i: int) -> dict:  # what PackedDataset reads
        return self.row(i)

    def __len__(self) -> int:
        return len(self.lengths)

