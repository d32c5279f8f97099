"""How many times a training step runs the model a micro-batch. MFU counts one forward and one backward a
micro-batch; a compute_loss that calls the model twice (R-Drop's two dropout masks, a consistency loss) does
twice the work for the same tokens, and its MFU read half of what it is.

A forward pre-hook on the top-level model counts calls on the host: a Python int, no tensor touched, so no sync.
Only calls between the Trainer's step begin and end, in train mode and with grad on, count: evaluation runs
without grad, and so does generation (GenerationMixin.generate). Gradient checkpointing recomputes layers, never
the top model, so its recompute never reaches the hook.

A forward without grad during the step, outside generation, is a scoring pass: TRL's DPO scores each batch with
a reference (a `ref_model`, or the model with its adapters off), KTO its batch and a mismatched KL batch too,
distillation with a `teacher_model`. It is work the objective needs, a third or a half more than the training's
own, and MFU that left it out read that much low. Its share is counted as token positions, the pass's input_ids
against the fetched micro-batches', each at the forward FLOPs of the module that ran it. Generation hands the
model its cache (`past_key_values`; `cache` in transformers 5) at every call and is left out: a decoding step's
cost is no batch's forward.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import torch

from ..model import flops

SCORERS = ("ref_model", "teacher_model")  # TRL's trainers' names for a second model scoring each batch
CACHE_KWARGS = ("past_key_values", "cache")  # what generate hands the model (transformers 4 and 5 name it apart)


def compiled_top(model, wrapped):
    """The module whose calls are counted: the Trainer's wrapper when it is a torch.compile'd one (its hooks run
    outside the compiled graph; the inner model's run inside it, where they are skipped), else the model."""
    from torch._dynamo.eval_frame import OptimizedModule

    return wrapped if isinstance(wrapped, OptimizedModule) and wrapped is not model else model


class ForwardCounter:
    """Training forwards of one module and the micro-batches fetched for them, and scoring passes (see above) of it
    and of `scorers` (name -> module). `on_error(exc)` is called once if counting fails; the counter then removes
    its hooks and says nothing more (unknown, never a wrong figure)."""

    def __init__(self, module: torch.nn.Module, on_error=None, scorers: dict | None = None):
        self.forwards = self.micro_batches = 0
        self.scoring: dict[str, int] = {}  # name -> token positions its scoring passes ran
        self.fetched = 0  # token positions (input_ids, padding included) of the micro-batches fetched
        self.stepping = False  # between on_step_begin and on_step_end
        self.failed = False
        self.on_error = on_error
        self.modules = {"model": module, **(scorers or {})}
        self.handles = [m.register_forward_pre_hook(partial(self._pre_hook, name), with_kwargs=True)
                        for name, m in self.modules.items()]

    def __getstate__(self) -> dict:
        """What a pickle or deep copy of the model carries with its hooks (torch.save(model) in a user's callback):
        a counter that counts nothing, with no reference to the callback or the Trainer, which don't pickle."""
        return {"forwards": 0, "micro_batches": 0, "scoring": {}, "fetched": 0, "stepping": False, "failed": True,
                "on_error": None, "modules": {}, "handles": []}

    @classmethod
    def of_trainer(cls, module, trainer, on_error=None) -> "ForwardCounter":
        """A counter on the Trainer's model and on each other model the Trainer holds: TRL's SCORERS, and a
        subclass's own (`self.teacher`, `self.reference`): an attribute that is a module with a config (a
        transformers model, or a PEFT one), which a loss module (nn.CrossEntropyLoss) has not."""
        held = {name: getattr(trainer, name, None) for name in SCORERS}
        held.update((name, m) for name, m in vars(trainer).items() if name not in held and hasattr(m, "config"))
        ours = {id(module), id(trainer.model), id(getattr(trainer, "model_wrapped", None))}
        return cls(module, on_error, {name: m for name, m in held.items()
                                      if isinstance(m, torch.nn.Module) and id(m) not in ours})

    def _pre_hook(self, name, module, args, kwargs):
        if torch.compiler.is_compiling():  # first: in a traced graph, each Python value read becomes a guard on it
            return
        try:
            if not self.stepping:
                return
            if torch.is_grad_enabled():
                if name == "model" and module.training:
                    self.forwards += 1
                return
            ids = kwargs.get("input_ids", args[0] if args else None)
            if isinstance(ids, torch.Tensor) and all(kwargs.get(key) is None for key in CACHE_KWARGS):
                self.scoring[name] = self.scoring.get(name, 0) + ids.numel()
        except Exception as exc:  # never into the user's forward
            self._fail(exc)

    def listen(self, batch, pack_stats) -> None:
        """A tap listener (src/measure/tap.py): one call a micro-batch the Trainer fetched."""
        self.micro_batches += 1
        ids = batch.get("input_ids") if isinstance(batch, Mapping) else None
        if isinstance(ids, torch.Tensor):
            self.fetched += ids.numel()

    def _fail(self, exc: BaseException) -> None:
        self.failed = True
        self.remove()
        if self.on_error is not None:
            self.on_error(exc)

    def remove(self) -> None:
        while self.handles:
            self.handles.pop().remove()

    def per_micro_batch(self) -> float | None:
        """Forwards a micro-batch where more than one, else None: one, or fewer counted than micro-batches (a
        model called through .forward, or compiled in place: its hook runs in the graph, skipped), leaves the FLOPs
        at one forward a micro-batch, as they were."""
        if self.failed or not self.micro_batches or self.forwards <= self.micro_batches:
            return None
        return self.forwards / self.micro_batches

    def scoring_flops(self, seq: float) -> list[tuple[str, float, float]]:
        """(who, passes a micro-batch, forward FLOPs a token each) of the scoring passes, passes being their token
        positions over the fetched ones; none where counting failed or no batch held input_ids, and none for a
        module without a config to read its layers from."""
        if self.failed or not self.fetched:
            return []
        out = []
        for name, positions in sorted(self.scoring.items()):
            conf = getattr(self.modules[name], "config", None)
            if conf is not None:
                out.append((name, positions / self.fetched, flops.forward_per_token(self.modules[name], conf, seq)))
        return out
