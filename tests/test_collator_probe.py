"""speedup on a collator of the script's own (src/levers/collator_probe.py): one that pads as transformers' do is
packed by what it does, not its name, and the verification's losses on the same rows agree; one that draws,
truncates, shifts its labels, adds a key or raises is refused with the check it failed, and the script trains as
written. Before the probe every one of these was refused as "a collator trainsweep cannot read"."""
import numpy as np
import pytest
import torch
from datasets import Dataset
from transformers import DataCollatorForTokenClassification, DataCollatorWithPadding

from src import speedup
from src.levers import collator_probe
from tests.test_speedup import LENGTHS, Tok, _causal_lm, _losses, _rows, _trainer, _verified


def _lever(done, name="padding-free batches"):
    return next(lv for lv in done.levers if lv.name == name)


def collate(features):
    """A script's own function: tokenizer.pad on the tokens, the class stacked as labels."""
    batch = Tok().pad([{k: f[k] for k in ("input_ids", "attention_mask")} for f in features])
    batch["labels"] = torch.tensor([f["label"] for f in features])
    return batch


def _pad(rows, value):
    n = max(len(r) for r in rows)
    return torch.tensor([list(r) + [value] * (n - len(r)) for r in rows])


class LabelsFromIds:
    """A causal LM's collator of the script's own: labels are the input_ids, padding and pad-id tokens -100 (as
    transformers' DataCollatorForLanguageModeling(mlm=False) makes them)."""

    def __call__(self, features):
        ids = _pad([f["input_ids"] for f in features], 0)
        labels = ids.clone()
        labels[labels == 0] = -100
        return {"input_ids": ids, "attention_mask": _pad([f["attention_mask"] for f in features], 0), "labels": labels}


class RowLabels:
    """Pads the rows' own labels with -100, as DataCollatorForSeq2Seq does."""

    def __call__(self, features):
        return {"input_ids": _pad([f["input_ids"] for f in features], 0),
                "attention_mask": _pad([f["attention_mask"] for f in features], 0),
                "labels": _pad([f["labels"] for f in features], -100)}


def pad_sequence_collate(features):
    """The PyTorch pattern: pad_sequence, the mask made from input_ids != pad, labels the ids padded with -100."""
    from torch.nn.utils.rnn import pad_sequence

    ids = [torch.tensor(f["input_ids"]) for f in features]
    input_ids = pad_sequence(ids, batch_first=True, padding_value=0)
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(),
            "labels": pad_sequence(ids, batch_first=True, padding_value=-100)}


def _lm_rows(labels: bool, eos_is_pad: bool = False) -> Dataset:
    data = _rows(label=False)
    ids = data["input_ids"]
    if eos_is_pad:  # every third row ends in eos = pad (0): the rows that tell the two LM collators apart
        ids = [r[:-1] + [0] if i % 3 == 0 else r for i, r in enumerate(ids)]
    cols = {"input_ids": ids, "attention_mask": data["attention_mask"]}
    if labels:  # a prompt of 3 tokens unscored, as chat formats have
        cols["labels"] = [[-100] * 3 + r[3:] for r in ids]
    return Dataset.from_dict(cols)


def test_a_function_collator_padding_as_transformers_does_is_packed_with_the_same_loss(tmp_path):
    trainer = _trainer(tmp_path, collator=collate)
    done = _verified(trainer, plain=3.0, packed=1.0)
    lever = _lever(done)
    assert lever.on, done.text()
    assert lever.detail.startswith("your collator (collate) pads as transformers' DataCollatorWithPadding does on 3 "
                                   "probed batches"), lever.detail
    assert "labels a class per row" in lever.detail
    loss = done.verified["loss"]
    assert loss["levers"] == pytest.approx(loss["your batches"], rel=1e-5)  # same rows, same weights
    assert len(_losses(trainer)) == 6


@pytest.mark.parametrize("collator, data, known", [
    (LabelsFromIds(), _lm_rows(labels=False, eos_is_pad=True), "DataCollatorForLanguageModeling(mlm=False)"),
    (RowLabels(), _lm_rows(labels=True, eos_is_pad=True), "DataCollatorForSeq2Seq"),
    (DataCollatorForTokenClassification(Tok()), _lm_rows(labels=True), "DataCollatorForSeq2Seq"),
    (pad_sequence_collate, _lm_rows(labels=False), "DataCollatorForLanguageModeling(mlm=False)"),
], ids=["labels_from_ids", "row_labels", "token_classification_collator", "pad_sequence"])
def test_a_causal_lms_own_collator_is_packed_as_the_kind_it_pads_as(collator, data, known, tmp_path):
    """Rows ending in eos = pad are probed too: a collator that unscores them is packed as transformers' LM
    collator (those tokens unscored), one that scores them as DataCollatorForSeq2Seq; either way the loss on the
    same rows is the script's. transformers' token-classification collator pads labels as DataCollatorForSeq2Seq;
    a pad_sequence collator masking by input_ids != pad is packed where no row holds the pad id."""
    trainer = _trainer(tmp_path, model=_causal_lm(), data=data, collator=collator)
    done = _verified(trainer, plain=2.0, packed=1.0)
    lever = _lever(done)
    assert lever.on and f"pads as transformers' {known} does" in lever.detail, done.text()
    loss = done.verified["loss"]
    assert loss["levers"] == pytest.approx(loss["your batches"], rel=1e-5)


def test_a_row_holding_the_pad_id_decides_which_lm_collator_it_is():
    """One row, outside the dozen spread over the lengths, ends in eos = pad: it is found and probed, and it alone
    tells a collator that unscores pad-id tokens (packed as transformers' LM collator) from one that scores them
    (its rows' labels, as DataCollatorForSeq2Seq)."""
    from src.levers.rows import TrainRows

    class Trainer:  # what the probe reads of a Trainer: its collator (the rows reach it as they are)
        def __init__(self, collator):
            self.data_collator = collator

    data = _lm_rows(labels=False)
    probed = {i for g in collator_probe._groups(np.array(LENGTHS)) for i in g}
    marked = next(i for i in range(len(data)) if i not in probed)
    ids = [r[:-1] + [0] if i == marked else r for i, r in enumerate(data["input_ids"])]
    data = Dataset.from_dict({"input_ids": ids, "attention_mask": data["attention_mask"]})
    for collator, kind in ((LabelsFromIds(), "hf_lm"), (RowLabels(), "padding")):
        if kind == "padding":  # the rows' own labels, the pad-id token scored
            data = data.add_column("labels", data["input_ids"])
        rows, _ = TrainRows.read(data, collator, "causal_lm", pad_id=0)
        reading, why = collator_probe.probe(Trainer(collator), rows)
        assert why is None and reading.kind == kind, why
        assert "4 probed batches" in reading.line  # 3 spread over the lengths, 1 holding the pad id


class RandomMasking:
    """Pads as DataCollatorWithPadding, then hides 15% of the tokens from attention (an augmentation)."""

    def __call__(self, features):
        batch = DataCollatorWithPadding(Tok())(features)
        batch["attention_mask"] = batch["attention_mask"] * (torch.rand(batch["attention_mask"].shape) > 0.15)
        return batch


class Truncating:
    """Pads as DataCollatorWithPadding, every row cut to 32 tokens."""

    def __call__(self, features):
        return DataCollatorWithPadding(Tok())([{**f, "input_ids": f["input_ids"][:32],
                                                "attention_mask": f["attention_mask"][:32]} for f in features])


class Shifted:
    """A causal LM's labels shifted by the collator, as if the model did not shift them itself."""

    def __call__(self, features):
        batch = LabelsFromIds()(features)
        labels = torch.full_like(batch["labels"], -100)
        labels[:, :-1] = batch["labels"][:, 1:]
        batch["labels"] = labels
        return batch


class TokenTypes:
    """Pads as DataCollatorWithPadding and adds token_type_ids of 0."""

    def __call__(self, features):
        batch = DataCollatorWithPadding(Tok())(features)
        batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
        return batch


@pytest.mark.parametrize("collator, lm_rows, why", [
    (RandomMasking(), None, "(RandomMasking) made two different batches of the same rows (it draws"),
    (Truncating(), None, "(Truncating) cuts train row"),
    (Shifted(), {}, "(Shifted) shifts train row"),
    (TokenTypes(), None, "(TokenTypes) puts token_type_ids in its batches"),
    (pad_sequence_collate, {"eos_is_pad": True}, "'s own tokens that hold the id it pads with (0) an attention_mask "
                                                 "of 0, where packed rows attend them"),
], ids=["random_masking", "truncating", "shifted_labels", "extra_key", "masks_its_own_eos"])
def test_a_collator_that_does_not_pad_as_transformers_does_is_refused_with_the_check_it_failed(collator, lm_rows, why,
                                                                                                 tmp_path):
    def make(out):
        torch.manual_seed(0)
        if lm_rows is not None:  # a causal LM's rows (eos = pad: every third ends in the pad id)
            return _trainer(out, model=_causal_lm(), data=_lm_rows(labels=False, **lm_rows), collator=collator)
        return _trainer(out, collator=collator)

    trainer = make(tmp_path / "sped")
    done = speedup(trainer, quiet=True)
    lever = _lever(done)
    assert not any(lv.on for lv in done.levers)
    assert why in lever.detail and "your batches stay as it makes them" in lever.detail, lever.detail
    assert "a collator of your own that pads as one of these does" in lever.detail
    if isinstance(collator, RandomMasking):  # the probe's draws are given back: training draws what it would have
        assert _losses(trainer) == _losses(make(tmp_path / "plain"))


class BatchOfEight:
    """A script's own assertion: it only ever sees its per_device_train_batch_size of 8."""

    def __call__(self, features):
        if len(features) != 8:
            raise ValueError(f"expected a batch of 8 rows, got {len(features)}")
        return DataCollatorWithPadding(Tok())(features)


def test_a_collator_that_raises_on_the_probed_rows_is_refused_and_the_script_trains_as_written(tmp_path):
    trainer = _trainer(tmp_path / "sped", collator=BatchOfEight())
    done = speedup(trainer, quiet=True)
    lever = _lever(done)
    assert not any(lv.on for lv in done.levers)
    assert lever.detail.startswith("your collator (BatchOfEight) raised ValueError (expected a batch of 8 rows, got 4)")
    assert _losses(trainer) == _losses(_trainer(tmp_path / "plain", collator=BatchOfEight()))


def test_a_fault_inside_the_probe_itself_leaves_the_script_as_written(tmp_path, monkeypatch):
    """Not the collator failing: the probe's own code (speedup's guard, not the probe's refusal, catches it)."""
    def boom(*a, **k):
        raise RuntimeError("injected")

    monkeypatch.setattr(collator_probe, "_read", boom)
    trainer = _trainer(tmp_path / "sped", collator=collate)
    done = speedup(trainer, quiet=True)
    assert not any(lv.on for lv in done.levers) and "injected" in done.text()
    assert _losses(trainer) == _losses(_trainer(tmp_path / "plain", collator=collate))


def test_the_probed_rows_are_spread_over_the_lengths_and_the_same_every_run():
    lengths = np.array(LENGTHS)
    groups = collator_probe._groups(lengths)
    assert groups == collator_probe._groups(lengths) and len(groups) == 3
    assert groups[0][0] == int(np.argmin(lengths)) and lengths[groups[-1][-1]] == lengths.max()
    assert all(len({int(lengths[i]) for i in g}) > 1 for g in groups)  # every probed batch is padded
