"""A run's micro-batches drawn before it runs (src/data/sampling.py): the random order is the Trainer's own, the
length-grouped one has the Trainer's structure, and the timed window's new shapes are counted as the run counts
them (src/measure/timing.py: distinct shapes of steps warmup+1..last that the warm-up did not meet)."""
import pytest
import torch

from src.data import prepare, sampling
from src.data.collate import PadCollator
from src.machine import env
from src.model import build as models
from src.train import trainer as train
from tests.conftest import QUICK, compose


def test_the_random_order_is_the_one_the_trainer_draws(tmp_path):
    """The Trainer's own dataloader (accelerate's seedable sampler, seeded with data.seed) against the drawn
    micro-batches: the same rows, so the same widths and real tokens, batch for batch."""
    cfg = compose(*QUICK, "padding=dynamic", "batch=4", "dataloader=basic", "data.seed=3")
    res, conf = env.setup(cfg), models.hf_config(cfg)
    prep = prepare.prepare(cfg, conf, tmp_path)
    conf.update(prep.for_model)
    trainer = train.trainer_class(cfg.task.name)(model=models.build_model(cfg, res, conf), args=train.training_args(
        cfg, res, tmp_path), train_dataset=prep.for_trainer, data_collator=prep.collator)
    lengths = [int(x) for x in prep.train["length"]]
    drawn = sampling.micro_batches(lengths, prep.collator, "dynamic", 4, 1, 12, seed=cfg.data.seed)
    loaded = [b for _, b in zip(range(12), trainer.get_train_dataloader())]
    assert [m.shape for m in drawn] == [tuple(b["input_ids"].shape) for b in loaded]
    assert [m.real for m in drawn] == [int(b["attention_mask"].sum()) for b in loaded]
    other = sampling.micro_batches(lengths, prep.collator, "dynamic", 4, 1, 12, seed=cfg.data.seed + 1)
    assert [m.real for m in other] != [m.real for m in drawn]  # the seed is what makes it the run's order


def test_a_length_grouped_order_meets_more_new_shapes_than_a_random_one():
    """Hugging Face's grouped order sorts each mega-batch longest first, so every few micro-batches bring a width
    not met before; a random order's widths sit near the longest rows after a few batches."""
    gen = torch.Generator().manual_seed(0)
    lengths = (torch.randn(4096, generator=gen) * 30 + 211).clamp(40, 287).long().tolist()
    collator = PadCollator(task="classification", pad_id=0, max_length=320, multiple=8)
    grouped = sampling.window(lengths, collator, "grouped", 8, 8, warmup=3, last=23, data_seed=0)
    random = sampling.window(lengths, collator, "dynamic", 8, 8, warmup=3, last=23, data_seed=0)
    fixed = sampling.window(lengths, PadCollator(task="classification", pad_id=0, max_length=320, fixed=True),
                            "max_length", 8, 8, warmup=3, last=23, data_seed=0)
    assert grouped.new_shapes > 3 * random.new_shapes > 0 and fixed.new_shapes == 0
    mean = sum(lengths) / len(lengths)  # 160 micro-batches of 8 rows: near 8 rows of the mean either way
    assert grouped.real_per_micro_batch == pytest.approx(8 * mean, rel=0.03)
    assert random.real_per_micro_batch == pytest.approx(8 * mean, rel=0.03) == fixed.real_per_micro_batch
    assert sampling.micro_batches(lengths, object(), "packed", 8, 1, 4, 0) is None  # packs: no widths to draw


def test_new_shapes_are_those_first_met_inside_the_window():
    shapes = [(2, 8), (2, 16), (2, 8), (2, 24), (2, 16), (2, 32), (2, 24), (2, 40)]
    # grad_accum 2: steps 1 and 2 are the warm-up ((2,8), (2,16), (2,24)); steps 3-4 meet (2,32) anew
    assert sampling.new_in_window(shapes, grad_accum=2, warmup=2, last=3) == 1
    assert sampling.new_in_window(shapes, grad_accum=2, warmup=2, last=4) == 2  # (2,40) too
    assert sampling.new_in_window(shapes, grad_accum=1, warmup=0, last=8) == 5


@pytest.mark.parametrize("strategy", ["dynamic", "grouped"])
def test_the_window_of_a_run_that_times_no_steps_still_has_its_tokens(strategy):
    collator = PadCollator(task="classification", pad_id=0, max_length=64, multiple=8)
    w = sampling.window([10, 20, 30, 40] * 8, collator, strategy, 2, 1, warmup=3, last=3, data_seed=0)
    assert w.new_shapes == 0 and w.real_per_micro_batch > 0
