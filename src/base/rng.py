"""Every random generator as it was, around work that must not change what training draws next."""
from __future__ import annotations

import contextlib
import random

import numpy as np


@contextlib.contextmanager
def rng_kept(*holders):
    """Python's, numpy's, torch's and CUDA's generators restored on exit: a check's forward (dropout), reading a
    dataset that draws per row, or a timed trial step leaves the script's training as it would have been.
    `holders` (a collator, a dataset): their own generators too, held as attributes (DataCollatorForLanguageModeling
    (seed=42)'s, a dataset's `self.rng`), which reading ahead through them would otherwise move."""
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda and torch.cuda.get_rng_state_all()
    # (holder, attribute, state); None where it holds none yet (a collator making its generator at its first call)
    own = [(h, k, v, None if v is None else _state(v)) for h in _unwrapped(holders) for k, v in vars(h).items()
           if v is None or _state(v) is not None]
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
        if cuda:
            torch.cuda.set_rng_state_all(saved[3])
        for holder, name, generator, state in own:
            now = getattr(holder, name, None)
            if generator is None and _state(now) is not None:  # made while reading ahead: made again at training's
                setattr(holder, name, None)
            elif generator is not None and now is generator:
                _restore(generator, state)


def _unwrapped(holders) -> list:
    """The holders and what they wrap (the Trainer's column-removing collator holds the script's as data_collator;
    a Subset its dataset), those with attributes to read."""
    out = []
    for holder in holders:
        while holder is not None and hasattr(holder, "__dict__") and all(h is not holder for h in out):
            out.append(holder)
            holder = getattr(holder, "data_collator", None) or getattr(holder, "dataset", None)
    return out


def _state(generator):
    import torch

    if isinstance(generator, torch.Generator):
        return generator.get_state()
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, np.random.RandomState):
        return generator.get_state()
    if isinstance(generator, random.Random):
        return generator.getstate()
    return None


def _restore(generator, state) -> None:
    import torch

    if isinstance(generator, torch.Generator):
        generator.set_state(state)
    elif isinstance(generator, np.random.Generator):
        generator.bit_generator.state = state
    elif isinstance(generator, np.random.RandomState):
        generator.set_state(state)
    else:
        generator.setstate(state)


def held_by(trainer) -> tuple:
    """What of a Trainer may hold generators of its own: its train dataset and its collator (rng_kept's holders)."""
    return getattr(trainer, "train_dataset", None), getattr(trainer, "data_collator", None)
