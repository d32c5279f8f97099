"""sweep.plan=predict, run through the `isolated` launcher (hydra_plugins/trainsweep/launcher.py, which hands
over its jobs and runs each one): every cell predicted first (one `python -m src.plan.predict` process), the
predicted table printed, then the cells run in waves as waves.py decides, and every cell's prediction and
decision (decisions.py) kept in its directory (prediction.json, which the summary reads).

A sweep where nothing can be predicted (no GPU, sweep.repeats > 1, the predictor failing) runs every cell,
and says why, in the log and in the sweep's plan.json, which the summary names. A cell without a prediction
always runs.
"""
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..report import files as report_files
from ..report.caveats import PLAN_FILE
from . import decisions as decide
from . import estimate
from . import waves

log = logging.getLogger(__name__)
BATCH_KEYS = ("batch=", "batch.size=", "batch.grad_accum=", "batch.tokens=")


def family(overrides) -> str:
    """The cell's settings other than its batch ones: cells of one family share a model build."""
    return " ".join(sorted(o for o in overrides if not o.startswith(BATCH_KEYS)))


def predict(cells: dict, plan_dir: Path, memory_only: bool = False) -> list[dict] | None:
    """The predictor's answer for every cell, or None (said) where it failed. memory_only: no speed is timed."""
    plan_dir.mkdir(parents=True, exist_ok=True)
    (plan_dir / "cells.json").write_text(json.dumps([
        {"cell": key, "family": family(c["overrides"]), "config": c["config"]} for key, c in cells.items()]))
    package = __name__.rsplit(".", 1)[0]  # src.plan in a checkout, trainsweep.plan installed
    cmd = [sys.executable, "-m", f"{package}.predict", str(plan_dir / "cells.json"), str(plan_dir / "predictions.json")]
    cmd += ["--memory-only"] if memory_only else []
    with open(plan_dir / "predict.log", "w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
    if done.returncode != 0:
        log.warning("sweep.plan=predict: the predictor failed (exit %s, %s): every cell runs",
                    done.returncode, plan_dir / "predict.log")
        return None
    return json.loads((plan_dir / "predictions.json").read_text())


def micro_batch(config: dict) -> int | None:
    """A cell's micro-batch: a pack's token budget, or rows."""
    batch = config.get("batch") or {}
    size = batch.get("tokens") if (config.get("padding") or {}).get("strategy") == "packed" and batch.get("tokens") else batch.get("size")
    return size if isinstance(size, int) else None


def as_prediction(raw: dict, size: int | None = None) -> waves.Prediction:
    rate = raw.get("real_tokens_per_s")
    low, high = (min(raw["low"], rate), max(raw["high"], rate)) if rate else (None, None)  # a log-scale interval
    return waves.Prediction(cell=raw["cell"], family=raw["family"], memory_gb=raw.get("memory_gb"), tok_s=rate,
                           low=low, high=high, why_not=raw.get("why_not"), size=size, over_card=raw.get("over_card"))


def measured(key: str, job_dir: Path) -> waves.Measured:
    rep = report_files.read(job_dir / "report.json")
    if rep is None:
        return waves.Measured(key, "error")
    th = rep.throughput
    rate = th.real_tokens_per_s if th and rep.status == "ok" else None
    low, high = (th.real_tokens_per_s_low, th.real_tokens_per_s_high) if rate and th.real_tokens_per_s_low else (None, None)
    verdict = rep.get("verdict")
    saturated = bool(verdict and verdict.saturated)  # the summary ranks such a cell apart
    return waves.Measured(key, rep.status, rate or None, low, high, saturated)


def line(raw: dict, decision: str) -> str:
    if raw.get("why_not"):
        return f"no prediction ({raw['why_not']})"
    if raw.get("over_card"):
        return decision
    if raw.get("real_tokens_per_s") is None:  # not timed: predicted over the capacity, or sweep.question=largest
        return f"{raw['memory_gb']:.1f} GB" + (f"; {decision}" if decision else "")
    # decision: decisions.not_run's line for a cell predicted out of memory, else empty
    missing = "; ".join(f"{key} {why}" for key, why in (raw.get("not_measured") or {}).items())  # e.g. no kernel times
    return (f"{raw['memory_gb']:.1f} GB, {raw['real_tokens_per_s']:,.0f} ({raw['low']:,.0f}-{raw['high']:,.0f}) "
            f"real tok/s{'; ' + decision if decision else ''}{'; ' + missing if missing else ''}")


def _every_cell(why: str) -> str:
    log.info(f"sweep.plan=predict: {why}: every cell runs")
    return why


def record(sweep_dir: Path, asked: str, fell_back: str | None = None) -> None:
    """The sweep's plan.json: the plan asked for, the one used, and why they differ, for the summary to name."""
    used = "all" if fell_back else asked
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / PLAN_FILE).write_text(json.dumps({"asked": asked, "used": used, "why": fell_back}, indent=1))


def load_cells(launcher, job_overrides, first_idx: int = 0) -> dict:
    """Each job's directory name -> its index, overrides, directory and config as plain data, composed as the
    launcher composes the job (what the predictor and the estimate read)."""
    cells = {}
    for idx, overrides in enumerate(job_overrides, start=first_idx):
        job_cfg = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        job_dir = Path(str(job_cfg.hydra.sweep.dir)) / str(job_cfg.hydra.sweep.subdir)
        body = OmegaConf.masked_copy(job_cfg, [k for k in job_cfg if k != "hydra"])  # hydra's own resolve only in a job
        try:
            config = OmegaConf.to_container(body, resolve=True)
        except OmegaConfBaseException:  # the job itself will say what doesn't resolve; the predictor resolves the rest
            config = OmegaConf.to_container(body, resolve=False)
        cells[job_dir.name] = {"idx": idx, "overrides": list(overrides), "config": config, "dir": job_dir}
    return cells


def estimate_first(launcher, job_overrides, first_idx: int = 0) -> list[str]:
    """Where no GPU predicts the sweep and it trains many rows (estimate.worth_it), its duration estimated and
    logged before the first job (src/plan/estimate.py, in a process of its own as the predictor is); the
    lines logged, none for a sweep with a GPU or a small one. The jobs run as asked whatever it says."""
    if launcher.params.get("gpus_per_node"):
        return []
    try:
        cells = load_cells(launcher, job_overrides, first_idx)
    except Exception as exc:  # a job that can't compose says so itself when it runs: no estimate, never no sweep
        log.warning("sweep estimate: none (%s: %s)", type(exc).__name__, exc)
        return []
    # a rerun of a finished sweep skips its finished jobs: they cost nothing to estimate (a changed config's report
    # runs again, and is left out here all the same: an estimate, not the launcher's check)
    cells = {key: c for key, c in cells.items() if c["config"].get("rerun") is True
             or getattr(report_files.read(c["dir"] / "report.json"), "status", None) not in ("ok", "oom")}
    if not estimate.worth_it([c["config"] for c in cells.values()], launcher.repeats):
        return []
    for c in cells.values():
        c["family"] = family(c["overrides"])
    plan_dir = Path(str(launcher.config.hydra.sweep.dir)) / ".plan"
    plan_dir.mkdir(parents=True, exist_ok=True)
    (plan_dir / "estimate_cells.json").write_text(json.dumps([
        {"cell": key, "family": c["family"], "config": c["config"]} for key, c in cells.items()]))
    log.info("sweep estimate: no GPU here, so each family's micro-batch is timed on this CPU first (a build and a "
             "few micro-batches: about a minute on a small CPU)")
    cmd = [sys.executable, "-m", f"{__name__.rsplit('.', 1)[0]}.estimate", str(plan_dir / "estimate_cells.json"),
           str(plan_dir / "estimate.json")]
    try:
        with open(plan_dir / "estimate.log", "w") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy(),
                                  timeout=estimate.TIMEOUT_S)
        timed = json.loads((plan_dir / "estimate.json").read_text()) if done.returncode == 0 else {}
        why = None if done.returncode == 0 else f"its process failed, {plan_dir / 'estimate.log'}"
    except subprocess.TimeoutExpired:
        timed, why = {}, f"timing one family took over {estimate.TIMEOUT_S} s: each job pays as much to build"
    if why:
        timed = {c["family"]: {"why_not": why} for c in cells.values()}
    said = estimate.lines(cells, timed, launcher.repeats)
    for line in said:
        log.info(line)
    return said


def run_planned(launcher, job_overrides, first_idx: int):
    """The planned sweep's JobReturns, or, where every cell must run, why (logged; the launcher records it)."""
    if launcher.repeats > 1:
        return _every_cell("sweep.repeats is above 1 (repeats settle close calls a plan skips)")
    if not launcher.params.get("gpus_per_node") and not launcher.predict_on_cpu:
        return _every_cell("no GPU here, so no cell can be predicted")
    cells = load_cells(launcher, job_overrides, first_idx)
    started = time.monotonic()
    question = launcher.question
    plan_dir = Path(str(launcher.config.hydra.sweep.dir)) / ".plan"
    raw = predict(cells, plan_dir, memory_only=question == "largest")
    if raw is None:
        return f"the predictor failed (its log: {plan_dir / 'predict.log'})"
    raw = {r["cell"]: r for r in raw}
    preds = [as_prediction(r, micro_batch(cells[key]["config"])) for key, r in raw.items()]
    capacity = next((r["capacity_gb"] for r in raw.values() if r.get("capacity_gb")), None)
    skipped = decide.not_run(preds, capacity)
    log.info(f"sweep.plan=predict: {len(cells)} cells predicted in {time.monotonic() - started:.0f} s"
             + (f" (capacity {capacity:.1f} GB)" if capacity else ""))
    for key, c in cells.items():
        log.info(f"\t{' '.join(c['overrides'])}: {line(raw[key], skipped.get(key, ''))}")
    results, returns = [], []
    wave = waves.first_wave(preds, capacity, launcher.top, question)
    while wave:
        for key in wave:
            c = cells[key]
            returns += launcher.run_job(c["idx"], c["overrides"])
            results.append(measured(key, c["dir"]))
        wave = waves.next_wave(preds, results, capacity, launcher.top, question)
    decisions = decide.decisions(preds, results, capacity, question)
    ran = {m.cell for m in results}
    largest = waves.largest_fits(preds, results, capacity) if question != "fastest" else {}
    for fam, key in largest.items():
        confirmed = "ran ok" if any(m.cell == key and m.status == "ok" for m in results) else decisions[key]
        log.info(f"sweep.plan=predict: largest micro-batch predicted to fit{' (' + fam + ')' if fam else ''}: "
                 f"{micro_batch(cells[key]['config'])} ({raw[key]['memory_gb']:.1f} GB"
                 f"{f' of {capacity:.1f}' if capacity else ''}; {confirmed})")
    for key, c in cells.items():
        c["dir"].mkdir(parents=True, exist_ok=True)
        (c["dir"] / "prediction.json").write_text(json.dumps(
            {"overrides": c["overrides"], "config": c["config"], "prediction": raw[key], "decision": decisions[key],
             "largest_fit": key in largest.values()}, indent=1))
        if key not in ran:
            log.info(f"\t#{c['idx']} : {' '.join(c['overrides'])}: {decisions[key]}")
            returns.append(launcher._completed(c["overrides"], c["dir"], None))
    log.info(f"sweep.plan=predict: {len(ran)} of {len(cells)} cells ran")
    return returns
