"""Every random generator as it was, around work that must not change what training draws next."""
from __future__ import annotations

import contextlib
import functools
import gc
import random
import types

import numpy as np

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, not a builtin


@contextlib.contextmanager
def rng_kept(*holders):
    """Python's, numpy's, torch's and CUDA's generators restored on exit: a check's forward (dropout), reading a
    dataset that draws per row, or a timed trial step leaves the script's training as it would have been.
    `holders` (a collator, a dataset): their own generators too, held as attributes (DataCollatorForLanguageModeling
    (seed=42)'s, a dataset's `self.rng`), which reading ahead through them would otherwise move; and every other
    generator the process holds (`anywhere`): a module's `rng = np.random.default_rng(0)` an augmentation draws from,
    a transform's closure, `dataset.aug.rng`."""
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda and torch.cuda.get_rng_state_all()
    # (holder, attribute, state); None where it holds none yet (a collator making its generator at its first call)
    own = [(h, k, v, None if v is None else _state(v)) for h in _unwrapped(holders) for k, v in vars(h).items()
           if v is None or _state(v) is not None]
    held = {id(v) for _, _, v, _ in own}
    own += [(None, None, g, state) for g in anywhere() if id(g) not in held and (state := _state(g)) is not None]
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
        if cuda:
            torch.cuda.set_rng_state_all(saved[3])
        for holder, name, generator, state in own:
            now = getattr(holder, name, None) if holder is not None else generator
            if generator is None and _state(now) is not None:  # made while reading ahead: made again at training's
                setattr(holder, name, None)
            elif generator is not None and now is generator:
                _restore(generator, state)


def anywhere() -> list:
    """The generators the garbage collector can reach: Python's and numpy's as objects; torch's CPU ones, which it
    does not track, inside what it does: dicts (module globals), lists, tuples, closure cells and instances of
    classes with attributes (`self.aug.rng`). Outside any step: 0.3 s in a process of 400k objects, ~3 s beside a
    list of a million row dicts, so inside `searched_once` one search serves every rng_kept. A search that fails
    finds none."""
    if _burst:
        return _burst[0]
    found = _search()
    if _burst is not None:
        _burst.append(found)
    return found


_burst: list | None = None  # inside searched_once: [what its first search found], once searched


def searched_once(fn):
    """fn's rng_kept calls, a burst before step 1 (speedup's reads and timed rounds, attach's read-ahead and checks),
    search the process for generators once: a generator made meanwhile by a dataset or collator is rng_kept's
    holders' to find."""
    @functools.wraps(fn)
    def once(*args, **kwargs):
        global _burst
        outer, _burst = _burst, (_burst if _burst is not None else [])
        try:
            return fn(*args, **kwargs)
        finally:
            _burst = outer
    return once


def _search() -> list:
    import torch

    tracked, found = (random.Random, np.random.Generator, np.random.RandomState), {}
    try:
        objects = gc.get_objects()
    except Exception:  # the search is a courtesy: none found
        return []
    for obj in objects:
        try:
            kind = type(obj)
            if issubclass(kind, tracked):
                found[id(obj)] = obj
                continue
            for value in _values(obj, kind):
                if type(value) is torch.Generator and value.device.type == "cpu":
                    found[id(value)] = value
        except Exception:  # an object that can't be read (a dict another thread resized): the next one
            continue
    return list(found.values())


def _values(holder, kind) -> list | tuple:
    if kind is dict:
        return list(holder.values())
    if kind is list or kind is tuple:
        return holder
    if kind is types.CellType:
        return [holder.cell_contents]  # an empty cell raises: nothing in it
    if kind.__flags__ & _HEAP_TYPE and kind.__dictoffset__:  # a class of Python's: its attributes, dict or not
        return gc.get_referents(holder)
    return ()


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
    if isinstance(generator, random.Random) and not isinstance(generator, random.SystemRandom):  # the OS's: no state
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
