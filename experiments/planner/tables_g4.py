"""The tables of experiments/planner/README.md from G4 (largest, fastest), the fastest of 5 splits, the saved
batch_vs_accum preset, and the vCPU drift measurements."""
from __future__ import annotations

import gzip
import json
import re
from datetime import datetime
from statistics import correlation, fmean, median

from experiments.figures import HERE, _records, markdown, over, row_call


G4 = "planner/results/h200_g4/"
_JOB = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[HYDRA\] \t#\d+ : (.*)$")
_WALL = re.compile(r"^(\S+): exit (\d+), sweep wall time (\d+) s$")


def _sweeps(*logs: str) -> dict[str, list[dict]]:
    """Each sweep of G4's device calls (gpu.sh's planner.log), every time it ran: its wall time as gpu.sh timed it,
    whether it was cut (exit 124), and each job that ran to the end: its seconds from its start line to its status
    line. A job cut with its sweep has no status line, and a job finished in an earlier call is 'skipped': neither
    is counted."""
    out, jobs, started = {}, {}, {}
    for log in logs:
        for line in (HERE / log).read_text().splitlines():
            if m := _WALL.match(line):
                out.setdefault(m[1], []).append({"wall_s": int(m[3]), "cut": m[2] == "124", "jobs": jobs, "log": log})
                jobs, started = {}, {}
            elif m := _JOB.match(line):
                at, text = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f"), m[2]
                opened = next((t for t in started if text.startswith(t + ": ")), None)
                if opened is not None:
                    if not text.endswith("skipped"):
                        jobs[opened] = (at - started.pop(opened)).total_seconds()
                elif not text.endswith("skipped"):
                    started[text] = at
    return out


def _g4_reports(path: str) -> dict[tuple[str, int, int], dict]:
    return {(r["config"]["model"]["name"], r["config"]["batch"]["size"], r["config"]["batch"]["grad_accum"]): r
            for r in _records(path)}


# G4's sweeps: (their folder, the question as the table names it, its files' name, the calls' logs, the planned
# sweep's label, plan=all's labels). Calls 1-3 ran on one machine, call 4 on a later one.
G4_SWEEPS = ((G4, "largest", "largest", ("call1_planner.log", "call2_planner.log"),
              "g4_largest_solar-10.7b_polyglot-ko-12.8b_predict", ("g4_largest_solar-10.7b_all", "g4_largest_polyglot-ko-12.8b_all")),
             (G4, "fastest (top 3)", "fastest", ("call3_planner.log",), "g4_fastest_llama3.2-3b_predict", ("g4_fastest_llama3.2-3b_all",)),
             (G4, "fastest (leader)", "fastest_leader", ("call4_planner.log",), "g4_fastest_llama3.2-3b_predict",
              ("g4_fastest_llama3.2-3b_all",)))
FASTEST5 = "planner/results/h200_fastest5/"
# Call 9, the fastest of 5 splits: calls 1 and 2 on one machine; call 3, the predictor timing every family before
# any profile, on another, where plan=all ran 3 of the 5 cells (logs None: no times row).
FASTEST5_SWEEPS = ((FASTEST5, "calls 1-2: profiled between timings", "fastest5", ("call1_planner.log", "call2_planner.log"),
                    "g4_fastest_llama3.2-3b_1_2_4_8_16_predict", ("g4_fastest_llama3.2-3b_1_2_4_8_16_all",)),
                   (FASTEST5, "call 3: timed before profiling", "fastest5_fixed", None, None, None))

PRESET = "planner/results/h200_preset/"
# Call 10: the saved batch_vs_accum sweep's own grid, planned (call 1) and every cell (cut in call 1, finished in
# call 2 on the same machine)
PRESET_SWEEPS = ((PRESET, "sweep=batch_vs_accum", "preset", ("call1_planner.log", "call2_planner.log"), "plan_predict",
                  ("plan_all",)),)


def planner_g4(sweeps=G4_SWEEPS) -> str:
    """G4's cells: the planner's prediction and decision, and what each plan measured: status, peak allocated GB and
    its ratio to the prediction, real tok/s (and its ratio to the prediction, where speed was predicted)."""
    rows = []
    for folder, question, name, *_ in sweeps:
        predicted = {r["job"]: r for r in _records(folder + f"decisions_{name}.jsonl")}
        planned, every = (_g4_reports(folder + f"reports_{name}_{plan}.jsonl") for plan in ("predict", "all"))
        for (model, size, accum), r in sorted(every.items()):
            p = predicted[r["label"]]["prediction"]
            cells = []
            for m in (planned.get((model, size, accum)), r):
                if m is None:
                    cells += ["", ""]
                elif m["status"] != "ok":
                    cells += [m["status"], ""]
                else:
                    th, peak = m["throughput"], m["memory_gb"]["peak_allocated"]
                    low, rate = th.get("real_tokens_per_s_low"), th["real_tokens_per_s"]
                    # measured over predicted: the measurement's call against the prediction's, labelled where they
                    # differ (plan=all cut in one call and resumed in the next)
                    calls = (row_call(m), row_call(predicted[r["label"]]))
                    cells += [f"{peak:.2f} ({over(peak, p['memory_gb'], *calls, '.3f', across_calls=True)})",
                              f"{rate:,.0f}" + (f" ({low:,.0f}-{th['real_tokens_per_s_high']:,.0f})" if low else "")
                              + (f"; {over(rate, p['real_tokens_per_s'], *calls, bold=True, across_calls=True)}"
                                 if p.get("real_tokens_per_s") else "")]
            rate = (f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f}), {p['bound'] or 'own line'}"
                    if p.get("real_tokens_per_s") else "not timed")
            decision = predicted[r["label"]]["decision"]
            said = ("ran" if decision.startswith("ran") else "predicted out of memory" if decision.startswith("predicted")
                    else "not run: smaller" if "below the largest" in decision else "not run: slower")
            rows.append([question, model, f"{size} x {accum}", f"{p['memory_gb']:.2f}", rate,
                         said, *cells])
    return markdown(["question", "model", "micro-batch x ga", "predicted GB", "predicted real tok/s (range), bound",
                     "plan=predict: decision", "plan=predict: peak GB (/ predicted)", "real tok/s (95%); / predicted",
                     "plan=all: peak GB (/ predicted)", "real tok/s (95%); / predicted"], rows)


def planner_g4_times(sweeps=G4_SWEEPS) -> str:
    """G4's wall times: the planned sweep as gpu.sh timed it against the brute force's jobs (the same grid with
    sweep.plan=all in the same calls, some of it cut and resumed in the next call): its finished jobs' own seconds
    plus one sweep's start."""
    rows = []
    for folder, question, name, logs, planned_label, all_labels in sweeps:
        if logs is None:  # plan=all did not run every cell on that machine
            continue
        logged = _sweeps(*(folder + log for log in logs))
        plan = logged[planned_label][0]
        runs = [run for label in all_labels for run in logged[label]]
        jobs = [t for run in runs for t in run["jobs"].values()]
        # a sweep's own start (launcher, job dirs): the wall time of a sweep that ran whole in one call less its
        # jobs; where every sweep was cut once, the resumed run's (its skipped jobs cost a fraction of a second)
        whole = [logged[label][0] for label in all_labels if len(logged[label]) == 1 and not logged[label][0]["cut"]]
        start = fmean(run["wall_s"] - sum(run["jobs"].values()) for run in whole or [r for r in runs if not r["cut"]])
        predictor = float(re.search(r"process: ([\d.]+) s", (HERE / folder / f"predict_{name}.log").read_text())[1])
        rows.append([question, ", ".join(log.split("_")[0].replace("call", "") for log in logs),
                     f"{len(plan['jobs'])} of {len(jobs)}", f"{plan['wall_s']} (predictor {predictor:.0f})",
                     f"{sum(jobs):.0f} + {start:.0f}", over(plan["wall_s"], sum(jobs) + start, {plan["log"]},
                                                            {run["log"] for run in runs}, bold=True, across_calls=True)])
    return markdown(["question", "call", "cells run", "plan=predict: wall s", "plan=all: jobs' s + a sweep's start",
                     "planned / all"], rows)


VCPU = PRESET + "vcpu/"


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1))]


def planner_vcpu() -> str:
    """vcpu_drift.py: the same pure-Python work timed on each vCPU alone, on all at once, and on all at light load,
    on one-GPU machines (calls 1 and 3) and a two-GPU one (call 4, 32 vCPUs); a timing is slow above 1.3x the 10th
    percentile of call 1's alone phase (the fast mode). The vCPUs' slow states are compared over 0.5 s windows of
    the together phase: their median pairwise correlation."""
    def gzipped(path: str) -> list[dict]:
        with gzip.open(HERE / path, "rt") as f:
            return [r for r in map(json.loads, f) if "ms" in r]

    call1, x2 = gzipped(VCPU + "vcpu_drift.jsonl.gz"), gzipped(VCPU + "x2/vcpu_drift.jsonl.gz")
    sparse = [r for r in _records(VCPU + "vcpu_sparse.jsonl") if "ms" in r]
    fast = _quantile([r["ms"] for r in call1 if r["phase"] == "alone"], 0.1)
    rows = []
    for call, phase, how, data in (("1", "alone", "one vCPU at a time, 2 s each, the others idle", call1),
                                   ("1", "together", "all 16 busy at once, 20 s", call1),
                                   ("3", "sparse", "all 16 at once, one timing each per 0.2 s, 30 s", sparse),
                                   ("4 (2 GPUs)", "alone", "one vCPU at a time, 1 s each", x2),
                                   ("4 (2 GPUs)", "together", "all 32 busy at once, 15 s", x2),
                                   ("4 (2 GPUs)", "sparse", "all 32, one timing each per 0.2 s, 15 s", x2)):
        got = [r for r in data if r["phase"] == phase]
        ms = [r["ms"] for r in got]
        per_cpu = {c: [r["ms"] > 1.3 * fast for r in got if r["cpu"] == c] for c in {r["cpu"] for r in got}}
        shares = [sum(v) / len(v) for v in per_cpu.values()]
        corr = ""
        if phase == "together":
            windows = {}
            for r in got:
                windows.setdefault(int(r["t"] / 0.5), {}).setdefault(r["cpu"], []).append(r["ms"] > 1.3 * fast)
            series = {c: [fmean(w[c]) if c in w else None for w in windows.values()] for c in per_cpu}
            pairs = []
            for a in series:
                for b in series:
                    both = [(x, y) for x, y in zip(series[a], series[b]) if None not in (x, y)]
                    if a < b and len({x for x, _ in both}) > 1 and len({y for _, y in both}) > 1:
                        pairs.append(correlation(*zip(*both)))
            corr = f"{median(pairs):.2f} ({min(pairs):.2f} to {max(pairs):.2f})"
        rows.append([call, phase, how, f"{len(ms):,}", f"{median(ms):.1f}",
                     f"{_quantile(ms, 0.1):.1f}-{_quantile(ms, 0.9):.1f}",
                     f"{sum(r['ms'] > 1.3 * fast for r in got) / len(got):.2f}",
                     f"{min(shares):.2f}-{max(shares):.2f}", corr])
    return markdown(["call", "phase", "how", "timings", "median ms", "10th-90th ms",
                     f"share slow (> {1.3 * fast:.1f} ms)", "its range over vCPUs", "vCPUs' slow states: correlation"],
                    rows)


def planner_pinned() -> str:
    """host_drift.py's host-bound micro-batch (max_length, 2 rows, 4 layers) for 30 s, pinned with taskset to the
    vCPU the sparse phase found least often slow, to the one most often slow, and not pinned."""
    rows = []
    for pin in ("fast", "slow", "none"):
        got = _records(VCPU + f"pinned_{pin}.jsonl")
        ms, py = [r["micro_batch_ms"] for r in got], [r["python_work_ms"] for r in got]
        rows.append([pin, ", ".join(str(c) for c in sorted({r["core"] for r in got})), str(len(got)),
                     f"{median(ms):.1f} ({_quantile(ms, 0.1):.1f}-{_quantile(ms, 0.9):.1f})",
                     f"{median(py):.1f} ({_quantile(py, 0.1):.1f}-{_quantile(py, 0.9):.1f})", f"{correlation(ms, py):.2f}"])
    return markdown(["pinned to", "vCPU it ran on", "blocks of 10", "micro-batch ms: median (10th-90th)",
                     "pure-Python work ms", "correlation"], rows)


TABLES = {"planner/g4": (HERE / "planner/README.md", planner_g4),
          "planner/g4_times": (HERE / "planner/README.md", planner_g4_times),
          "planner/fastest5": (HERE / "planner/README.md", lambda: planner_g4(FASTEST5_SWEEPS)),
          "planner/fastest5_times": (HERE / "planner/README.md", lambda: planner_g4_times(FASTEST5_SWEEPS)),
          "planner/preset": (HERE / "planner/README.md", lambda: planner_g4(PRESET_SWEEPS)),
          "planner/preset_times": (HERE / "planner/README.md", lambda: planner_g4_times(PRESET_SWEEPS)),
          "planner/vcpu": (HERE / "planner/README.md", planner_vcpu),
          "planner/pinned": (HERE / "planner/README.md", planner_pinned)}
