"""A sweep's duration estimated before its first job, where no GPU can predict it (sweep.plan=predict times its
copies on a GPU): on a CPU a sweep's work hides in its effective batches. `-m sweep=fit` on the tiny model runs
64 rows a step in every cell (bs 1 x ga 64 took 25-44 s a step on a shared 2-core CPU) and took about an hour
with nothing said before it (issue 51). Nothing the user asked is changed: the estimate is printed, with what
would cut it.

On a CPU a micro-batch's time is close to a line in its rows (the host does the work, row by row), so each
family of cells (the same model build, other batch settings) is timed once, in one process as the predictor is:
its model built as the job builds it, then a micro-batch of 1 row and one of up to PROBE_ROWS rows timed on it
(speed_model.time_steps), and the line between them gives every cell's micro-batch. A job is then its process's
fixed cost (imports, data, build: what the estimate's own process took before timing) and its steps, each
grad_accum micro-batches and an AdamW step.

    python -m src.plan.estimate CELLS.json ESTIMATE.json   # the launcher runs it; CELLS as src/plan/predict.py's
"""
from __future__ import annotations

import json
import logging
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("trainsweep.estimate")

ESTIMATE_ROWS = 2000  # a sweep training more rows than this (about four main jobs, ~4 min on 2 cores) is estimated
PROBE_ROWS = 8  # the wider probe: past it the line is extrapolated (a CPU's per-row time holds to 64 rows)
TIMEOUT_S = 300  # a probe slower than this says more than an estimate would: every job would pay its build


def rows_per_job(config: dict) -> int | None:
    """The rows a job trains on: steps x batch.size x grad_accum; None where its size isn't in rows (a token
    budget) or its steps come from the data (trainer.epochs)."""
    batch, trainer = config.get("batch") or {}, config.get("trainer") or {}
    size, accum, steps = batch.get("size"), batch.get("grad_accum"), trainer.get("max_steps")
    if (config.get("padding") or {}).get("strategy") == "packed" or trainer.get("epochs"):
        return None
    if not all(isinstance(x, int) for x in (size, accum, steps)):
        return None
    return size * accum * steps


def worth_it(configs: list[dict], repeats: int = 1) -> bool:
    """Whether the sweep trains enough rows to be estimated first (the probe costs one job's build)."""
    return repeats * sum(rows_per_job(c) or 0 for c in configs) > ESTIMATE_ROWS


def job_seconds(config: dict, family: dict) -> float | None:
    """A job's estimated seconds from its family's timing ({"fixed_s", "a", "b", "optimizer_s"}: a micro-batch of
    r rows takes a + b r)."""
    rows = rows_per_job(config)
    if rows is None or not family or family.get("why_not"):
        return None
    batch, steps = config["batch"], config["trainer"]["max_steps"]
    micro = family["a"] + family["b"] * batch["size"]
    # one more micro-batch before the first step: the preflight's forward and backward (diagnostics.enabled)
    return family["fixed_s"] + micro + steps * (batch["grad_accum"] * micro + family["optimizer_s"])


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _names(cells: dict) -> dict[str, str]:
    """Each job by the overrides that set it apart (batch.size=1), not those every job shares (sweep=fit)."""
    given = {key: list(c["overrides"]) for key, c in cells.items()}
    shared = set.intersection(*(set(o) for o in given.values())) if len(given) > 1 else set()
    return {key: " ".join(o for o in overrides if o not in shared) or key for key, overrides in given.items()}


def lines(cells: dict, timed: dict, repeats: int = 1) -> list[str]:
    """The printed estimate: the sweep's total, its longest job, and what would cut it; each job's own figure."""
    names = _names(cells)
    per_job = {key: job_seconds(c["config"], timed.get(c["family"]) or {}) for key, c in cells.items()}
    known = {k: v for k, v in per_job.items() if v is not None}
    if not known:
        why = next((f.get("why_not") for f in timed.values() if f.get("why_not")), "no cell's work is in rows")
        return [f"sweep estimate: none ({why}); the sweep runs as asked"]
    total = repeats * sum(known.values())
    longest = max(known, key=known.get)
    c = cells[longest]["config"]
    shape = f"bs {c['batch']['size']} x ga {c['batch']['grad_accum']} x {c['trainer']['max_steps']} steps"
    stops = any((cells[k]["config"].get("measure") or {}).get("stop_when_stable") for k in known)
    out = [f"sweep estimate (no GPU: each family timed on this CPU): {len(cells) * repeats} jobs, "
           f"{'up to ' if stops else 'about '}{_minutes(total)} in all"
           + (f" ({len(cells) - len(known)} jobs not estimated)" if len(known) < len(cells) else "")
           + f"; the longest, {names[longest]} ({shape}): ~{_minutes(known[longest])}",
           "every job runs as asked; to spend less: fewer steps (trainer.max_steps=N), a smaller effective batch "
           "(batch.grad_accum), fewer cells, or a GPU (where sweep.plan=predict runs only the cells that could win)"]
    out += [f"\t{names[k]}: ~{_minutes(v)}" for k, v in known.items()]
    return out


def time_family(cells: list[dict], imports_s: float = 0.0) -> dict:
    """The family's fixed cost (imports_s, what a job's process pays to import torch and the model code, and
    its own setup) and its micro-batch line, timed on its model as the job builds it (predict.py's setup: env,
    data, the build at full depth)."""
    started = time.perf_counter() - imports_s
    from omegaconf import OmegaConf

    from ..config import compose  # noqa: F401  (the resolvers a config left unresolved may name)
    from ..data import prepare
    from ..data.collate import to_device
    from ..machine import env
    from ..model import build as models
    from ..model import memory_model as mm
    from . import speed_model
    from .predict import typical_batch

    cfg = OmegaConf.create(cells[0]["config"])
    res = env.setup(cfg)
    conf = models.hf_config(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        prep = prepare.prepare(cfg, conf, Path(tmp))
    conf.update(prep.for_model)
    model = mm.build_copy(cfg, res, conf, getattr(conf, mm.layers_key(conf)))
    fixed = time.perf_counter() - started
    widest = max(OmegaConf.create(c["config"]).batch.size for c in cells)
    probes = sorted({1, min(PROBE_ROWS, widest, len(prep.train))})
    times = {}
    for rows in probes:
        sample, _ = typical_batch(OmegaConf.merge(cfg, {"batch": {"size": rows}}), prep)
        batch = to_device(prep.collator(sample), res.device)
        speed_model.warm_up(model, batch, res.amp, res.device)
        times[rows] = speed_model.time_steps(model, batch, res.amp, res.device, blocks=3, steps=1, min_block_s=0.0)
    med = {r: sorted(b.micro_batch for b in blocks)[1] for r, blocks in times.items()}
    lo, hi = probes[0], probes[-1]
    b = (med[hi] - med[lo]) / (hi - lo) if hi > lo else 0.0
    optimizer = sorted(x.optimizer for blocks in times.values() for x in blocks)
    return {"fixed_s": fixed, "a": med[lo] - b * lo, "b": max(0.0, b), "optimizer_s": optimizer[len(optimizer) // 2],
            "probes": {str(r): med[r] for r in probes}}


def estimate(cells: list[dict]) -> dict:
    """family -> its timing, or {"why_not"} where it could not be timed (said, never raised)."""
    started = time.perf_counter()
    from ..model import build  # noqa: F401  (torch, transformers and peft: every job's process imports them first)

    imports_s = time.perf_counter() - started
    families: dict[str, list[dict]] = {}
    for cell in cells:
        families.setdefault(cell["family"], []).append(cell)
    out = {}
    for family, members in families.items():
        try:
            out[family] = time_family(members, imports_s)
        except Exception as exc:  # the sweep runs all the same; the estimate says it has none
            log.warning("no estimate for %s: %s: %s", family or "the cells", type(exc).__name__, exc)
            out[family] = {"why_not": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return out


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cells = json.loads(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(estimate(cells), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
