"""What speedup's view of the script's TrainingArguments (src/levers/arguments.py) costs a training step: every
read the Trainer makes of its arguments goes through the view's __getattribute__. A tiny Trainer trains with the
view while its reads are recorded by name; the same reads are then timed through the view and on the plain object.
The difference, per optimizer step, is the most the view adds to a step's host time (no device work involved).

    python -m benchmarks.args_view [steps]   -> JSON: reads a step, host microseconds a step with and without
"""
import json
import pathlib
import sys
import tempfile
import time


def main(steps: int = 40) -> dict:
    from transformers import logging as hf_logging

    from src.levers import arguments
    from tests.test_speedup import _trainer

    hf_logging.set_verbosity_error()
    trainer = _trainer(pathlib.Path(tempfile.mkdtemp()), accum=2, steps=steps)
    plain = trainer.args
    view = arguments.view(plain)
    arguments.pin(view, "gradient_accumulation_steps", 2)  # a pinned field, as under padding-free batches
    names: list[str] = []
    cls, read = type(view), type(view).__getattribute__

    def recording(self, name):
        names.append(name)
        return read(self, name)

    cls.__getattribute__ = recording
    try:
        trainer.args = view
        trainer.train()
    finally:
        cls.__getattribute__ = read

    def timed(obj) -> float:
        start = time.perf_counter()
        for _ in range(20):
            for name in names:
                getattr(obj, name, None)  # hasattr() probes among them
        return (time.perf_counter() - start) / 20 / steps * 1e6

    timed(view), timed(plain)  # warm
    on, off = min(timed(view) for _ in range(5)), min(timed(plain) for _ in range(5))
    return {"steps": steps, "reads_per_step": len(names) / steps, "host_us_per_step_view": round(on, 1),
            "host_us_per_step_plain": round(off, 1), "added_us_per_step": round(on - off, 1)}


if __name__ == "__main__":
    print(json.dumps(main(*map(int, sys.argv[1:]))))
