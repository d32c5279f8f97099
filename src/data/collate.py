"""Rows into batches: padded to a width (the longest row, a multiple, or data.max_length), or packed without
padding (src/data/packing.py); and a batch moved to the device as the model takes it."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .packing import PACK_STATS, PackCollator, max_sequences


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
        budget = cfg.batch.tokens
        shortest = shortest or max(1, d.length_min if d.source == "synthetic" else 1)
        slots = max(max_sequences(budget, shortest, d.max_length) if budget else 0, cfg.batch.size + 2)
        return PackCollator(task=cfg.task.name, pad_id=pad_id, max_length=d.max_length, budget=budget, slots=slots)
    return PadCollator(task=cfg.task.name, pad_id=pad_id, max_length=cfg.data.max_length,
                       fixed=p.strategy == "max_length", multiple=p.pad_to_multiple_of, side=p.side,
                       max_target_length=cfg.data.max_target_length, decoder_start_id=decoder_start_id)


def to_device(batch: dict, device) -> dict:
    """A collated batch on the device, as the model takes it (without the collator's host-side counts)."""
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items() if k != PACK_STATS}


def collator_for(cfg, conf, lengths: dict | None = None):
    """The collator for this model's special tokens (and, padding-free, the data's shortest row)."""
    return build_collator(cfg, conf.pad_token_id, getattr(conf, "decoder_start_token_id", None),
                          (lengths or {}).get("min"))
