"""A sweep's cells predicted before any of them runs (sweep.plan=predict; one concern at ~370 lines: memory and
speed are read off the same copies in one loop): each cell's peak memory and its step time and real tokens/s,
from copies of its model with fewer layers: memory from 1- and 2-layer copies
(src/model/memory_model.py), speed from 2- and 4-layer ones (src/plan/speed_model.py). One process for the
whole grid, and cells that differ only in their batch settings (a family) share their copies: a grid costs
three small builds per family plus a few steps per cell. A cell predicted over the capacity is not timed.

Every family is timed before any kernel is profiled: torch's profiler leaves CUPTI hooked into every later kernel
launch (Kineto doesn't tear it down unless TEARDOWN_CUPTI=1), and a host-bound micro-batch timed after a profile
pays for it. So the speed copies are built again at the end, for their kernels alone.

    python -m src.plan.predict CELLS.json PREDICTIONS.json [--memory-only]
    # the launcher runs it; CELLS: [{"cell", "family", "config"}]; --memory-only for sweep.question=largest

A cell that can't be predicted (a whole-model compile, partial checkpointing, several GPUs, a model the copies
can't build) gets `why_not` and no figures; the planner runs it. A cell whose copy alone runs out of memory gets
`over_card`, and the planner doesn't run it.

The room is for one concern, the grid's prediction in one process, where the order of its steps (every family's
copies warmed and probed, then timed, then profiled) is the method, and reads best in one place.
"""
from __future__ import annotations

import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf

log = logging.getLogger("trainsweep.predict")


def why_not(cfg) -> str | None:
    """What the copies can't stand in for, or None."""
    tr = cfg.trainer
    if tr.torch_compile and tr.compile_scope == "model":
        return "a whole-model compile: the copies can't time its graph"
    if tr.gradient_checkpointing and tr.checkpoint_every > 1:
        return "trainer.checkpoint_every > 1: the copies checkpoint every layer or none"
    if cfg.distributed.nproc_per_job > 1:
        return "several processes per job: the copies time one"
    return None


def typical_batch(cfg, prep, seed: int = 0) -> tuple[list, float]:
    """A micro-batch as training sees it (the collator's input) and its real tokens: a middling pack, or
    batch.size rows drawn at random (neighbours in length order where the sampler groups by length)."""
    max_length = cfg.data.max_length
    if hasattr(prep.for_trainer, "packs"):
        packs = prep.for_trainer.packs[:32]
        sizes = [sum(min(len(prep.train[int(j)]["input_ids"]), max_length) for j in p) for p in packs]
        k = sorted(range(len(packs)), key=sizes.__getitem__)[len(packs) // 2]
        return [prep.for_trainer[k]], float(sizes[k])
    n, size = len(prep.train), min(cfg.batch.size, len(prep.train))
    lengths = [min(int(x), max_length) for x in prep.train["length"]] if "length" in prep.train.column_names else \
        [min(len(ids), max_length) for ids in prep.train["input_ids"]]
    if cfg.padding.strategy in ("grouped", "buckets"):
        order = sorted(range(n), key=lengths.__getitem__)
        start = max(0, n // 2 - size // 2)
        picked = order[start:start + size]
    else:
        picked = random.Random(seed).sample(range(n), size)
    return [prep.train[i] for i in picked], float(sum(lengths[i] for i in picked))


def new_shape_batches(rows: list[dict], collator, seen: set, count: int = 3) -> list[dict]:
    """`count` collated batches of the rows cut to widths of shapes not in `seen` (and added to it): what a run
    pays the first time it meets a shape, timed on batches like its own. The last row is cut one token shorter,
    so each batch carries padding and attention gets a mask, as a padded run's batches do."""
    multiple = collator.multiple or 8
    longest = max(len(r["input_ids"]) for r in rows)
    out, cap = [], (longest // multiple) * multiple
    while len(out) < count and cap > multiple:
        shape = (len(rows), collator._width(cap, collator.max_length))
        if shape not in seen:
            seen.add(shape)
            cut = [{**r, "input_ids": r["input_ids"][:cap - (i == len(rows) - 1)]} for i, r in enumerate(rows)]
            for r in cut:
                if "attention_mask" in r:
                    r["attention_mask"] = r["attention_mask"][:len(r["input_ids"])]
                if isinstance(r.get("labels"), list) and len(r["labels"]) > len(r["input_ids"]):  # causal LM labels
                    r["labels"] = r["labels"][:len(r["input_ids"])]
            out.append(collator(cut))
        cap -= multiple
    return out


def probe_plan(widest: list[dict]) -> dict[int, tuple[int, int]]:
    """Which cells' memory to interpolate, and between which two probed cells: activations are linear in the rows
    of a batch whose rows keep their shape, so of the cells whose widest batches differ only in rows, the fewest
    and the most rows are probed and those between read off the line. Cells absent from the answer are probed."""
    groups: dict[tuple, list[int]] = {}
    for i, batch in enumerate(widest):
        shape = tuple(sorted((k, tuple(v.shape[1:])) for k, v in batch.items() if hasattr(v, "shape")))
        groups.setdefault(shape, []).append(i)
    out = {}
    for members in groups.values():
        rows = {i: len(widest[i]["input_ids"]) for i in members}
        lo, hi = min(members, key=rows.__getitem__), max(members, key=rows.__getitem__)
        out.update({i: (lo, hi) for i in members if i not in (lo, hi) and rows[lo] < rows[i] < rows[hi]})
    return out


def _on_copy(fig: dict, layers: int, what: str, probe):
    """probe(), or None with the cell marked over the card where the copy alone runs out of memory: the whole
    model holds all the copy does and more, so the cell can't fit whatever the cap (on a 24 GB card, a 2-layer
    copy's probe at the largest micro-batches can), and the family's other cells are still predicted."""
    import torch

    if "over_card" in fig:
        return None
    try:
        return probe()
    except torch.OutOfMemoryError:
        fig["over_card"] = f"its {layers}-layer copy alone ran out of memory {what}"
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the predictor's own: the next probe starts from what is left
        return None


def time_family(cells: list[dict], memory_only: bool = False) -> dict:
    """The cells of one family (same model build, other batch settings) measured on one set of copies: each cell's
    memory, and its micro-batch timed on the speed copies (with memory_only, memory alone: the 1- and 2-layer
    copies, no speed timed). What family_predictions needs, once profile_kernels has added the kernels' time."""
    import torch

    from ..data import prepare, sampling
    from ..data.collate import to_device
    from ..machine import env
    from ..measure.meter import timed_window
    from ..model import build as models
    from ..model import memory_model as mm
    from . import speed_model

    # where the prediction's own time goes
    spent = {"data": 0.0, "copies": 0.0, "speed": 0.0, "new shapes": 0.0, "memory": 0.0, "kernels": 0.0}
    clock = time.perf_counter
    cfgs = [OmegaConf.create(c["config"]) for c in cells]
    t = clock()
    # not under gpu.memory_cap_gb: the cap is the run's, and the copies' figures are compared with it. Under it,
    # an H100 predictor ran out of its 10 GB on micro-batch 64's probes and lost a whole family's predictions.
    res = env.setup(OmegaConf.merge(cfgs[0], {"gpu": {"memory_cap_gb": None}}))
    conf = models.hf_config(cfgs[0])
    with tempfile.TemporaryDirectory() as tmp:  # labels.json lands here: the cell's own run writes its own
        preps = [prepare.prepare(cfg, conf, Path(tmp)) for cfg in cfgs]
    spent["data"] += clock() - t
    conf.update(preps[0].for_model)
    layers = getattr(conf, mm.layers_key(conf))
    capacity = mm.capacity_gb(cfgs[0], res.device)
    figures = [{} for _ in cells]
    t = clock()
    for fig, cfg, prep in zip(figures, cfgs, preps):  # the run's timed window: its real tokens, its new shapes
        warmup, last = timed_window(cfg.measure.warmup_steps, cfg.trainer.max_steps, cfg.measure.profile_steps,
                                    res.device == "cuda")
        lengths = [int(x) for x in prep.train["length"]] if "length" in prep.train.column_names else []
        fig["window"] = sampling.window(lengths, prep.collator, cfg.padding.strategy, cfg.batch.size,
                                        cfg.batch.grad_accum, warmup, last, cfg.data.seed)
        fig["new_shapes"] = fig["window"].new_shapes if fig["window"] else 0.0
        fig["timed_steps"] = last - warmup
    spent["new shapes"] += clock() - t
    seen: set = set()  # batch shapes this process has met: a first call is timed on shapes outside it
    t = clock()
    widest = [mm.widest_batch(cfg, conf, prep.collator, prep.info["lengths"], res.device) for cfg, prep in zip(cfgs, preps)]
    between = probe_plan(widest)
    spent["memory"] += clock() - t
    for fig, cfg, prep in zip(figures, cfgs, preps):
        sample, real = typical_batch(cfg, prep)
        fig["batch"] = prep.collator(sample)
        seen.add(tuple(fig["batch"]["input_ids"].shape))
        # the window's own rows where they can be drawn: a typical batch of 2 rows is +-10% off the mean
        fig["tokens_per_step"] = (fig["window"].real_per_micro_batch if fig["window"] else real) * cfg.batch.grad_accum
    speed_depths = () if memory_only else speed_model.copy_depths(layers)
    weights = []
    for n in sorted({1, 2, *speed_depths}):  # memory on the 1- and 2-layer copies, speed on speed_depths
        t = clock()
        model = mm.build_copy(cfgs[0], res, conf, n)
        if n <= 2:  # the parts by name (the gradients overlap the activations: memory_model.peak_parts)
            weights.append({**mm.weights_and_state(model), "largest_grad": mm.largest_gradient(model)})
        # one step first: a first call's one-off allocations (cuBLAS's workspace) stay out of the probes, and a
        # compiled copy is compiled (unwarmed, an H200's first 1-layer probe put a family 6% low at 2 rows)
        def warm():
            _on_copy({}, n, "warming up", lambda: speed_model.warm_up(model, figures[0]["batch"], res.amp, res.device))

        if n == 1:  # what that first step leaves allocated is in the run's peak too (memory_model.predict's workspace)
            _WORKSPACE["bytes"] = workspace = max(_WORKSPACE["bytes"], mm.first_step_workspace(res.device, warm))
        else:
            warm()
        spent["copies"] += clock() - t
        t = clock()
        if n == 1 and speed_depths and any(fig["new_shapes"] for fig in figures):  # a new shape's cost, once
            seen.update(tuple(w["input_ids"].shape) for w in widest)
            sample, _ = typical_batch(cfgs[0], preps[0])
            batches = [to_device(b, res.device) for b in new_shape_batches(sample, preps[0].collator, seen)]
            # a throwaway figure: a probe that runs out of memory costs the correction, not a cell
            first_calls = _on_copy({}, n, "timing a new shape", lambda: speed_model.first_call_s(
                model, batches, res.amp, res.device)) if batches else None
            for fig in figures:
                fig["first_calls"] = first_calls
        spent["new shapes"] += clock() - t
        t = clock()
        for i, (fig, cfg) in enumerate(zip(figures, cfgs)):
            if n <= 2 and i not in between:
                fig.setdefault("acts", []).append(_on_copy(fig, n, "on its widest batch", lambda: mm.activation_bytes(
                    cfg, res, model, widest[i])))
        if n == 2:
            _memory_at_depth(figures, widest, between, weights, layers, workspace, [c.batch.grad_accum for c in cfgs])
        spent["memory"] += clock() - t
        for fig in figures if n in speed_depths else ():
            if "over_card" in fig or "why_not" in fig or (capacity and fig.get("memory_gb", 0) > capacity):
                continue  # a cell that won't run is not timed: its micro-batches are the slowest to time
            t = clock()
            batch = to_device(fig["batch"], res.device)
            fig.setdefault("times", {})[n] = _on_copy(fig, n, "timing its micro-batch", lambda: speed_model.time_steps(
                model, batch, res.amp, res.device))
            fig.setdefault("gpu", {})[n] = None  # profile_kernels' figure, after every family is timed
            spent["speed"] += clock() - t
        del model
        if res.device == "cuda":
            torch.cuda.empty_cache()  # the next copy's figures start from what the run would have
    timed = [fig for fig in figures if "over_card" not in fig and speed_depths
             and all(n in fig.get("times", {}) for n in speed_depths)]
    return {"cells": cells, "cfgs": cfgs, "figures": figures, "timed": timed, "layers": layers, "res": res,
            "conf": conf, "capacity": capacity, "speed_depths": speed_depths, "spent": spent}


def profile_kernels(family: dict) -> None:
    """Each timed cell's kernel time per micro-batch on each speed copy (speed_model.gpu_busy_s), the copies built
    again and warmed as time_family built them: called once every family is timed, as a profile slows every
    kernel launch after it. Off a GPU gpu_busy_s has no figure, and every cell keeps its own line."""
    import torch

    from ..data.collate import to_device
    from ..model import memory_model as mm
    from . import speed_model

    res, timed = family["res"], family["timed"]
    if not timed:
        return
    t = time.perf_counter()
    for n in family["speed_depths"]:
        model = mm.build_copy(family["cfgs"][0], res, family["conf"], n)
        _on_copy({}, n, "warming up", lambda: speed_model.warm_up(model, timed[0]["batch"], res.amp, res.device))
        for fig in timed:
            batch = to_device(fig["batch"], res.device)
            probe = {}
            fig["gpu"][n] = _on_copy(probe, n, "timing its kernels", lambda: speed_model.gpu_busy_s(
                model, batch, res.amp, res.device))  # out of memory here: no kernel time, the cell's own line
            if fig["gpu"][n] is None:  # the cell keeps its own line, and its prediction says why
                fig.setdefault("not_measured", {})[f"micro_batch_s.kernels ({n}-layer copy)"] = (
                    f"could not check: {probe['over_card']}" if "over_card" in probe
                    else "not measured: no GPU" if res.device != "cuda"
                    else "could not check: the profiler gave no kernel times (predict.log says why)")
        del model
        if res.device == "cuda":
            torch.cuda.empty_cache()
    family["spent"]["kernels"] += time.perf_counter() - t


def family_predictions(family: dict) -> list[dict]:
    """The family's cells predicted at the real depth: memory, step time and real tokens/s with their intervals,
    the family's pooled host time where a cell is host-bound."""
    from . import speed_model

    cells, cfgs, figures, timed = family["cells"], family["cfgs"], family["figures"], family["timed"]
    layers, speed_depths, capacity = family["layers"], family["speed_depths"], family["capacity"]
    # the host's time per micro-batch is the family's: every host-bound cell's blocks are samples of it
    host = tuple(speed_model.host_time([(fig["times"][n], fig["gpu"][n]) for fig in timed]) for n in speed_depths)
    host_line = speed_model.line(host[0].mean, host[1].mean, layers, speed_depths) if host and None not in host else None
    log.info("%s: %d cells predicted in %s", cells[0]["family"] or "the cells", len(cells),
             ", ".join(f"{k} {v:.1f} s" for k, v in family["spent"].items()))
    out = []
    for cell, cell_cfg, fig in zip(cells, cfgs, figures):
        said = {"cell": cell["cell"], "family": cell["family"], "capacity_gb": capacity}
        if "over_card" in fig or "why_not" in fig:
            out.append({**said, "over_card": fig.get("over_card"), "why_not": fig.get("why_not")})
            continue
        if not any(fig is x for x in timed):  # predicted over the capacity, or memory_only: no speed timed
            out.append({**said, "memory_gb": fig["memory_gb"], "real_tokens_per_s": None, "why_not": None})
            continue
        shallow, deep = speed_depths
        step = speed_model.at_depth(fig["times"][shallow], fig["times"][deep], layers, cell_cfg.batch.grad_accum,
                                    fig["new_shapes"] / max(1, fig["timed_steps"]), fig.get("first_calls"), host=host,
                                    gpu=(fig["gpu"][shallow], fig["gpu"][deep]), depths=speed_depths)
        rate, low, high = step.rate(fig["tokens_per_step"])
        kernels = (speed_model.line(fig["gpu"][shallow], fig["gpu"][deep], layers, speed_depths)
                   if None not in (fig["gpu"][shallow], fig["gpu"][deep]) else None)
        out.append({**said, "memory_gb": fig["memory_gb"], "step_s": step.step_s, "real_tokens_per_s": rate, "low": low,
                    "high": high, "new_shapes": fig["new_shapes"], "first_call_s": fig.get("first_calls"),
                    "bound": step.bound, "micro_batch_s": {"host": host_line, "kernels": kernels}, "why_not": None,
                    **({"not_measured": fig["not_measured"]} if fig.get("not_measured") else {})})
    return out


# The largest first-step workspace this process has measured. A run allocates cuBLAS's workspace at its own first
# step; this process keeps it from its first family on, so a later family's warm-up finds it in place and leaves
# less: each family takes the larger of its own figure and the largest before it.
_WORKSPACE = {"bytes": 0}


def _memory_at_depth(figures: list[dict], widest: list[dict], between: dict, weights: list[dict], layers: int,
                     workspace: float, grad_accums: list[int]) -> None:
    """Each cell's predicted peak at the real depth (memory_gb), from its probes on the 1- and 2-layer copies or
    the line between two probed cells (probe_plan), summed as memory_model.predict sums the run's (peak_parts,
    the first step's workspace included)."""
    from ..model import memory_model as mm

    rows = [len(w["input_ids"]) for w in widest]
    for i, (lo, hi) in between.items():
        if "over_card" in figures[lo] or "over_card" in figures[hi]:  # said, and the cell runs
            figures[i]["why_not"] = "its memory lies between two probes, and one ran out of memory"
        else:
            figures[i]["acts"] = [mm.interpolate(a, b, rows[lo], rows[hi], rows[i])
                                  for a, b in zip(figures[lo]["acts"], figures[hi]["acts"])]
    one, two = weights
    largest = two["largest_grad"]  # the same at any depth: the embedding's, or the head's
    fixed = {k: one[k] + (two[k] - one[k]) * (layers - 1) for k in one if k != "largest_grad"}
    for i, fig in enumerate(figures):
        if "over_card" not in fig and "why_not" not in fig:
            per_layer, outside = mm.at_depth(fig["acts"][0], fig["acts"][1], layers)
            fig["memory_gb"] = sum(mm.peak_parts(fixed, per_layer * layers + outside, workspace, grad_accums[i],
                                                 **mm.copy_gradients(fig["acts"][0], fig["acts"][1], largest, layers)).values())


def predict(cells: list[dict], memory_only: bool = False) -> list[dict]:
    """Every cell, family by family; a family that fails is said, never dropped."""
    from ..config import compose  # noqa: F401  (the resolvers a config left unresolved may name)
    families: dict[str, list[dict]] = {}
    out = []
    for cell in cells:
        reason = why_not(OmegaConf.create(cell["config"]))
        if reason:
            out.append({"cell": cell["cell"], "family": cell["family"], "why_not": reason})
        else:
            families.setdefault(cell["family"], []).append(cell)
    timed = {}
    for family, members in families.items():
        try:
            timed[family] = time_family(members, memory_only)
        except Exception as exc:  # the cells run instead, and say why they weren't predicted
            out += _not_predicted(family, members, exc)
    for family, measured in timed.items():  # every family timed before any profile (the module's docstring)
        try:
            profile_kernels(measured)
            out += family_predictions(measured)
        except Exception as exc:
            out += _not_predicted(family, measured["cells"], exc)
    return out


def _not_predicted(family: str, members: list[dict], exc: Exception) -> list[dict]:
    log.warning("no prediction for %s: %s: %s", family or "the cells", type(exc).__name__, exc)
    why = f"{type(exc).__name__}: {str(exc)[:200]}"
    return [{"cell": c["cell"], "family": family, "why_not": why} for c in members]


def main(argv: list[str]) -> None:
    started = time.perf_counter()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cells = json.loads(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(predict(cells, memory_only="--memory-only" in argv[2:]), indent=1))
    log.info("the predictor's process: %.1f s in all, its imports of torch and the model code included",
             time.perf_counter() - started)


if __name__ == "__main__":
    main(sys.argv[1:])
