"""trainsweep: fine-tuning that measures itself. In a checkout this package is `src` (`python -m src.run`);
installed it is `trainsweep` (the `trainsweep` command, and in your own script `trainsweep.attach(trainer)` to
measure it, `trainsweep.speedup(trainer)` to make it fast), and `trainsweep.load(run_dir)` with
`trainsweep.predict(model, tokenizer, texts)` to use a finished run's result (src/model/load.py).

They load on first use: the command line answers a bad value before torch loads."""


def __getattr__(name: str):
    if name in ("attach", "TrainsweepCallback"):
        from .dropin import callback

        return getattr(callback, name)
    if name == "speedup":
        from .levers.apply import speedup

        return speedup
    if name in ("load", "predict"):
        from .model import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["attach", "speedup", "TrainsweepCallback", "load", "predict"]


def __dir__() -> list[str]:  # dir(trainsweep) and tab completion show the lazy names too
    return sorted(set(globals()) | set(__all__))
