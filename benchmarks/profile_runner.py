"""Where the runner's host time goes: cProfile over the timed steps of a real run, top functions by own time.

    python -m benchmarks.profile_runner model=qwen3 batch=8 trainer.max_steps=40 measure.warmup_steps=10
"""
import cProfile
import io
import pstats
import sys
import tempfile
from pathlib import Path

from transformers import TrainerCallback

from src.config.compose import compose
from src.run import run


class Profile(TrainerCallback):
    def __init__(self, start: int):
        self.start, self.prof = start, cProfile.Profile()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.start:
            self.prof.enable()

    def on_train_end(self, args, state, control, **kw):
        self.prof.disable()


if __name__ == "__main__":
    cfg = compose(sys.argv[1:] + ["measure.profile_steps=0"])
    cb = Profile(cfg.measure.warmup_steps)
    with tempfile.TemporaryDirectory() as out:
        run(cfg, Path(out), callbacks=(cb,))
    text = io.StringIO()
    stats = pstats.Stats(cb.prof, stream=text)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)
    print(text.getvalue())
