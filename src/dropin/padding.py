"""How a user's batches are padded, as the report's batch line says it: read from the first rows, the collator and
TrainingArguments (`padding_of`).

Batches without input_ids have no tokens to pad. Images reach the model at one size (the image processor resizes
them, the collator stacks them): nothing is padded. Audio is padded in samples (input_values) or feature frames
(input_features) by the feature extractor's collator; the report's padding share counts tokens, so it says what
the padding is and leaves its share unjudged rather than call it token padding (a newcomer read "padding
dynamic" on a ViT). A row may be several sequences (`sequences_per_row`: a preference pair, a multiple-choice row).
"""
from __future__ import annotations

from collections.abc import Mapping

from ..data.row_shapes import tokens

UNTOKENISED = {"pixel_values": "image", "input_values": "audio samples", "input_features": "feature frames"}
READ_ROWS = 8  # rows of a dataset without input_ids read to tell one length from several


def padding_of(rows, args, collator, untokenised: dict | None = None) -> dict:
    """How the batches are padded: rows that carry padding were padded at tokenisation (all to one width:
    max_length; else longest), otherwise the collator pads each batch (grouped with length-grouped sampling).
    `untokenised` (untokenised_of's) speaks for batches without input_ids; `note` is said beside the strategy."""
    collator = getattr(collator, "data_collator", collator)  # the Trainer's column-removing wrapper
    multiple = getattr(collator, "pad_to_multiple_of", None)
    flattening = type(collator).__name__ == "DataCollatorWithFlattening" or getattr(collator, "padding_free", False)
    grouped = getattr(args, "group_by_length", False) or \
        getattr(args, "train_sampling_strategy", None) == "group_by_length"
    note, width = None, _collator_width(collator)  # DataCollatorWithPadding(padding="max_length", max_length=64)
    if (rows and rows.packed) or flattening:  # padding-free: sequences side by side, no pad between them
        strategy = "packed"
    elif rows and rows.padded:
        strategy = "max_length" if len({len(tokens(r)) for r in rows.rows}) == 1 else "longest"
    elif rows and width:
        strategy, note = "max_length", f"by the collator, to {width}"
    elif not rows and untokenised:
        strategy, note = _untokenised(untokenised, grouped)
    elif not rows and getattr(collator, "tokenizer", None) is None:  # not read, and no collator of transformers' pads
        # default_collate's lists of tensors, text rows a trainer's own collator tokenises (sentence-transformers')
        strategy, note = "unknown", "no rows of input_ids to read"
    else:
        strategy = "grouped" if grouped else "dynamic"
        widths = {len(tokens(r)) for r in rows.rows} if rows else set()
        if len(widths) == 1:  # run_clm's blocks: the collator pads nothing
            note = f"every row read is {next(iter(widths))} tokens: nothing to pad"
    return {"strategy": strategy, "pad_to_multiple_of": multiple, "chunk_size": 1000,
            **({"note": note} if note else {}), **({"width": width} if note and width else {})}


def _collator_width(collator) -> int | None:
    """The width a collator pads every batch to (transformers' padding collators with padding="max_length": their
    max_length, else the tokenizer's limit), or None: it pads each batch to its longest row."""
    padding = getattr(collator, "padding", None)
    if str(getattr(padding, "value", padding)) != "max_length":
        return None
    width = getattr(collator, "max_length", None) or getattr(getattr(collator, "tokenizer", None), "model_max_length", None)
    return width if isinstance(width, int) and 0 < width < 10**6 else None


def _untokenised(seen: dict, grouped: bool) -> tuple[str, str]:
    key, shapes = seen["input"], seen["shapes"]
    if key == "pixel_values":
        if seen["mask"]:
            return "not judged", "pixel_values with a pixel_mask: images padded to one size; that padding not judged"
        if len(shapes) > 1:
            return "not judged", "pixel_values of several sizes, made one by the collator; not judged"
        return "none", "pixel_values, fixed-size"
    unit = UNTOKENISED[key]
    if len(shapes) > 1:  # rows of several lengths: the collator pads each batch to its longest
        return ("grouped" if grouped else "dynamic"), f"of {unit} in {key}, not tokens; its share not judged"
    shape = next(iter(shapes))
    # one length: cropped or padded when the rows were made (Whisper's 30 s of frames), or clips of one length
    return "not judged", (f"{key}: the first {seen['rows']} rows all {shape[-1] if shape else '?'} {unit} long; "
                          "padding in them, if any, was done before the collator")


def untokenised_of(dataset, collator, n: int = READ_ROWS) -> dict | None:
    """{"input": pixel_values | input_values | input_features, "shapes": the rows' shapes of it, "mask": a
    pixel_mask beside it, "rows": how many were read} from the first rows (as the script's collator batches them
    where they aren't records of one), or None: rows with input_ids, or none to read. The caller keeps the random
    stream (a transform may draw on it)."""
    try:
        items = [dataset[i] for i in range(min(n, len(dataset)))]
    except Exception:  # no indexed rows (an IterableDataset)
        return None
    rows = [{k: _shape(v) for k, v in x.items()} if isinstance(x, Mapping) else None for x in items]
    if not rows or not all(r is not None and any(k in r for k in UNTOKENISED) for r in rows):
        rows = [_alone(collator, x) for x in items] if collator is not None else []
    if not rows or any(r is None for r in rows) or "input_ids" in rows[0]:
        return None
    key = next((k for k in UNTOKENISED if k in rows[0]), None)
    if key is None:
        return None
    return {"input": key, "shapes": {r.get(key) for r in rows}, "mask": "pixel_mask" in rows[0], "rows": len(rows)}


def _alone(collator, item) -> dict | None:
    """The shapes of one row as the collator batches it, the batch dimension taken off."""
    try:
        batch = collator([item])
    except Exception:
        return None
    return {k: _shape(v)[1:] for k, v in batch.items()} if isinstance(batch, Mapping) else None


def _shape(value) -> tuple:
    if hasattr(value, "shape"):
        return tuple(value.shape)
    if isinstance(value, (list, tuple)):  # a row of numbers (a waveform), or nested lists of them
        return (len(value),) + (_shape(value[0]) if value and isinstance(value[0], (list, tuple)) else ())
    return ()


def sequences_per_row(dataset, collator) -> int:
    """How many sequences the script's collator makes of one row: 2 for TRL's preference collators (DPO, reward
    modelling), which stack each row's chosen and rejected sequences along the batch; a multiple-choice row's
    choices ([rows, choices, length]); else 1. The Trainer's batch size counts rows, so the report's samples do
    too; TRL's older layout (ORPO, CPO: chosen_input_ids and rejected_input_ids) is 2. Reads one row; a collator
    that fails on it is taken at 1."""
    try:
        batch = collator([dataset[0]])
        if "input_ids" not in batch and "chosen_input_ids" in batch and "rejected_input_ids" in batch:
            return 2
        ids = batch["input_ids"]
        return int(ids.shape[0] if ids.dim() == 2 else ids.shape[1] if ids.dim() == 3 else 1) or 1
    except Exception:
        return 1
