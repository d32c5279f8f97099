"""Padding-free batches: whole sequences packed into micro-batches of a constant token count.

A pack is a list of row indices whose lengths sum to at most `batch.tokens`. The collator concatenates
them into one row of exactly `batch.tokens` positions: position_ids restart at 0 for every sequence, and
the unused tail becomes dummy sequences (pad ids, labels -100) so the shape never changes. Sequence
boundaries travel as cumulative lengths (`cu_seq_lens_q/k`, the names transformers' attention kwargs use),
padded to a fixed count with zero-length sequences, so a compiled layer sees the same shapes every step.
How the model reads them (varlen attention, per-sequence pooling) is src/model/packed.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

PACK_STATS = "pack_stats"  # host-side counts the collator knows exactly; popped before the model sees the batch


def first_fit(lengths: np.ndarray, budget: int, seed: int, lookback: int = 64) -> list[list[int]]:
    """Row indices grouped into packs of at most `budget` tokens, in a shuffled order. Each row goes into the
    first of the last `lookback` open packs with room (first fit with a bounded window: linear time, and a
    pack mixes rows from nearby in the shuffled order, so packs stay random)."""
    order = np.random.default_rng(seed).permutation(len(lengths))
    packs: list[list[int]] = []
    room: list[int] = []
    for i in order:
        n = int(lengths[i])
        start = max(0, len(packs) - lookback)
        for j in range(start, len(packs)):
            if room[j] >= n:
                packs[j].append(int(i))
                room[j] -= n
                break
        else:
            packs.append([int(i)])
            room.append(budget - n)
    return packs


class PackedDataset(torch.utils.data.Dataset):
    """The rows of `ds` grouped into packs: item i is the list of rows of pack i (read lazily)."""

    def __init__(self, ds, packs: list[list[int]]):
        self.ds, self.packs = ds, packs

    def __len__(self) -> int:
        return len(self.packs)

    def __getitem__(self, i: int) -> dict:
        return {"pack": [self.ds[int(j)] for j in self.packs[i]]}


def max_sequences(budget: int, shortest: int, max_length: int) -> int:
    """An upper bound on sequences in one pack, dummies included: the fixed length of cu_seq_lens."""
    return budget // max(1, shortest) + budget // max_length + 2


@dataclass
class PackCollator:
    """One padding-free row per micro-batch. A training item is a pack (`{"pack": rows}`) filled to `budget`;
    evaluation and preflight batches of plain rows are packed as they come, padded to a multiple of 64."""

    task: str
    pad_id: int
    max_length: int  # the longest sequence: flash attention's max_seqlen (a constant, so compile never respecialises)
    budget: int | None  # tokens per micro-batch (batch.tokens); None: the rows' own total, rounded up
    slots: int  # fixed number of sequences in cu_seq_lens (zero-length ones fill it up)

    def __call__(self, items: list[dict]) -> dict:
        rows = [r for item in items for r in item.get("pack", [item])]
        seqs = [list(r["input_ids"])[: self.max_length] for r in rows]
        real = sum(map(len, seqs))
        width = self.budget if self.budget and real <= self.budget else -(-real // 64) * 64
        lengths = [len(s) for s in seqs]
        tail = width - real
        while tail > 0:  # dummy sequences, each at most max_length long (flash computes no more than max_seqlen)
            lengths.append(min(tail, self.max_length))
            tail -= lengths[-1]
        if len(lengths) + 1 > self.slots:
            raise ValueError(f"{len(lengths)} sequences in one pack exceed the {self.slots - 1} slots: raise data.length_min")
        ids = torch.full((1, width), self.pad_id, dtype=torch.long)
        ids[0, :real] = torch.as_tensor([t for s in seqs for t in s], dtype=torch.long)
        positions = torch.cat([torch.arange(n) for n in lengths]).unsqueeze(0)
        cu = torch.zeros(self.slots + 1, dtype=torch.int32)
        cu[1:len(lengths) + 1] = torch.as_tensor(np.cumsum(lengths), dtype=torch.int32)
        cu[len(lengths) + 1:] = width  # zero-length sequences: no work, constant shape
        batch = {"input_ids": ids, "position_ids": positions, "cu_seq_lens_q": cu, "cu_seq_lens_k": cu,
                 "max_length_q": self.max_length, "max_length_k": self.max_length}
        if self.task == "classification":
            labels = torch.full((self.slots,), -100, dtype=torch.long)
            labels[: len(rows)] = torch.as_tensor([int(r["labels"]) for r in rows])
            loss_tokens = len(rows)
        else:  # causal LM: a sequence's first token is not predicted from the one before it (another sequence)
            labels = ids.clone()
            if "labels" in rows[0]:  # chat formats: -100 on the prompt already (src/data/formats.py)
                labels[0, :real] = torch.as_tensor([t for r in rows for t in list(r["labels"])[: self.max_length]])
            labels[0, real:] = -100
            labels[0, cu[: len(seqs)].long()] = -100
            loss_tokens = int((labels != -100).sum())
        batch["labels"] = labels
        batch[PACK_STATS] = {"samples": len(rows), "real": real, "loss": loss_tokens}
        return batch
