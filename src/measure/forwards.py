"""How many times a training step runs the model a micro-batch. MFU counts one forward and one backward a
micro-batch; a compute_loss that calls the model twice (R-Drop's two dropout masks, a consistency loss) does
twice the work for the same tokens, and its MFU read half of what it is.

A forward pre-hook on the top-level model counts calls on the host: a Python int, no tensor touched, so no sync.
Only calls between the Trainer's step begin and end, in train mode and with grad on, count: evaluation runs
without grad, and so do generation (GenerationMixin.generate) and TRL's reference-model passes. Gradient
checkpointing recomputes layers, never the top model, so its recompute never reaches the hook.
"""
from __future__ import annotations

import torch


def compiled_top(model, wrapped):
    """The module whose calls are counted: the Trainer's wrapper when it is a torch.compile'd one (its hooks run
    outside the compiled graph; the inner model's run inside it, where they are skipped), else the model."""
    from torch._dynamo.eval_frame import OptimizedModule

    return wrapped if isinstance(wrapped, OptimizedModule) and wrapped is not model else model


class ForwardCounter:
    """Training forwards of one module and the micro-batches fetched for them. `on_error(exc)` is called once if
    counting fails; the counter then removes its hook and says nothing more (unknown, never a wrong figure)."""

    def __init__(self, module: torch.nn.Module, on_error=None):
        self.forwards = self.micro_batches = 0
        self.stepping = False  # between on_step_begin and on_step_end
        self.failed = False
        self.on_error = on_error
        self.handle = module.register_forward_pre_hook(self._pre_hook)

    def _pre_hook(self, module, args):
        if torch.compiler.is_compiling():  # first: in a traced graph, each Python value read becomes a guard on it
            return
        try:
            if self.stepping and module.training and torch.is_grad_enabled():
                self.forwards += 1
        except Exception as exc:  # never into the user's forward
            self._fail(exc)

    def listen(self, batch, pack_stats) -> None:
        """A tap listener (src/measure/tap.py): one call a micro-batch the Trainer fetched."""
        self.micro_batches += 1

    def _fail(self, exc: BaseException) -> None:
        self.failed = True
        self.remove()
        if self.on_error is not None:
            self.on_error(exc)

    def remove(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def per_micro_batch(self) -> float | None:
        """Forwards a micro-batch where more than one, else None: one, or fewer counted than micro-batches (a
        model called through .forward, or compiled in place: its hook runs in the graph, skipped), leaves the FLOPs
        at one forward a micro-batch, as they were."""
        if self.failed or not self.micro_batches or self.forwards <= self.micro_batches:
            return None
        return self.forwards / self.micro_batches
