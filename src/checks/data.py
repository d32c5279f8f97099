"""Checks of the tokenizer and the rows: pad/eos, padding side, lengths against data.max_length, and how much
of each batch would be padding under each strategy."""
from __future__ import annotations

import math

import numpy as np

from ..config.data import PACKED_TASKS
from ..data.row_shapes import as_row
from .results import result


# -- tokenizer ----------------------------------------------------------------------------------------
def tokenizer_checks(tokenizer, conf, train_ds, task: str, layout: str | None = None) -> list[dict]:
    """layout "blocks": a causal LM on fixed-length blocks of concatenated text, which nothing pads."""
    if tokenizer is None:
        return []
    out = []
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    pads = layout != "blocks"
    if pad is not None or pads:
        out.append(result("tokenizer.pad_token", "pass" if pad is not None else "fail", tokenizer.pad_token, "a pad token",
                          "" if pad is not None else "set tokenizer.pad_token to a token the texts never contain"))
    else:
        out.append(result("tokenizer.pad_token", "pass", None, "a pad token where batches are padded",
                          "no pad token, and none needed: every row is a block of one length"))
    out.append(_pad_is_eos(tokenizer, train_ds, task, pad, eos))
    vocab, rows = len(tokenizer), conf.vocab_size
    out.append(result("tokenizer.vocab_vs_embeddings", "pass" if vocab <= rows else "fail", f"{vocab} tokens, {rows} embedding rows",
                      "tokens <= embedding rows", "" if vocab <= rows else "ids past the embedding table: model.resize_token_embeddings(len(tokenizer))"))
    # eos ends what a model generates: a classifier (a BERT-style encoder has [SEP] and no eos) needs pad alone,
    # and rows that are never padded need no pad
    needed = ("eos_token",) if task in ("causal_lm", "seq2seq") else ()
    needed += ("pad_token",) if pads else ()
    missing = [name for name in needed if getattr(tokenizer, name) is None]
    out.append(result("tokenizer.special_tokens", "warn" if missing else "pass",
                      {n: getattr(tokenizer, n) for n in ("bos_token", "eos_token", "pad_token", "unk_token")},
                      " and ".join(n.split("_")[0] for n in needed) + " defined" if needed else "none needed",
                      f"missing: {', '.join(missing)}" if missing else ""))
    side = tokenizer.padding_side
    ok = side == "right" or task != "causal_lm" or not pads
    out.append(result("tokenizer.padding_side", "pass" if ok else "warn", side, "right for training",
                      "" if ok else "left padding is for generation; training a causal LM with it shifts positions"))
    return out


def _pad_is_eos(tokenizer, train_ds, task: str, pad, eos) -> dict:
    """pad == eos is harmless until eos is in the rows: a classifier then pools the token before a trailing eos
    (it looks for the last token that is not pad), and an LM collator that unscores pad ids never learns to stop."""
    if pad is None or pad != eos:
        return result("tokenizer.pad_is_eos", "pass", f"pad {pad}, eos {eos}", "pad != eos")
    head = train_ds.select(range(min(len(train_ds), 2000)))
    ids = head["input_ids"]
    try:  # rows padded when tokenised: a pad position is not an eos of the text, whatever its id
        masks = head["attention_mask"]
        ids = [[t for t, m in zip(row, mask) if m] if len(mask) == len(row) else row for row, mask in zip(ids, masks)]
    except (KeyError, ValueError, TypeError):
        pass
    ending = sum(1 for row in ids if row and row[-1] == eos)
    inside = sum(1 for row in ids if eos in row[:-1])
    value = f"pad == eos ({tokenizer.eos_token}); eos ends {ending} and occurs inside {inside} of {len(ids)} rows"
    if not ending and not inside:
        return result("tokenizer.pad_is_eos", "pass", value, "pad != eos, or no eos in the rows",
                      "no row holds eos, so no pad position can be mistaken for it")
    if task in ("classification", "regression", "multi_label"):
        return result("tokenizer.pad_is_eos", "fail" if ending else "warn", value, "pad != eos",
                      "sequence classification pools the last token that is not pad_token_id: a trailing eos is "
                      "skipped. Add a dedicated pad token (tokenizer.add_special_tokens) and resize the embeddings")
    first = as_row(train_ds[0]) or {}
    if task == "causal_lm" and isinstance(first.get("labels"), list):  # token labels of the row's own
        return result("tokenizer.pad_is_eos", "pass", value, "pad != eos, or labels that keep eos scored",
                      "each row's labels are set by position (its own, or its collator's), not by the pad id, so "
                      "every eos in a row stays scored whatever the padding")
    return result("tokenizer.pad_is_eos", "warn", value, "pad != eos",
                  "a collator that unscores pad ids (DataCollatorForLanguageModeling) unscores every eos too: the "
                  "model never learns to stop. Add a dedicated pad token and resize the embeddings")


# -- data -------------------------------------------------------------------------------------------
def pad_fraction(lengths: np.ndarray, strategy: str, batch: int, max_length: int, multiple: int | None,
                 chunk: int = 1000, seed: int = 0, tokens: int | None = None) -> float:
    """The share of computed positions that are padding, from the lengths alone (no training)."""
    if strategy == "packed":  # only the unfilled tail of each pack (a token budget) or of each row (multiple of 64)
        if tokens:
            from ..data.packing import first_fit

            return float(1 - lengths.sum() / (len(first_fit(lengths, tokens, seed)) * tokens))
        rows = np.array_split(lengths, max(1, math.ceil(len(lengths) / batch)))
        return float(1 - lengths.sum() / sum(math.ceil(r.sum() / 64) * 64 for r in rows))
    rng = np.random.default_rng(seed)
    if strategy == "max_length":
        widths = np.full(len(lengths), max_length)
    elif strategy == "longest":  # every chunk of rows padded to its longest at tokenisation time
        widths = np.concatenate([np.full(len(c), c.max()) for c in np.array_split(lengths, max(1, math.ceil(len(lengths) / chunk)))])
    else:
        order = rng.permutation(len(lengths))
        if strategy == "grouped":  # like LengthGroupedSampler: sort within mega-batches of 50 batches
            mega = 50 * batch
            order = np.concatenate([o[np.argsort(-lengths[o])] for o in np.array_split(order, max(1, math.ceil(len(order) / mega)))])
        shuffled = lengths[order]
        widths = np.concatenate([np.full(len(b), b.max()) for b in np.array_split(shuffled, max(1, math.ceil(len(shuffled) / batch)))])
    if multiple and strategy != "max_length":
        widths = np.ceil(widths / multiple) * multiple
    return float(1 - lengths.sum() / widths.sum())


def data_checks(cfg, train_ds) -> list[dict]:
    out = []
    lengths = np.asarray(train_ds["length"], dtype=np.int64)
    d, task = cfg.data, cfg.task.name
    if task in ("classification", "token_classification"):
        labels = train_ds["labels"]
        if task == "token_classification":  # a label per token; -100 marks the positions no loss scores
            labels = [t for row in labels for t in row if t != -100] or [0]
        labels = np.asarray(labels)
        # the head's width: set, or the data's classes (src.run sets it from the rows before the checks run)
        k = cfg.task.num_labels or (cfg.data.labels if cfg.data.source == "synthetic" else int(labels.max()) + 1)
        bad = int(((labels < 0) | (labels >= k)).sum())
        out.append(result("data.labels_in_range", "fail" if bad else "pass",
                          f"{bad} of {len(labels)} labels outside [0, {k}); min {labels.min()}, max {labels.max()}",
                          f"all in [0, {k})", "set task.num_labels to the number of classes" if bad else ""))
    if d.get("layout") == "blocks":  # text concatenated and cut into blocks: every row is full, none truncated
        out.append(result("data.truncation", "pass", {"block": d.max_length, "rows": len(lengths)},
                          "<= 5% of rows at data.max_length", f"blocks of {d.max_length} tokens: no row was cut short"))
        return out
    truncated = float((lengths >= d.max_length).mean())
    out.append(result("data.truncation", "warn" if truncated > 0.05 else "pass",
                      {"rows_at_max_length": round(truncated, 4), "mean": round(float(lengths.mean()), 1),
                       "p90": round(float(np.percentile(lengths, 90)), 1), "max": int(lengths.max())},
                      f"<= 5% of rows at data.max_length ({d.max_length})",
                      f"raise data.max_length (now {d.max_length}): the ends of these rows are cut" if truncated > 0.05 else ""))
    p = cfg.padding
    packable = task in PACKED_TASKS and d.get("packable", True)  # the drop-in's encoders: rows would attend to each other
    strategies = ["max_length", "longest", "dynamic", "grouped"] + (["packed"] if packable else [])
    waste = {s: pad_fraction(lengths, s, cfg.batch.size, d.max_length, p.pad_to_multiple_of, p.chunk_size,
                             tokens=cfg.batch.tokens) for s in strategies}
    chosen, best = waste[p.strategy], min(waste.values())
    best_name = min(waste, key=waste.get)
    worse = chosen - best > 0.10
    out.append(result("data.padding_waste", "warn" if worse else "pass",
                      {"chosen": p.strategy, **{k: round(v, 3) for k, v in waste.items()}},
                      f"within 10 points of the least ({best_name}: {best:.1%})",
                      f"padding={p.strategy} pads about {chosen:.0%} of the positions (estimated on the train rows, "
                      f"shuffled; the throughput line's pad share is the timed steps' own); padding={best_name} "
                      f"{best:.0%}. Fewer pad tokens is not always faster: a host-bound step can gain more from fixed "
                      "shapes" if worse else ""))
    return out


