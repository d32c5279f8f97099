"""Proof in the same run: before training, the script's own micro-batches and the levers' run forward and backward
on the same model in interleaved rounds (no optimizer step, so the weights training starts from are untouched),
on the same rows first (their losses must agree: same weights, same rows), then timed. A lever whose arm loses
to the arm without it is turned back off; if the levers together lose, or their loss differs, all are.

The timed windows are synchronised at their ends only (a host sync per round, none per micro-batch), and the
rounds rotate the arms' order so a clock that drifts lands on every arm alike. Each round gives one ratio per arm;
their spread is the interval (src/base/stats.py, on the log scale)."""
from __future__ import annotations

import copy
import os
import time

import numpy as np
import torch

from ..base.rng import held_by, rng_kept
from ..base.stats import MIN_EFFECT, Comparison, of_repeats
from ..data.packing import PACK_STATS, first_fit
from .loss_scale import TRAINER_STATE
from .outcome import Speedup

MICRO = 4  # the script's micro-batches a timed round
LOSS_TOLERANCE = 0.02  # same rows and weights: bf16 numerics differ by far less than 2% of the loss
FULL = 0.9  # timed packs are at least this full, as packs are in training (first fit's last open packs aren't)
# The rounds run twice and the second pass is timed. The script's batches vary in shape (padded to each batch's
# longest row), and a shape's first sight costs more than its later ones (kernel choice, allocator growth). On an
# H100 at full depth (experiments/dropin, calls 4 and 5) the single pass put the script's own batches at 3,765-4,009
# real tok/s, below what its training reached, and said 2.87x and 3.06x where the script's clock showed 1.75x and
# 1.94x; the second pass put them at 8,724 (the first, in the same run, 3,784) and said 1.88x (1.80-1.95) where the
# script's clock showed 2.25x. TRAINSWEEP_VERIFY_WARM_PASSES=0 times the first sight alone (faster, and high).
WARM_PASSES_ENV = "TRAINSWEEP_VERIFY_WARM_PASSES"
COMPILES = ("regional compile", "CUDA graphs")  # the compiled arm: one or the other
UNTIMED = ("Trainer step overheads",)  # the Trainer's own step around forward+backward, which the rounds don't run


class TooFewRows(ValueError):
    """The data set is too small to time: said as it is, not as a failure of the verification's code."""


def verify(trainer, out: Speedup, rows, rounds: int = 5, micro: int = MICRO, clock=time.perf_counter,
           sync=None) -> dict:
    """Time the script's batches against the applied levers; turn back what loses; out.verified says what held."""
    model = trainer.model
    cuda = next(model.parameters()).device.type == "cuda"
    sync = sync or (torch.cuda.synchronize if cuda else (lambda: None))
    levers = out.applied()
    compiled = [lv for lv in levers if lv.name in COMPILES]
    arms = {"your batches": [], "levers": [lv for lv in levers if lv not in compiled]}
    if compiled:
        arms["levers + compile"] = levers
    task = rows.task

    def use(arm: str) -> None:
        for lv in levers:
            lv.toggle(lv in arms[arm])

    graphs = any(lv.name == "CUDA graphs" for lv in levers)

    def step(batch: dict) -> torch.Tensor:
        if graphs:  # a new micro-batch: the last one's graph outputs may be overwritten now
            torch.compiler.cudagraph_mark_step_begin()
        inputs = trainer._prepare_inputs({k: v for k, v in batch.items() if k != PACK_STATS})
        # the model is called as training calls it (the item count among its keyword arguments): a compiled
        # model called otherwise would compile again at the first training step (minutes under CUDA graphs)
        _, items = trainer.get_batch_samples(iter([inputs]), 1, trainer.args.device)
        with trainer.accelerator.autocast(), trainer.compute_loss_context_manager():
            loss = trainer.compute_loss(model, inputs, num_items_in_batch=items)
        trainer.accelerator.backward(loss)
        return loss.detach()

    trl_state = {k: copy.deepcopy(vars(trainer)[k]) for k in TRAINER_STATE if k in vars(trainer)}
    was_training = model.training
    try:
        with rng_kept(*held_by(trainer)):
            use("your batches")
            rounds, micro = _fit_rounds(out, len(rows), rounds, micro)
            plain, packed = _batches(trainer, out, rows, rounds, micro)
            _checkpointing_as_training_has_it(trainer)
            model.train()
            losses = {}
            for arm in arms:  # round 0: the same rows for every arm; warms up (compiles) each
                use(arm)
                batches = plain[0] if arm == "your batches" else packed[0]
                total = sum(step(b) * _items(b, task) for b in batches)
                # a packed loss that keeps the script's grad_accum-times scale (src/levers/packing.py) is compared
                # per item, as the script's own is
                scale = 1 if arm == "your batches" else (out.packing or {}).get("loss_scale", 1)
                losses[arm] = float(total) / sum(_items(b, task) for b in batches) / scale
            names = list(arms)
            passes = []
            for _ in range(int(os.environ.get(WARM_PASSES_ENV, "1")) + 1):  # the last pass is the one kept
                seconds = {arm: [] for arm in arms}
                for r in range(1, rounds + 1):
                    for arm in names[r % len(names):] + names[:r % len(names)]:
                        use(arm)
                        sync()
                        start = clock()
                        for b in (plain[r] if arm == "your batches" else packed[r]):
                            step(b)
                        sync()
                        seconds[arm].append(clock() - start)
                passes.append(seconds)
    except Exception as exc:  # the levers can't be shown to work here: the script runs as it was written
        if isinstance(exc, TooFewRows):
            for lv in levers:
                out.turn_off(lv.name, f"turned back off: not timed ({exc})")
            out.verified = {"line": f"not timed, {exc}: every lever is off"}
            return out.verified
        oom = isinstance(exc, torch.OutOfMemoryError)
        why = "out of memory: pass speedup(tokens=...) smaller" if oom else f"{type(exc).__name__}: {exc}"
        why = why.splitlines()[0][:160]
        for lv in levers:
            out.turn_off(lv.name, f"turned back off: the verification failed ({why})")
        out.verified = {"line": f"verification failed ({why}): every lever is off"}
        return out.verified
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
        vars(trainer).update(trl_state)
        for lv in out.applied():
            lv.toggle(True)
    def rates_of(seconds: dict) -> dict:
        return {arm: [sum(_real(b) for b in (plain[r + 1] if arm == "your batches" else packed[r + 1])) / s
                      for r, s in enumerate(seconds[arm])] for arm in arms}

    out.verified = decide(out, arms, rates_of(passes[-1]), losses, warmed=len(passes) > 1)
    if len(passes) > 1:  # what the first pass said: the rates at each shape's first sight
        out.verified["first_pass_real_tokens_per_s"] = {arm: float(np.mean(r)) for arm, r in rates_of(passes[0]).items()}
    return out.verified


def decide(out: Speedup, arms: dict, rates: dict, losses: dict, warmed: bool = False) -> dict:
    """Turn back what lost, from each arm's real tokens/s per round and its loss on the same rows (`warmed`: the
    rounds timed are a second pass)."""
    def against(a: str, b: str) -> Comparison:
        ratios = [x / y for x, y in zip(rates[a], rates[b])]
        iv = of_repeats(ratios)
        return Comparison(float(np.exp(np.mean(np.log(ratios)))), iv.low if iv else 0.0, iv.high if iv else float("inf"))

    plain = losses["your batches"]
    worst = max((abs(v / plain - 1) if plain else abs(v) for v in losses.values()), default=0.0)
    if worst > LOSS_TOLERANCE:
        for lv in list(out.applied()):
            out.turn_off(lv.name, "turned back off: its loss on the same rows differs from your batches' by "
                                  f"{worst:.1%} (> {LOSS_TOLERANCE:.0%})")
        return {"line": f"verification: loss {plain:.4f} with your batches, {losses['levers']:.4f} padding-free: they "
                        "should agree, so every lever is off", "loss": losses}
    if "levers + compile" in arms:
        gain = against("levers + compile", "levers")
        if gain.ratio < 1 and not gain.tie:
            for name in COMPILES:
                out.turn_off(name, f"turned back off: {gain.text('compiled', 'eager')} here")
    final = "levers + compile" if any(out.on(name) for name in COMPILES) else "levers"
    total = against(final, "your batches")
    span = f"({total.low:.3f}-{total.high:.3f})" if np.isfinite(total.high) else "(no interval)"
    if total.tie or total.ratio < 1:
        # a tie buys nothing and the packs still regroup the rows a step holds: the script's batches, as written
        why = (f"a tie ({total.ratio:.2f}x {span}: its low end does not clear {1 + MIN_EFFECT:.2f}x), and packs "
               "would regroup your rows for no measured gain" if total.tie
               else f"the levers lost here ({total.ratio:.2f}x your batches)")
        for lv in [lv for lv in out.applied() if lv.name not in UNTIMED]:
            out.turn_off(lv.name, f"turned back off: {why}")
    kept = [lv.name for lv in out.applied() if lv.name not in UNTIMED]
    trimmed = any(lv.name in UNTIMED for lv in out.applied())
    mean = {arm: float(np.mean(r)) for arm, r in rates.items()}
    same_rows = (f"loss on the same rows and weights {plain:.4f} yours, {losses[final]:.4f} sped up "
                 f"({len(rates[final])} interleaved rounds{' after an untimed pass over them' if warmed else ''}, "
                 "before training")
    if kept:
        line = (f"forward+backward {total.ratio:.2f}x {span} on {out.device}: {', '.join(kept)} kept; {same_rows}; the "
                "packed arm timed on packs at least 90% full, training's partly filled ones not). Your whole step "
                f"gains less or more: its optimizer step, logging and data loading are outside this A/B"
                f"{', and so is the trim of the Trainer step overheads' if trimmed else ''} (your train_runtime tells)")
    else:
        line = (f"forward+backward {total.ratio:.2f}x {span} on {out.device}: "
                f"{'a tie' if total.tie else 'slower'}, so your batches stay as they are; {same_rows})")
    return {"line": line, "speedup": {"ratio": total.ratio, "low": total.low, "high": total.high, "tie": total.tie},
            "real_tokens_per_s": mean, "loss": losses, "kept": ", ".join(kept) or "none"}


def _fit_rounds(out: Speedup, n_rows: int, rounds: int, micro: int) -> tuple[int, int]:
    """As many timed rounds and micro-batches a round as the rows allow (a small data set gets fewer, at least two
    rounds of one micro-batch); fewer rows than that cannot be timed."""
    size = max(1, out.packing["rows_per_step_before"] // out.packing["grad_accum_before"])
    available = n_rows // size
    micro = max(1, min(micro, available // (rounds + 1)))
    rounds = min(rounds, available // micro - 1)
    if rounds < 2:
        raise TooFewRows(f"too few rows to time ({n_rows}: {available} of your micro-batches, 3 needed)")
    return rounds, micro


def _batches(trainer, out: Speedup, rows, rounds: int, micro: int) -> tuple[list, list]:
    """The script's micro-batches (its own collator, its own column handling), `micro` a round, and the levers' packs
    of the same rows for round 0; later rounds' packs come from the rest of the rows, full as training's are."""
    size = out.packing["rows_per_step_before"] // out.packing["grad_accum_before"]
    n = min(len(rows), size * micro * (rounds + 1))
    order = np.random.default_rng(0).permutation(len(rows))[:n]
    ds = trainer.train_dataset
    subset = ds.select(order) if hasattr(ds, "select") else torch.utils.data.Subset(ds, order.tolist())
    loader = trainer._get_dataloader(dataset=subset, description="Training", batch_size=size, is_training=False)
    mine = list(loader)
    plain = [mine[i * micro:(i + 1) * micro] for i in range(rounds + 1)]
    _, collator = out.batches
    budget = out.packing["tokens"]

    def packs_of(indices) -> list[list[int]]:
        return [[int(indices[j]) for j in p] for p in first_fit(rows.lengths[indices], budget, seed=0)]

    first = packs_of(order[: size * micro])
    rest = packs_of(order[size * micro:])
    full = [p for p in rest if rows.lengths[p].sum() >= FULL * budget] or rest
    per = max(1, len(full) // rounds)
    collate = lambda p: collator([{"pack": [rows.row(i) for i in p]}])  # noqa: E731
    packed = [[collate(p) for p in first]] + [[collate(p) for p in full[r * per:(r + 1) * per]] for r in range(rounds)]
    if any(not b for b in plain + packed):
        raise TooFewRows(f"too few rows to time ({len(rows)}: a round's packs came out empty)")
    return plain, packed


def _items(batch: dict, task: str) -> int:
    """What the loss averages over: rows (a classifier), or the tokens whose next token is scored (a causal LM)."""
    labels = batch["labels"]
    scored = labels != -100 if task == "classification" else labels[..., 1:] != -100
    return int(scored.sum())


def _real(batch: dict) -> int:
    if PACK_STATS in batch:
        return batch[PACK_STATS]["real"]
    mask = batch.get("attention_mask")
    return int(mask.sum()) if mask is not None else batch["input_ids"].numel()


def _checkpointing_as_training_has_it(trainer) -> None:
    """Activation checkpointing on now if the arguments ask for it (train() turns it on later anyway): the
    verification must not need more memory than training will."""
    args, model = trainer.args, trainer.model
    prefix = "activation" if hasattr(args, "activation_checkpointing") else "gradient"
    if not getattr(args, f"{prefix}_checkpointing", False):
        return
    kwargs = dict(getattr(args, f"{prefix}_checkpointing_kwargs", None) or {})
    # which layers checkpoint and where their activations go, as the Trainer passes them (transformers 5.2x); the
    # rest is torch.utils.checkpoint's
    layers = {k: kwargs.pop(k) for k in ("every_n_layers", "offload") if k in kwargs}
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs or None, **layers)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs or None)
