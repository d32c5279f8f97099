"""Every random generator as it was, around work that must not change what training draws next."""
from __future__ import annotations

import contextlib
import functools
import gc
import random
import sys
import types

import numpy as np

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, not a builtin


@contextlib.contextmanager
def rng_kept(*holders):
    """Python's, numpy's, torch's and CUDA's generators restored on exit: a check's forward (dropout), reading a
    dataset that draws per row, or a timed trial step leaves the script's training as it would have been.
    `holders` (a collator, a dataset): their own generators too, held as attributes (DataCollatorForLanguageModeling
    (seed=42)'s, a dataset's `self.rng`), which reading ahead through them would otherwise move; and those `anywhere`
    finds: a module's `rng = np.random.default_rng(0)` an augmentation draws from, a transform's closure,
    `dataset.aug.rng`."""
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda and torch.cuda.get_rng_state_all()
    # (holder, attribute, state); None where it holds none yet (a collator making its generator at its first call)
    own = [(h, k, v, None if v is None else _state(v)) for h in _unwrapped(holders) for k, v in vars(h).items()
           if v is None or _state(v) is not None]
    held = {id(v) for _, _, v, _ in own}
    own += [(None, None, g, state) for g in anywhere(_unwrapped(holders)) if id(g) not in held
            and (state := _state(g)) is not None]
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


def anywhere(holders=()) -> list:
    """The generators the script holds outside the global ones: what one search of the whole process found (once a
    process: 0.3 s among 400k objects, ~3 s beside a million row dicts), every module's globals again (a script's
    `rng = np.random.default_rng(0)`, made or made again since: a k-fold loop's; ~0.03 s), and what the holders
    reach within a few attributes (`dataset.aug.rng`, a datasets transform's closure). A generator made after the
    whole search somewhere else (a library's own object) is not found. A search that fails finds none."""
    global _whole
    if _whole is None:
        _whole = _search(_heap())
    found = {id(g): g for g in _whole}
    try:
        globals_ = [v for m in list(sys.modules.values()) if type(getattr(m, "__dict__", None)) is dict
                    for v in list(m.__dict__.values())]
        for value in _search(globals_ + _reached(holders)):
            found[id(value)] = value
    except Exception:  # a module or holder that can't be read: what the whole search found
        pass
    return list(found.values())


_whole: list | None = None  # the whole process's search, once


def _heap() -> list:
    """Every object the garbage collector tracks, and the torch CPU generators they hold: those are untracked, so
    they are found in the dicts (module globals, attributes), lists, tuples, closure cells and instances holding them."""
    import torch

    try:
        objects = gc.get_objects()
    except Exception:  # the search is a courtesy: none found
        return []
    held = []
    for obj in objects:
        kind = type(obj)
        if kind is dict or kind is list or kind is tuple or kind is types.CellType or (
                kind.__flags__ & _HEAP_TYPE and kind.__dictoffset__):
            held += [v for v in _inside(obj, whole=True) if type(v) is torch.Generator]
    return objects + held


def _search(objects) -> list:
    import torch

    tracked = (random.Random, np.random.Generator, np.random.RandomState)
    out = []
    for obj in objects:
        kind = type(obj)
        if (kind is torch.Generator and obj.device.type == "cpu") or (kind is not torch.Generator and issubclass(kind, tracked)):
            out.append(obj)
    return out


def _reached(holders, depth: int = 4, most: int = 5000) -> list:
    """What the holders reach within `depth` steps (attributes, container items, closures, a bound method's
    instance), at most `most` objects: a dataset's `aug.rng`, its transform's closure."""
    seen, frontier, out = set(), list(holders), []
    for _ in range(depth):
        ahead = []
        for obj in frontier:
            if id(obj) in seen or issubclass(type(obj), types.ModuleType) or len(out) >= most:
                continue
            seen.add(id(obj))
            out.append(obj)
            ahead += _inside(obj)
        frontier = ahead
    return out + frontier[:most]


def _inside(obj, whole: bool = False) -> list:
    """What one object holds; containers past 512 items (a dataset's rows) only in the whole search."""
    try:
        kind = type(obj)
        if kind is dict:
            return list(obj.values()) if whole else list(obj.values())[:512]
        if kind is list or kind is tuple:
            return obj if whole else list(obj[:512])
        if kind is types.CellType:
            return [obj.cell_contents]  # an empty cell raises: nothing in it
        if kind is types.FunctionType:
            return [x for c in obj.__closure__ or () for x in _inside(c)]
        if kind is types.MethodType:
            return [obj.__self__, obj.__func__]
        if kind is functools.partial:
            return [obj.func, *obj.args, *obj.keywords.values()]
        if kind.__flags__ & _HEAP_TYPE and kind.__dictoffset__:  # a class of Python's: its attributes
            return gc.get_referents(obj) if whole else list(vars(obj).values())
    except Exception:
        pass
    return []


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
