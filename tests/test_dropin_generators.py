"""Augmentation that draws from a generator of the script's own, wherever it lives: a module's `rng =
np.random.default_rng(0)`, a `random.Random`, a torch.Generator, one held a level down (`dataset.aug.rng`), one in a
transform's closure. attach reads rows ahead and runs its checks before step 1; every one of these generators must
be where it was when training starts, so the logged losses are the plain run's, bit for bit (a helper's script:
step 1 read 1.69178 plain and 1.63211 measured)."""
import random

import numpy as np
import pytest
import torch
from transformers import DataCollatorWithPadding, Qwen3ForSequenceClassification, Trainer, set_seed

from src import attach
from src.base.rng import anywhere, rng_kept
from tests.test_dropin_defects import _args, _classified, _config, _tokenizer, _train


def _fresh(kind: str):
    return {"numpy": lambda: np.random.default_rng(1234), "python": lambda: random.Random(1234),
            "torch": lambda: torch.Generator().manual_seed(1234)}[kind]()


def _keep(kind: str, rng, n: int) -> list[bool]:
    if kind == "numpy":
        return list(rng.random(n) > 0.3)
    if kind == "torch":
        return (torch.rand(n, generator=rng) > 0.3).tolist()
    return [rng.random() > 0.3 for _ in range(n)]


def _dropped(ids, kind, rng):
    kept = [t for t, k in zip(ids, _keep(kind, rng, len(ids))) if k]
    return kept or ids[:1]


class TokenDropout(torch.utils.data.Dataset):
    """Drops ~30% of each row's tokens, drawing from a generator the dataset does not hold (module level), or holds
    a level down (`self.aug.rng`)."""

    def __init__(self, rows, kind, nested):
        self.rows, self.kind = rows, kind
        self.aug = type("Aug", (), {})()
        if nested:
            self.aug.rng = _fresh(kind)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        rng = getattr(self.aug, "rng", None) or globals()[f"RNG_{self.kind}"]
        ids = _dropped(row["input_ids"], self.kind, rng)
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": row["label"]}


def _run(out, kind: str, where: str, attached: bool):
    tokenizer = _tokenizer()
    globals()[f"RNG_{kind}"] = _fresh(kind)  # a script's module-level `rng = ...`, made anew each run
    rows = _classified(tokenizer)
    if where == "transform":  # a datasets transform whose closure holds its own generator
        rng = _fresh(kind)

        def transform(batch):
            ids = [_dropped(x, kind, rng) for x in batch["input_ids"]]
            return {"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids], "labels": batch["label"]}
        data = rows.with_format(None)
        data.set_transform(transform)
        draw = lambda: _keep(kind, rng, 3)  # noqa: E731
    else:
        data = TokenDropout(rows, kind, nested=where == "nested")
        draw = lambda: _keep(kind, getattr(data.aug, "rng", None) or globals()[f"RNG_{kind}"], 3)  # noqa: E731
    set_seed(0)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                      args=_args(out, remove_unused_columns=False), train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer), processing_class=tokenizer)
    if attached:
        attach(trainer)
    return _train(trainer), draw()  # the losses, and what the generator draws next


@pytest.mark.parametrize("kind,where", [("numpy", "module"), ("python", "module"), ("torch", "module"),
                                        ("numpy", "nested"), ("torch", "nested"), ("python", "transform")])
def test_augmentation_from_a_generator_of_the_scripts_own_trains_as_without_trainsweep(tmp_path, kind, where):
    plain = _run(tmp_path / "plain", kind, where, attached=False)
    assert _run(tmp_path / "attached", kind, where, attached=True) == plain


def test_every_generator_found_is_put_back_and_a_failing_search_leaves_the_modules(monkeypatch):
    def made() -> list:  # a script's globals: `rng = np.random.default_rng(7)`, ...
        globals().update(HELD_NP=np.random.default_rng(7), HELD_PY=random.Random(7),
                         HELD_TORCH=torch.Generator().manual_seed(7))
        return [globals()[k] for k in ("HELD_NP", "HELD_PY", "HELD_TORCH")]

    def draw(held) -> list:
        return [held[0].random(), held[1].random(), float(torch.rand(1, generator=held[2]))]

    first = draw(made())
    held = made()
    with rng_kept():
        draw(held)
    assert draw(held) == first
    monkeypatch.setattr("src.base.rng.gc.get_objects", lambda: 1 / 0)
    monkeypatch.setattr("src.base.rng._whole", None)
    assert {id(g) for g in held} <= {id(g) for g in anywhere()}


def test_the_whole_search_runs_once_and_later_generators_are_found_where_scripts_keep_them(monkeypatch):
    """The whole process is searched once (~3 s beside a million row dicts): each later call reads the modules'
    globals and what its holders reach, so a k-fold loop's new `rng = ...` and a new dataset's closure are found; a
    generator only a local variable holds is not."""
    from src.base import rng as rng_module

    searches = []
    real = rng_module._heap
    monkeypatch.setattr(rng_module, "_heap", lambda: searches.append(1) or real())
    monkeypatch.setattr(rng_module, "_whole", None)
    anywhere()
    global LATER
    LATER = torch.Generator().manual_seed(5)  # a module global made after the whole search
    drawn_by_transform, local_only = torch.Generator().manual_seed(6), torch.Generator().manual_seed(7)
    data = type("Data", (), {})()
    data.format = {"transform": lambda batch: torch.rand(1, generator=drawn_by_transform)}
    found = {id(g) for g in anywhere([data])}
    assert len(searches) == 1
    assert id(LATER) in found and id(drawn_by_transform) in found and id(local_only) not in found
