"""A user's train row in whatever shape their Trainer accepts, read as one shape: a dict of plain Python values.

Trainer scripts hand rows over as dicts of lists (datasets.map), Mappings such as the tokenizer's BatchEncoding,
dicts of torch tensors (a torch Dataset, `set_format("torch")`), of numpy arrays (`set_format("numpy")`), or objects
whose attributes are the fields (transformers' default_data_collator reads those through vars()). The drop-in's
checks and speedup's packing read every one of them through `as_row`; a row it cannot read is None, never a guess.
"""
from __future__ import annotations

from collections.abc import Mapping


def plain(value):
    """A tensor, numpy array or numpy scalar as Python lists and numbers (a 0-d tensor becomes its number)."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def as_row(item) -> dict | None:
    """The row as {field: list or number}, or None where it is not a record of fields (a tuple of tensors, a
    string): a collator of the user's own may still read it, so only that collator's output can say more."""
    if isinstance(item, Mapping):
        fields = dict(item.items())
    elif hasattr(item, "__dict__") and not isinstance(item, type) and vars(item):
        fields = {k: v for k, v in vars(item).items() if not k.startswith("_")}  # default_data_collator's vars(f)
    else:
        return None
    return {k: plain(v) for k, v in fields.items()}


def tokens(row: dict) -> list | None:
    """The row's input_ids as one flat list, or None (no input_ids, or ids batched as [[...]])."""
    ids = row.get("input_ids")
    if not isinstance(ids, list) or (ids and isinstance(ids[0], list)):
        return None
    return ids


def attended(row: dict) -> int:
    """Tokens the model attends in this row: its attention mask's ones, else every input id."""
    mask = row.get("attention_mask")
    if isinstance(mask, list) and mask and not isinstance(mask[0], list):
        return int(sum(1 for m in mask if m))
    return len(row.get("input_ids") or [])


def indexed(dataset) -> bool:
    """Rows read by index, as a map-style dataset gives them: not an IterableDataset, whose first rows reading ahead
    would take from training."""
    return hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")
