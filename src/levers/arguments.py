"""The Trainer's own view of the script's TrainingArguments while speedup's levers are on.

A lever sets two fields: grad_accum (padding-free batches keep the rows a step) and the logs' NaN filter (the
Trainer's step overheads). Set on the script's object they would leak into every Trainer sharing it (a k-fold loop
builds one for every fold); set on a copy, the script lost its hold on the rest: a notebook that sets
`args.max_steps = 6` between two `train()` calls trained 4 steps under speedup, silently.

So the Trainer gets a view: the fields a lever pinned read from the view, every other read and every write goes to
the script's own object, as if speedup were not there. A pin is released when its lever turns off; with none left
the Trainer gets the script's object back (`restore`). Pickled (a checkpoint's training_args.bin) or copied, the view
is a plain object of the script's own class, its pins applied, so nothing of trainsweep is needed to load it.

Cost: each read through the view is Python, not a slot lookup. `python -m benchmarks.args_view` (this repo's CPU
machine, 2 cores): the Trainer read its arguments ~103 times an optimizer step (grad_accum 2, a log every step),
~80 us a step more than on the plain object: 0.06% of the sped-up classifier's 0.14 s step (experiments/dropin,
call 6, an H100), 0.4% of a 20 ms one.
"""
from __future__ import annotations

import copy
import copyreg

PINNABLE = ("gradient_accumulation_steps", "logging_nan_inf_filter")
_VIEWS: dict[type, type] = {}  # one view class per arguments class (TrainingArguments, TRL's configs, a user's)


class _View:
    def __getattribute__(self, name):
        own = object.__getattribute__(self, "__dict__")
        if "_trainsweep_theirs" not in own:  # built by its class's own __init__ (dataclasses.replace): a plain object
            return object.__getattribute__(self, name)
        if name in own["_trainsweep_pins"]:
            return own["_trainsweep_pins"][name]
        theirs = own["_trainsweep_theirs"]
        if name in vars(theirs):
            return vars(theirs)[name]
        return object.__getattribute__(self, name)  # methods and properties, run over this view's fields

    def __setattr__(self, name, value):
        own = object.__getattribute__(self, "__dict__")
        if "_trainsweep_theirs" not in own:
            object.__setattr__(self, name, value)
        elif name in own["_trainsweep_pins"]:
            own["_trainsweep_pins"][name] = value
        else:
            setattr(own["_trainsweep_theirs"], name, value)

    def __reduce_ex__(self, protocol):
        # the plain object's own reduction, rebuilt by the standard library's _reconstructor: pickle refuses
        # __newobj__ of a class other than the view's
        func, args, *rest = materialise(self).__reduce_ex__(protocol)
        if func is copyreg.__newobj__:
            func, args = copyreg._reconstructor, (args[0], object, None)
        return (func, args, *rest)


def view(args):
    """The Trainer's view of `args` (a view already: itself). Where none can be built (an arguments class that
    can't be subclassed, no instance dict) `args` itself: pin() then raises inside speedup's guard, which turns
    every lever off and says why, so the script's object is never changed."""
    if is_view(args):
        return args
    cls = type(args)
    try:
        if cls not in _VIEWS:
            _VIEWS[cls] = type(cls.__name__, (_View, cls), {"__module__": cls.__module__,
                                                             "__qualname__": cls.__qualname__})
        out = object.__new__(_VIEWS[cls])
    except Exception:
        return args
    object.__setattr__(out, "_trainsweep_theirs", args)
    object.__setattr__(out, "_trainsweep_pins", {})
    return out


def is_view(args) -> bool:
    return "_trainsweep_theirs" in getattr(args, "__dict__", {})


def theirs(args):
    return object.__getattribute__(args, "__dict__")["_trainsweep_theirs"] if is_view(args) else args


def pin(args, name: str, value) -> None:
    """The Trainer reads `value` for `name`; the script's object keeps its own."""
    assert name in PINNABLE, name
    object.__getattribute__(args, "__dict__")["_trainsweep_pins"][name] = value


def release(args, name: str) -> None:
    """`name` reads the script's object again."""
    if is_view(args):
        object.__getattribute__(args, "__dict__")["_trainsweep_pins"].pop(name, None)


def pinned(args) -> dict:
    return dict(object.__getattribute__(args, "__dict__")["_trainsweep_pins"]) if is_view(args) else {}


def materialise(args):
    """A plain object of the script's class: its fields now, the view's pins applied."""
    out = copy.copy(theirs(args))
    vars(out).update(pinned(args))
    return out


def restore(trainer) -> None:
    """With no pin left, the Trainer gets the script's own object back."""
    if is_view(trainer.args) and not pinned(trainer.args):
        trainer.args = theirs(trainer.args)
