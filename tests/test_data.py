"""Synthetic data has the seed's shape and a learnable signal; the collator pads as each strategy says."""
import numpy as np
import pytest
import torch

from src.data import collate, prepare, sources, tokenize
from src.model import build as models
from tests.conftest import compose


def _rows(cfg, n=256):
    return sources.synthetic(cfg, models.hf_config(cfg), n, 0)


def test_synthetic_lengths_follow_the_account_tax_shape():
    cfg = compose()
    stats = prepare.length_stats(_rows(cfg, 4096))
    assert abs(stats["mean"] - 211) < 3 and stats["max"] <= 287
    assert min(_rows(cfg, 4096)["length"]) >= 40


def test_synthetic_classification_labels_and_ids_are_in_range():
    cfg = compose()
    ds = _rows(cfg)
    labels = np.array(ds["labels"])
    assert labels.min() >= 0 and labels.max() < cfg.data.labels == 280  # task.num_labels unset: the rows' 280
    ids = np.concatenate([np.array(x) for x in ds["input_ids"]])
    assert ids.min() >= sources.N_SPECIAL and ids.max() < models.hf_config(cfg).vocab_size


def test_synthetic_data_is_deterministic_by_seed():
    cfg = compose()
    conf = models.hf_config(cfg)
    assert sources.synthetic(cfg, conf, 16, 3)["input_ids"] == sources.synthetic(cfg, conf, 16, 3)["input_ids"]
    assert sources.synthetic(cfg, conf, 16, 3)["input_ids"] != sources.synthetic(cfg, conf, 16, 4)["input_ids"]


def test_seq2seq_targets_are_a_prefix_of_the_source():
    cfg = compose("task=seq2seq", "model=tiny-bart")
    row = _rows(cfg, 4)[0]
    assert row["input_ids"][: len(row["labels"])] == row["labels"]


def _collate(*overrides, lengths=(5, 9, 3)):
    cfg = compose(*overrides, "data.max_length=16")
    rows = [{"input_ids": list(range(10, 10 + n)), "length": n} for n in lengths]
    if "task=causal_lm" not in overrides:  # a causal LM row's labels, when it has any, are per token (src/data/formats.py)
        rows = [{**row, "labels": i} for i, row in enumerate(rows)]
    return collate.build_collator(cfg, pad_id=0)(rows)


def test_max_length_gives_one_fixed_shape():
    assert _collate("padding=max_length")["input_ids"].shape == (3, 16)


def test_dynamic_pads_to_the_longest_row_rounded_to_a_multiple():
    batch = _collate("padding=dynamic", "padding.pad_to_multiple_of=4")
    assert batch["input_ids"].shape == (3, 12)
    assert batch["attention_mask"].sum().item() == 5 + 9 + 3
    assert batch["attention_mask"][2].tolist() == [1] * 3 + [0] * 9


def test_left_padding_puts_pads_first():
    batch = _collate("padding=dynamic", "padding.pad_to_multiple_of=null", "padding.side=left")
    assert batch["input_ids"][2].tolist() == [0] * 6 + [10, 11, 12]


def test_causal_lm_labels_ignore_padding():
    batch = _collate("task=causal_lm")
    assert (batch["labels"][batch["attention_mask"] == 0] == -100).all()
    assert torch.equal(batch["labels"][0, :5], batch["input_ids"][0, :5])


@pytest.mark.parametrize("padding", ["dynamic", "max_length", "packed"])
def test_causal_lm_rows_with_their_own_labels_keep_them(padding):
    """Chat-format rows carry -100 on their prompt (src/data/formats.py): padded or packed, the labels stay put."""
    cfg = compose("task=causal_lm", f"padding={padding}", "data.max_length=16")
    rows = [{"input_ids": [5, 6, 7, 8], "labels": [-100, -100, 7, 8], "length": 4},
            {"input_ids": [9, 10, 11], "labels": [-100, 10, 11], "length": 3}]
    batch = collate.build_collator(cfg, pad_id=0)(rows)
    if padding == "packed":  # and each sequence's first position is -100 as ever
        assert batch["labels"][0, :7].tolist() == [-100, -100, 7, 8, -100, 10, 11] and batch["pack_stats"]["loss"] == 4
    else:
        assert batch["labels"][0, :4].tolist() == [-100, -100, 7, 8] and batch["labels"][1, :4].tolist() == [-100, 10, 11, -100]
    assert (batch["labels"] != -100).sum() == 4


def test_packed_batches_are_one_row_with_restarting_positions():
    cfg = compose("task=causal_lm", "padding=packed")
    rows = [{"input_ids": [5, 6, 7], "length": 3}, {"input_ids": [8, 9], "length": 2}]
    batch = collate.build_collator(cfg, pad_id=0)(rows)
    # Without a token budget the row is padded up to a multiple of 64 by one dummy sequence of pad ids.
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8, 9] + [0] * 59]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 0, 1] + list(range(59))]
    # no prediction across a boundary, none on the dummy tail
    assert batch["labels"].tolist() == [[-100, 6, 7, -100, 9] + [-100] * 59]
    # boundaries for attention: the two rows, the dummy, then zero-length slots up to a fixed count
    cu = batch["cu_seq_lens_q"].tolist()
    assert cu[:4] == [0, 3, 5, 64] and set(cu[3:]) == {64} and len(cu) == cfg.batch.size + 3
    assert torch.equal(batch["cu_seq_lens_k"], batch["cu_seq_lens_q"])
    assert batch["max_length_q"] == batch["max_length_k"] == cfg.data.max_length
    assert batch["pack_stats"] == {"samples": 2, "real": 5, "loss": 3}
    assert "attention_mask" not in batch  # padding-free: no mask at all


def test_longest_pads_each_chunk_at_tokenisation_time():
    cfg = compose("padding=longest", "padding.chunk_size=64")
    conf = models.hf_config(cfg)
    ds = tokenize.pad_chunks(_rows(cfg, 128), conf.pad_token_id, 64)
    widths = {len(x) for x in ds.select(range(64))["input_ids"]}
    assert len(widths) == 1  # every row of a chunk has the chunk's longest length
    assert sum(ds[0]["attention_mask"]) == ds[0]["length"]


def test_cue_ids_narrow_each_class_to_its_own_few_ids():
    cfg = compose("data.labels=4", "data.cue_ids=8")
    ds = _rows(cfg, 400)
    ids = [np.array(x) for x in ds["input_ids"]]
    labels = np.array(ds["labels"])
    first = sources.N_SPECIAL + (models.hf_config(cfg).vocab_size - sources.N_SPECIAL) // 2  # clear of Zipf's head
    for c in range(4):
        cue = np.arange(first + 8 * c, first + 8 * c + 8)
        own = np.mean([np.isin(x, cue).mean() for x, y in zip(ids, labels) if y == c])
        others = np.mean([np.isin(x, cue).mean() for x, y in zip(ids, labels) if y != c])
        assert own > 0.4 and others < 0.01  # half of a row's tokens are its class's 8 ids, the rest Zipf text


def test_cue_ids_must_be_positive():
    from src.config.errors import ConfigError
    from src.config.data import DataConfig

    with pytest.raises(ConfigError, match="data.cue_ids"):
        DataConfig.check(compose("data.cue_ids=0"), on_gpu=False)


def test_cue_ids_that_do_not_fit_the_upper_half_of_the_vocabulary_name_the_key():
    from src.config.errors import ConfigError

    cfg = compose("data.cue_ids=8")  # 280 classes x 8 ids on the tiny model's vocabulary: more than half of it
    half = (models.hf_config(cfg).vocab_size - sources.N_SPECIAL) // 2
    assert 280 * 8 > half
    with pytest.raises(ConfigError, match=r"data.cue_ids.*at most 1 here"):
        _rows(cfg, 8)
