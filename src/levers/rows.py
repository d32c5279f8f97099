"""A user's train rows as padding-free sequences: what the Trainer's collator would have made of each row (its
tokens without padding, its labels), read from the collator's kind, so that packed batches compute the loss the
script computed. A collator it cannot read, or rows it does not understand, is a reason, never a guess."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.row_shapes import as_row, attended, tokens

# Collators whose output is known row by row: labels from the row (or the class), padding added, nothing else.
# HF's language-modeling collator (mlm=False) makes labels from input_ids and sets every pad-id token to -100.
PADDING = ("DataCollatorWithPadding", "DataCollatorForSeq2Seq", "default_data_collator")
LANGUAGE_MODELING = "DataCollatorForLanguageModeling"
PADDING_FREE = ("DataCollatorWithFlattening",)


def collator_kind(collator) -> tuple[str | None, str | None]:
    """(kind, why not): kind is "padding", "hf_lm" (transformers' LM collator: pad ids are not scored) or
    "trl_lm" (TRL's: labels from the row, else the ids)."""
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    name = getattr(collator, "__name__", type(collator).__name__)
    module = getattr(collator, "__module__", type(collator).__module__) or ""
    if name in PADDING_FREE or getattr(collator, "padding_free", False):
        return None, f"your batches are padding-free already ({name})"
    if name == LANGUAGE_MODELING:
        if getattr(collator, "mlm", False):
            return None, "a masked-language-model collator (mlm=True): an encoder's objective"
        return ("trl_lm" if module.startswith("trl") else "hf_lm"), None
    if name in PADDING:
        return "padding", None
    # a next step: the collators whose batches it can rebuild row by row (a script's own one pads as one of them
    # does, often, once its rows hold their labels)
    return None, (f"a collator trainsweep cannot read ({name}): your batches stay as it makes them. It packs rows "
                  "for transformers' DataCollatorWithPadding, DataCollatorForSeq2Seq (rows holding their labels), "
                  "DataCollatorForLanguageModeling (mlm=False) and default_data_collator, and for TRL's")


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
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")) or not len(dataset):
            return None, "a dataset without indexed rows (an IterableDataset): nothing to regroup ahead of time"
        first = as_row(dataset[0])
        if first is None or tokens(first) is None:
            return None, f"rows of type {type(dataset[0]).__name__} without input_ids: tokenised rows are what trainsweep packs"
        if task == "classification":
            label = first.get("labels", first.get("label"))
            if not isinstance(label, int) or isinstance(label, bool):
                return None, "labels that aren't one class per row (multi-label, regression or text)"
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
        r = as_row(self.dataset[int(i)])
        ids = list(r["input_ids"])
        mask = r.get("attention_mask")
        keep = [k for k, m in enumerate(mask) if m] if mask is not None else None
        if keep is not None:  # padded at tokenisation (either side): only the attended tokens
            ids = [ids[k] for k in keep]
        if self.task == "classification":
            label = r.get("labels", r.get("label"))
            return {"input_ids": ids, "labels": int(label)}
        if self.kind == "hf_lm" or "labels" not in r:
            labels = list(ids)
            if self.kind == "hf_lm" and self.pad_id is not None:  # transformers' collator: pad-id tokens unscored
                labels = [-100 if t == self.pad_id else t for t in labels]
        else:
            labels = list(r["labels"])
            labels = [labels[k] for k in keep] if keep is not None else labels
        return {"input_ids": ids, "labels": labels}

    def __getitem__(self, i: int) -> dict:  # what PackedDataset reads
        return self.row(i)

    def __len__(self) -> int:
        return len(self.lengths)

