"""A TrainerCallback's hooks, called in the order the Hugging Face Trainer calls them, around a hand-written
training step: the tests and benchmarks run Measure (or any callback) without a Trainer."""
from types import SimpleNamespace


def _nothing() -> None:
    pass


class TrainerHooks:
    """One callback's hooks in the Trainer's order (callback None: the same loop, no hooks). `state` and
    `control` are kept as the Trainer keeps them: global_step counts finished optimizer steps, and
    control.should_training_stop is the callback's request to stop."""

    def __init__(self, callback=None, log_every: int = 0):
        self.callback, self.log_every = callback, log_every  # log_every: on_log every so many steps (0: never)
        self.state = SimpleNamespace(global_step=0)
        self.control = SimpleNamespace(should_training_stop=False)

    def _hook(self, name: str) -> None:
        if self.callback is not None:
            getattr(self.callback, "on_" + name)(None, self.state, self.control)

    def train_begin(self) -> None:
        self._hook("train_begin")

    def train_end(self) -> None:
        self._hook("train_end")

    def step(self, work, optimizer_step=_nothing, after=_nothing) -> bool:
        """One optimizer step: `work` is the forward and backward of every micro-batch (and the clipping),
        then `optimizer_step`, then `after` (scheduler, zero_grad). True when the callback asked to stop."""
        self._hook("step_begin")
        work()
        self._hook("pre_optimizer_step")
        optimizer_step()
        self._hook("optimizer_step")
        after()
        self.state.global_step += 1
        self._hook("step_end")
        if self.log_every and self.state.global_step % self.log_every == 0:
            self._hook("log")
        return self.control.should_training_stop

    def run(self, steps: int, work) -> int:
        """A whole training run of at most `steps` steps; returns the steps trained."""
        self.train_begin()
        for _ in range(steps):
            if self.step(work):
                break
        self.train_end()
        return self.state.global_step
