"""Claims on experiments/planner's files: the planned sweeps' times and answers (docs/sweeps.md, the planner's README)."""
from __future__ import annotations

from functools import cache

from experiments.claims import Claim, _row, quoted, times
from experiments.figures import Fig

CLAIMS: list = []


def _grid18_h100() -> tuple[int, float, int, int]:
    """Call 4's 18-cell grid on H100s (experiments/planner): the planned sweep's wall time, plan=all's jobs' own
    seconds summed over its two calls (planner/tables_g4._sweeps, as the README explains), its wall times."""
    from experiments.planner.tables_g4 import _sweeps

    g = "planner/results/h100_grid18/"
    every, planned = _sweeps(g + "all_1/planner.log", g + "all_2/planner.log")["plan_all"], _sweeps(g + "predict/planner.log")["plan_predict"]
    return planned[0]["wall_s"], sum(t for run in every for t in run["jobs"].values()), every[0]["wall_s"], every[1]["wall_s"]


def _h100_times(template: str) -> str:
    planned, jobs, wall1, wall2 = _grid18_h100()
    return template.format(p=planned, a=f"{jobs:.0f}", r=f"{planned / jobs:.2f}", w=f"{planned / (wall1 + wall2):.2f}",
                           w1=wall1, w2=wall2)


# each text as the prose states it (the figures written out, so that the registry, not the files, holds the prose)
CLAIMS += [Claim(t.format(p=216, a=713, r="0.30", w="0.29", w1=556, w2=200), lambda t=t: _h100_times(t))
           for t in ("216 s against 713 s, 0.30", "in {p} s against {a} s ({r}, across", "{p} s vs {a} s ({r})",
                     "`plan=all`: {a} s, the sum of its 18 jobs' times", "The two sweeps' wall times were {w1} + {w2} s.",
                     "`plan=predict`: {p} s of sweep wall time", "Ratio: **{r}** ({w} against the wall times)")]


def _planned_vs_all(table: str, first: str, template: str) -> str:
    """A planner times row as prose puts it: the planned sweep's wall s, plan=all's jobs' s plus a sweep's start,
    their ratio (planner/tables_g4.planner_g4_times)."""
    cells = _row(table, first)
    jobs, start = (int(x) for x in cells[4].split(" + "))
    return template.format(p=cells[3].split()[0], a=jobs + start, r=cells[5].split("**")[1])


G4_FASTEST_PREDICT = "planner/results/h200_g4/reports_fastest_predict.jsonl"
CLAIMS += [
    Claim("in 210 s against 635 s (0.33)", lambda: _planned_vs_all("planner/g4_times", "largest", "in {p} s against {a} s ({r})")),
    Claim("146 s against 120 s", lambda: _planned_vs_all("planner/g4_times", "fastest (top 3)", "{p} s against {a} s")),
    Claim("in 85 s against 120 s", lambda: _planned_vs_all("planner/g4_times", "fastest (leader)", "in {p} s against {a} s")),
    Claim("in 115 s against the brute force's 524 s (0.22)",
          lambda: _planned_vs_all("planner/fastest5_times", "calls 1-2: profiled between timings", "in {p} s against the brute force's {a} s ({r})")),
    Claim("in 115 s against 262 s", lambda: _planned_vs_all("planner/preset_times", "sweep=batch_vs_accum", "in {p} s against {a} s")),
    Claim("bs 16 x ga 1 runs 1.78x\n  (1.61-1.98) the real tokens/s of bs 8 x ga 2",
          lambda: (lambda a, b: f"bs 16 x ga 1 runs {times(a, b).replace(' ', chr(10) + '  ', 1)} the real tokens/s of bs 8 x ga 2")(
              Fig.by_overrides(G4_FASTEST_PREDICT, "batch.size=16"), Fig.by_overrides(G4_FASTEST_PREDICT, "batch.size=8"))),
    Claim("bs 16 x ga 1 ran 1.78x (1.61-1.98) the real tokens/s of bs 8 x ga 2",
          lambda: f"bs 16 x ga 1 ran {times(Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=16'), Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=8'))} the real tokens/s of bs 8 x ga 2"),
]


def _h200_grid18() -> tuple[int, float]:
    planned, parts = _h200_sweeps()
    return planned, sum(parts)


def _h200_sweeps() -> tuple[int, list[float]]:
    """Call 7's H200 grid (planner/results/h200_grid18/sweep_times.txt, gpu.sh's timing lines): the planned sweep's
    wall time, and plan=all's over its two calls: the first call up to the start of the job its cut stopped (that
    job not counted), then the second call's whole sweep."""
    import re
    from datetime import datetime

    from experiments.claims import ROOT

    runs, starts = [], []
    for line in (ROOT / "experiments/planner/results/h200_grid18/sweep_times.txt").read_text().splitlines():
        if m := re.search(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[HYDRA\] Submitit", line):
            starts.append(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f"))
        elif m := re.search(r"(\w+): exit (\d+), sweep wall time (\d+) s", line):
            runs.append((m[1], m[2] == "124", int(m[3]), starts))
            starts = []
    planned = next(wall for name, _, wall, _ in runs if name == "plan_predict")
    return planned, [(s[-1] - s[0]).total_seconds() if cut else wall for name, cut, wall, s in runs if name == "plan_all"]


CLAIMS += [
    Claim("ran 6 of 18 cells in 220 s", lambda: f"ran 6 of 18 cells in {_h200_grid18()[0]} s"),
    Claim("`sweep.plan=all` took 627 s", lambda: f"`sweep.plan=all` took {_h200_grid18()[1]:.0f} s"),
    Claim("That is 0.351 of", lambda: f"That is {_h200_grid18()[0] / round(_h200_grid18()[1]):.3f} of"),
    Claim("220 s vs 627 s (0.351)", lambda: (lambda p, a: f"{p} s vs {a:.0f} s ({p / round(a):.3f})")(*_h200_grid18())),
    Claim("220 s against 627 s (0.351)", lambda: (lambda p, a: f"{p} s against {a:.0f} s ({p / round(a):.3f})")(*_h200_grid18())),
]


def _h200_parts() -> str:
    planned, (first, second) = _h200_sweeps()
    every = first + second
    return (f"`plan=all` took {every:.0f} s: {first:.0f} s in the first call before the cut job, then {second:.0f} s in the second.\n"
            f"  - {planned} / {every:.0f} = {planned / round(every):.3f}")


CLAIMS += [
    Claim("`plan=all` took 627 s: 256 s in the first call before the cut job, then 371 s in the second.\n  - 220 / 627 = 0.351", _h200_parts),
    Claim("the planned sweep ran 6 cells in 220 s", lambda: f"the planned sweep ran 6 cells in {_h200_grid18()[0]} s"),
]


def _max_length_4() -> list[str]:
    """max_length at micro-batch 4 on the H200 grid: call 7's plan=all, then call 3's two repeats (another H200)."""
    from experiments.figures import _records

    out = []
    for path in ("planner/results/h200_grid18/reports_all.jsonl", "planner/results/h200_grid18/repeats/reports_max_length.jsonl"):
        for r in _records(path):
            if (r["config"]["padding"]["strategy"], r["config"]["batch"]["size"]) == ("max_length", 4):
                th = r["throughput"]
                out.append(f"{th['real_tokens_per_s'] / 1000:.1f}k ({th['real_tokens_per_s_low'] / 1000:.1f}-"
                           f"{th['real_tokens_per_s_high'] / 1000:.1f}k)")
    return out


CLAIMS += [
    Claim("max_length 4 measured 33.9k (30.4-38.2k) real tok/s in call 2, and 24.4k (23.3-25.6k) and 23.9k",
          lambda: "max_length 4 measured {} real tok/s in call 2, and {} and {}".format(*_max_length_4()).rsplit(" (", 1)[0]),
    Claim("max_length 4 measured 33.9k (30.4-38.2k) real tok/s in one session and 24.4k",
          lambda: "max_length 4 measured {} real tok/s in one session and {}".format(*_max_length_4()[:2]).rsplit(" (", 1)[0]),
    Claim("max_length 4 measured 33.9k (30.4-38.2k) real tok/s on one H200 and 24.4k (23.3-25.6k) on another",
          lambda: "max_length 4 measured {} real tok/s on one H200 and {} on another".format(*_max_length_4()[:2])),
]


def _h200_memory_misses() -> list[tuple[tuple[str, int], float]]:
    """Call 7's H200 cells whose measured peak (plan=predict's or plan=all's) missed its prediction by over 3%."""
    from experiments.figures import _records

    folder, predicted, out = "planner/results/h200_grid18/", {}, []
    for r in _records(folder + "decisions_predict.jsonl"):
        got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
        predicted[got["padding"], int(got["batch"])] = r["prediction"]["memory_gb"]
    for name in ("reports_predict.jsonl", "reports_all.jsonl"):
        for r in _records(folder + name):
            if r["status"] == "ok":
                cell = (r["config"]["padding"]["strategy"], r["config"]["batch"]["size"])
                if abs(error := r["memory_gb"]["peak_allocated"] / predicted[cell] - 1) > 0.03:
                    out.append((cell, error))
    return sorted(out)


CLAIMS += [
    Claim("In call 7, max_length 2 and 4 were 6.1% and 4.5% over their predictions",  # each cell's own, in the cells' order
          lambda: (lambda m: "In call 7, {} {} and {} were {:.1%} and {:.1%} over their predictions".format(
              m[0][0][0], m[0][0][1], m[1][0][1], m[0][1], m[1][1]) if len(m) == 2 and m[0][0][0] == m[1][0][0] else str(m))(
              _h200_memory_misses())),
    Claim("for two cells of that H200 session\n    (4.5% and 6.1%,",
          lambda: "for {} cells of that H200 session\n    ({:.1%} and {:.1%},".format(
              "two" if len(_h200_memory_misses()) == 2 else len(_h200_memory_misses()), *sorted(e for _, e in _h200_memory_misses()))),
]


def _largest_peaks_within(bound: float) -> bool:
    """G4 largest (call 8): every measured peak, planned sweep's and plan=all's, within `bound` of its prediction."""
    from experiments.figures import _records, quotient, row_call

    folder = "planner/results/h200_g4/"
    decided = {r["job"]: r for r in _records(folder + "decisions_largest.jsonl")}
    # plan=all's peaks (calls 1-2) against predictions made in call 1: across calls, as the planner/g4 table labels them
    errors = [abs(quotient(r["memory_gb"]["peak_allocated"], decided[r["label"]]["prediction"]["memory_gb"], row_call(r),
                           row_call(decided[r["label"]]), across_calls=True) - 1)
              for name in ("reports_largest_predict.jsonl", "reports_largest_all.jsonl") for r in _records(folder + name) if r["status"] == "ok"]
    return max(errors) <= bound


CLAIMS += [Claim(text, lambda text=text: text if _largest_peaks_within(0.025) else "a peak missed its prediction by over 2.5%")
           for text in ("was within 2.5% of its prediction", "every peak came within 2.5% of its prediction", "every peak within 2.5%")]


def _profiler_after() -> str:
    """profiler_after.py (call 9's call 3): an 8-layer copy's micro-batch timed twice before a profile and twice after,
    CUPTI left subscribed, then torn down; each timing the median of its 5 blocks."""
    from experiments.figures import _records

    runs = {r["teardown_cupti"]: r for r in _records("planner/results/h200_fastest5/profiler_after.jsonl")}
    ms = lambda r, when: " and ".join(f"{t['median_s'] * 1000:.1f}" for t in r["timings"] if t["when"] == when)  # noqa: E731
    kept, torn = runs[None], runs["1"]
    return (f"{ms(kept, 'before')} ms a micro-batch before, {ms(kept, 'after')} after,\n  **{kept['after_over_before']:.2f}x**. With "
            f"`TEARDOWN_CUPTI=1`: {ms(torn, 'before')} before, {ms(torn, 'after')} after ({torn['after_over_before']:.2f}x)")


CLAIMS += [Claim("107.9 and 97.0 ms a micro-batch before, 153.5 and 145.0 after,\n  **1.46x**. With `TEARDOWN_CUPTI=1`: "
                 "109.5 and 109.2 before, 96.6 and 102.9 after (0.91x)", _profiler_after)]


def _kernels_line() -> str:
    from experiments.figures import _records

    two = next(r for r in _records("planner/results/h200_grid18/copies_check.jsonl") if r["batch"] == 2)["gpu_s"]
    depths = sorted(two, key=int)
    return ("The kernels' time is a clean line: " + ", ".join(f"{two[d] * 1000:.1f}" for d in depths[:-1])
            + f" and {two[depths[-1]] * 1000:.1f} ms at " + ", ".join(depths[:-1]) + f" and {depths[-1]} layers (2 rows)")


CLAIMS += [Claim("The kernels' time is a clean line: 1.5, 2.9, 5.7 and 11.3 ms at 1, 2, 4 and 8 layers (2 rows)", _kernels_line)]


def _grid18_speed() -> dict[tuple[str, int], float]:
    """Call 4's 18-cell grid: plan=all's measured real tok/s over the planned sweep's prediction, per (padding, batch).
    plan=all ran in two calls, the prediction in a later one on another machine: across calls, as the table says."""
    from experiments.figures import _records, quotient, row_call
    from experiments.planner.tables import G18, _grid18_reports

    every = _grid18_reports("all_1/reports.jsonl", "all_2/reports.jsonl")
    out = {}
    for r in _records(G18 + "predict/decisions_predict.jsonl"):
        got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
        m = every.get((int(got["batch"]), got["padding"]))
        if m is not None and m["status"] == "ok":
            out[got["padding"], int(got["batch"])] = quotient(m["throughput"]["real_tokens_per_s"], r["prediction"]["real_tokens_per_s"],
                                                              row_call(m), row_call(r), across_calls=True)
    return out


def _grid18_speed_text() -> str:
    x = _grid18_speed()
    within = sum(abs(v - 1) <= 0.10 for v in x.values())
    (shown,) = [v for v in x.values() if f"{v:.2f}" == "1.10" and abs(v - 1) > 0.10]  # a cell the table rounds into 10%
    grouped = [v for (p, _), v in x.items() if p == "grouped"]
    return (f"Within 10% on {within} of {len(x)} cells ({min(x.values()):.2f}-{max(x.values()):.2f}x; the 1.10 in the table is "
            f"{shown:.3f}).\n  - Grouped padding is over-predicted: {min(grouped):.2f}-{max(grouped):.2f}x")


def _grid18_others_text() -> str:
    x = _grid18_speed()
    small = [v for (p, b), v in x.items() if p != "grouped" and b < 32]
    return (f"The small micro-batches of the other two paddings are host-bound: {min(small):.2f}-{max(small):.2f}x.\n"
            f"  - 32 dynamic and 32 max_length: {x['dynamic', 32]:.2f}x and {x['max_length', 32]:.2f}x")


CLAIMS += [
    Claim("Within 10% on 5 of 15 cells (0.56-1.11x; the 1.10 in the table is 1.105).\n  - Grouped padding is over-predicted: 0.56-0.85x",
          _grid18_speed_text),
    Claim("The small micro-batches of the other two paddings are host-bound: 0.75-1.11x.\n  - 32 dynamic and 32 max_length: 1.02x and 1.08x",
          _grid18_others_text),
]


# -- the rest of the planner README's figures, each recomputed from its files (issue 52, item 2) -----------------
def _text(path: str) -> str:
    from experiments.claims import ROOT

    return (ROOT / "experiments" / path).read_text()


def _kci(f: Fig) -> str:
    """A rate in thousands with its interval: 111.5k (102.7-121.9k)."""
    i = f.interval
    return f"{f.rate / 1000:.1f}k ({i.low / 1000:.1f}-{i.high / 1000:.1f}k)"


def _cell(path: str, padding: str, batch: int) -> Fig:
    return Fig.by_overrides(path, f"batch='{batch}'", f"padding={padding}")


def _predicted_in(path: str) -> str:
    """The sweep's own line: "N cells predicted in S s"."""
    import re

    return re.search(r"cells predicted in (\d+) s", _text(path))[1]


def _predictor_process(path: str) -> str:
    """The predictor's own log: "the predictor's process: S s in all"."""
    import re

    return re.search(r"the predictor's process: ([\d.]+) s in all", _text(path))[1]


def _families(path: str) -> list[dict[str, float]]:
    """The predictor log's per-family lines: {part: seconds} (data, copies, speed, new shapes, memory)."""
    import re

    return [{m[0]: float(m[1]) for m in re.findall(r"(data|copies|speed|new shapes|memory|kernels) ([\d.]+) s", line)}
            for line in _text(path).splitlines() if "cells predicted in data" in line]


H7 = "planner/results/h200_grid18/"
CLAIMS += [
    Claim("its 61 s of predicting included", lambda: f"its {_predicted_in(H7 + 'planner_lines_predict.txt')} s of predicting included"),
    Claim("(the predictor's process took 58.6 s)", lambda: f"(the predictor's process took {_predictor_process(H7 + 'predict_predict.log')} s)"),
    Claim("against the 58.6 s\n     the predictor took there", lambda: f"against the {_predictor_process(H7 + 'predict_predict.log')} s\n     the predictor took there"),
    Claim("fastest: 111.5k\n  (102.7-121.9k) and 107.4k (93.5-124.0k) real tok/s",
          lambda: "fastest: {}\n  {} and {} real tok/s".format(*_kci(_cell(H7 + "reports_predict.jsonl", "dynamic", 32)).split(" ", 1),
                                                              _kci(_cell(H7 + "reports_all.jsonl", "dynamic", 32)))),
    Claim("bs 16 x ga 1,\n  1.78x (1.61-1.98) bs 8 x ga 2",
          lambda: f"bs 16 x ga 1,\n  {times(Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=16'), Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=8'))} bs 8 x ga 2"),
    Claim("by 1.46x on a host-bound micro-batch", lambda: "by {:.2f}x on a host-bound micro-batch".format(
        {r["teardown_cupti"]: r for r in __import__("experiments.figures", fromlist=["_records"])._records(
            "planner/results/h200_fastest5/profiler_after.jsonl")}[None]["after_over_before"])),
]


def _h100_call1_predicting() -> tuple[int, str, str]:
    """Call 1's log (results/h100_planner_call.log): the planned sweep's predicting, from plan=all's last line to
    the "cells predicted" line."""
    import re
    from datetime import datetime

    lines = _text("planner/results/h100_planner_call.log").splitlines()
    at = next(i for i, line in enumerate(lines) if "cells predicted" in line)
    stamp = lambda line: datetime.strptime(re.match(r"\[([\d :,-]+)\]", line)[1], "%Y-%m-%d %H:%M:%S,%f")  # noqa: E731
    before = next(line for line in reversed(lines[:at]) if line.startswith("[20"))
    a, b = stamp(before), stamp(lines[at])
    return round((b - a).total_seconds()), a.strftime("%H:%M:%S"), b.strftime("%H:%M:%S")


def _wall(path: str, name: str) -> str:
    import re

    return re.search(rf"{name}: exit \d+, sweep wall time (\d+) s", _text(path))[1]


CLAIMS += [
    # the cut plan=all's end is not logged: its last line (a job's start) bounds the predicting from above
    Claim("at most 64 s of it predicting\n(from 16:58:38, the cut `plan=all`'s last line, to 16:59:41 in the log)",
          lambda: "at most {} s of it predicting\n(from {}, the cut `plan=all`'s last line, to {} in the log)".format(*_h100_call1_predicting())),
    Claim("the first call: at most 64 s", lambda: f"the first call: at most {_h100_call1_predicting()[0]} s"),
    Claim("Its wall time: 176 s,", lambda: f"Its wall time: {_wall('planner/results/h100_planner_call.log', 'plan_predict')} s,"),
    Claim("The planned sweep took 176 s in both calls", lambda: "The planned sweep took {} s in both calls".format(
        a if (a := _wall("planner/results/h100_planner_call.log", "plan_predict")) == _wall("planner/results/h100_call2/planner_lines.log", "plan_predict") else "?")),
    *quoted("planner/results/h100_call2/summary_fit.md", "bs 32 x ga 2 beats bs 16 x ga 4 by 1.25x (x1.04-x1.51)",
            "bs 32 x ga 2 beats bs 8 x ga 8 by 1.91x (x1.38-x2.63)"),
]


def _h200_measurements() -> int:
    """Call 7's measured peaks: the planned sweep's and plan=all's runs that finished."""
    from experiments.figures import _records

    return sum(r["status"] == "ok" for name in ("reports_predict.jsonl", "reports_all.jsonl") for r in _records(H7 + name))


@cache
def _grid_memory_ratios() -> list[float]:
    """Measured over predicted peak on the 18-cell grids, as their tables print it: calls 4 (H100), 6 (H100), 7 (H200)."""
    import re

    from experiments import tables

    return [float(x) for name in ("planner/grid18", "planner/grid18_v2", "planner/h200")
            for x in re.findall(r"; (\d\.\d{3})\b", tables.TABLES[name][1]())]


def _repeat_memory_errors() -> list[float]:
    """Call 7's three later predictor runs (repeats/pred_*.json): max_length 2 and 4, measured peak (plan=all) over
    the prediction, less 1."""
    import json

    from experiments.claims import ROOT

    measured = {r["config"]["batch"]["size"]: r["memory_gb"]["peak_allocated"] for r in __import__(
        "experiments.figures", fromlist=["_records"])._records(H7 + "reports_all.jsonl") if r["status"] == "ok"
        and r["config"]["padding"]["strategy"] == "max_length"}
    out = []
    for run in "abc":
        for cell in json.loads((ROOT / "experiments" / H7 / f"repeats/pred_{run}.json").read_text()):
            batch = int(cell["cell"].split("batch=")[1].split(",")[0])
            if "padding=max_length" in cell["cell"] and batch in (2, 4):
                out.append(measured[batch] / cell["memory_gb"] - 1)
    return out


CLAIMS += [
    Claim("on the 18-cell grids of calls 4, 6 and 7, every measured peak within 3% of its prediction but two",
          lambda: "on the 18-cell grids of calls 4, 6 and 7, every measured peak within 3% of its prediction but {}".format(
              {2: "two"}.get(n := sum(abs(x - 1) > 0.03 for x in _grid_memory_ratios()), n))),
    Claim("the predictor run again puts both within 3%",
          lambda: "the predictor run again puts both within {}".format("3%" if max(map(abs, _repeat_memory_errors())) <= 0.03 else "?")),
    Claim("within 3% on 19 of the 21 measurements",
          lambda: f"within 3% on {_h200_measurements() - len(_h200_memory_misses())} of the {_h200_measurements()} measurements"),
]


def _calibrated_highs(path: str) -> list[float]:
    """The cells a planned sweep did not run: the top of each calibrated interval, from its decision line."""
    import re

    from experiments.figures import _records

    return [float(m[1].replace(",", "")) for r in _records(path)
            if (m := re.search(r"calibrated [\d,]+ \([\d,]+-([\d,]+)\)", r.get("decision") or ""))]


def _per_family(path: str) -> str:
    fam = _families(path)
    span = lambda key: f"{min(f[key] for f in fam):.1f}-{max(f[key] for f in fam):.1f} s"  # noqa: E731
    totals = [sum(f.values()) for f in fam]
    return f"Per family, {min(totals):.1f}-{max(totals):.1f} s: timing {span('speed')}, memory probes {span('memory')}, data {span('data')}"


CLAIMS += [
    Claim("(at most 44.2k)", lambda: f"(at most {max(_calibrated_highs('planner/results/h100_plan_predict_decisions.jsonl')) / 1000:.1f}k)"),
    Claim("Per family, 9.7-15.3 s: timing 6.4-10.9 s, memory probes 1.4-1.8 s, data 1.7-2.0 s",
          lambda: _per_family("planner/results/h100_grid18/predict/predict_predict.log")),
]


def _h100_depth_check() -> list[dict]:
    from experiments.figures import _records

    return list(_records("planner/results/h100_grid18/copies_check/h100_split_and_wall.jsonl"))


def _gpu_paced_text() -> str:
    """Call 4's depth check at micro-batch 32 and 64: the 1-2 layer line's 4-layer time over the measured one."""
    rows = [r for r in _h100_depth_check() if r["batch"] >= 32]
    x = {(r["overrides"][2].split("=")[1], r["batch"]): r["wall"]["predicted_s"] / r["wall"]["measured_s"] for r in rows}
    near = [v for v in x.values() if abs(v - 1) <= 0.024]
    (far,) = [(c, v) for c, v in x.items() if abs(v - 1) > 0.024]
    dyn = next(r["wall"] for r in rows if r["batch"] == 32 and r["overrides"][2] == "padding=dynamic")
    return (f"the line lands within 2.4% of the 4-layer time on {len(near)} of\n    the {len(x)} cells, {far[0][0]} {far[0][1]} at "
            f"{far[1]:.2f}x (e.g. {dyn['predicted_s'] * 1000:.1f} against {dyn['measured_s'] * 1000:.1f} ms")


def _own_line_text() -> str:
    """Call 4's depth check, host-bound cells (2-16 rows): each cell's own 1-2 layer line (the median block's host
    time) at 4 layers over its measured 4-layer median."""
    import statistics

    two, miss = [], []
    for r in _h100_depth_check():
        if r["batch"] <= 16:
            m = {d: statistics.median(b["host"] for b in blocks) for d, blocks in r["wall"]["blocks"].items()}
            two.append(m["2"])
            miss.append((m["1"] + 3 * (m["2"] - m["1"])) / m["4"])
    return (f"One cell's own 2-layer figure moved between {min(two) * 1000:.0f} and {max(two) * 1000:.0f} ms, so the line through its own "
            f"1- and 2-layer figures\n  missed the 4-layer time by {min(miss):.2f}-{max(miss):.2f}x.")


def _call4_grouped32() -> str:
    """Call 4's plan=all run of grouped 32: its timed steps, split at their largest gap."""
    from experiments.figures import _records

    (r,) = [r for r in _records("planner/results/h100_grid18/all_2/reports.jsonl") if r["status"] == "ok"
            and (r["config"]["padding"]["strategy"], r["config"]["batch"]["size"]) == ("grouped", 32)]
    v = sorted(r["step_time_s"]["values"])
    fast, slow = [s for s in v if s < 0.15], [s for s in v if s >= 0.15]
    return (f"at micro-batch 32, with {r['shapes']['new_in_window']} new\nshapes in the window, `plan=all`'s run "
            f"had {len(fast)} steps under 0.15 s ({fast[0]:.3f}-{fast[-1]:.3f} s) and {len(slow)} over it ({slow[0]:.3f}-{slow[-1]:.3f} s).")


def _no_cudnn() -> dict[tuple[int, bool], list[float]]:
    """results/h100_no_cudnn: grouped runs with and without cuDNN's attention kernel: {(micro-batch, cudnn): rates}."""
    from experiments.figures import _records

    out: dict = {}
    for r in _records("planner/results/h100_no_cudnn/reports.jsonl"):
        out.setdefault((r["config"]["batch"]["size"], "cudnn" in r["config"]["env"]["sdp_backends"]), []).append(
            r["throughput"]["real_tokens_per_s"])
    return {key: sorted(v) for key, v in out.items()}


def _no_cudnn_text() -> str:
    x = _no_cudnn()
    kk = lambda v: " and ".join(f"{a / 1000:.1f}k" for a in v)  # noqa: E731
    return (f"Micro-batch 32: {kk(x[32, False])} real tok/s without cuDNN's kernel, {kk(x[32, True])} with it. The mean\n"
            f"    step was 117-123 ms against 200-212 ms; the fastest steps were alike (98-99 ms and 96-103 ms).\n"
            f"  - Micro-batch 16: {kk(x[16, False])} without, {kk(x[16, True])} with (one run each).")


def _no_cudnn_pairs() -> str:
    x = _no_cudnn()
    r = [a / b for mb in (16, 32) for a in x[mb, False] for b in x[mb, True]]
    return f"{min(r):.1f}-{max(r):.1f}x higher without cuDNN's attention (min-max over the pairings of runs)"


CLAIMS += [
    Claim("the line lands within 2.4% of the 4-layer time on 5 of\n    the 6 cells, max_length 32 at 1.10x (e.g. 70.2 against 69.9 ms",
          _gpu_paced_text),
    Claim("One cell's own 2-layer figure moved between 14 and 24 ms, so the line through its own 1- and 2-layer figures\n"
          "  missed the 4-layer time by 0.65-1.59x.", _own_line_text),
    Claim("at micro-batch 32, with 12 new\nshapes in the window, `plan=all`'s run had 9 steps under 0.15 s (0.094-0.140 s) and 11 over it (0.199-0.413 s).",
          _call4_grouped32),
    Claim("Micro-batch 32: 110.7k and 116.1k real tok/s without cuDNN's kernel, 64.3k and 68.2k with it. The mean\n"
          "    step was 117-123 ms against 200-212 ms; the fastest steps were alike (98-99 ms and 96-103 ms).\n"
          "  - Micro-batch 16: 91.8k without, 57.0k with (one run each).", _no_cudnn_text),
    Claim("1.6-1.8x higher without cuDNN's attention (min-max over the pairings of runs)", _no_cudnn_pairs),
]


def _job_times(path: str) -> tuple[list[float], float]:
    """A sweep's job lines (planner_lines_*.txt): each job's seconds from its start line to its result line, and the
    seconds from the "cells predicted" line to the "cells ran" summary line."""
    import re
    from datetime import datetime

    stamp = lambda s: datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f")  # noqa: E731
    jobs: dict[str, list] = {}
    first = last = None
    for line in _text(path).splitlines():
        if m := re.match(r"\[([\d :,-]+)\]\[HYDRA\] \t#(\d+) : ", line):
            jobs.setdefault(m[2], []).append(stamp(m[1]))
        elif m := re.match(r"\[([\d :,-]+)\]\[HYDRA\] sweep\.plan=predict: (\d+ cells predicted|\d+ of \d+ cells ran)", line):
            first, last = (stamp(m[1]), last) if "predicted" in m[2] else (first, stamp(m[1]))
    return [(t[1] - t[0]).total_seconds() for t in jobs.values() if len(t) == 2], (last - first).total_seconds()


def _call6_text() -> str:
    path = "planner/results/h100_grid18_v2/planner_lines_predict.txt"
    jobs, span = _job_times(path)
    return (f"ran {len(jobs)} cells: {_predicted_in(path)} s predicting (its \"cells predicted\" line), then {len(jobs)} cells of "
            f"{min(jobs):.0f}-{max(jobs):.0f} s,\n  {span:.0f} s from that line to its summary")


CLAIMS += [
    Claim("ran 7 cells: 53 s predicting (its \"cells predicted\" line), then 7 cells of 25-38 s,\n  219 s from that line to its summary",
          _call6_text),
    Claim("Call 6's planned sweep: 7 cells, 53 s predicting and 219 s more to its summary",
          lambda: (lambda jobs, span: f"Call 6's planned sweep: {len(jobs)} cells, "
                   f"{_predicted_in('planner/results/h100_grid18_v2/planner_lines_predict.txt')} s predicting and {span:.0f} s more to its summary")(
              *_job_times("planner/results/h100_grid18_v2/planner_lines_predict.txt"))),
    Claim("115 s vs 262 s (0.44)", lambda: _planned_vs_all("planner/preset_times", "sweep=batch_vs_accum", "{p} s vs {a} s ({r})")),
    Claim("by a hair no (0.351)", lambda: (lambda p, a: f"by a hair no ({p / round(a):.3f})")(*_h200_grid18())),
]


def _h200_check() -> list[dict]:
    from experiments.figures import _records

    return list(_records(H7 + "copies_check.jsonl"))


def _per_layer_text() -> str:
    """Call 7's check: the pooled host line's 2- and 4-layer readings, and each host-bound cell's median block from 4
    to 8 layers, per layer."""
    import statistics

    rows = [r for r in _h200_check() if r["bound"] == "host"]
    two, four = rows[0]["host_s"]["2"]["mean"], rows[0]["host_s"]["4"]["mean"]
    med = lambda r, d: statistics.median(b["micro_batch"] for b in r["blocks"][d])  # noqa: E731
    late = [(med(r, "8") - med(r, "4")) / 4 for r in rows]
    return (f"{(four - two) / 2 * 1000:.1f} ms a layer from 2 to 4 layers (the pooled {two * 1000:.1f} and\n"
            f"  {four * 1000:.1f} ms), {min(late) * 1000:.1f}-{max(late) * 1000:.1f} ms from 4 to 8.")


def _check_blocks_text() -> str:
    rows = [r for r in _h200_check() if r["bound"] == "host"]
    blocks = [b["micro_batch"] for r in rows for b in r["blocks"]["4"]]
    pooled = rows[0]["host_s"]["4"]
    return (f"the check's {len(blocks)} host-bound blocks at 4 layers ({len(rows)} cells)\n  lay at {min(blocks) * 1000:.1f}-"
            f"{max(blocks) * 1000:.1f} ms, their median's interval {pooled['low'] * 1000:.1f}-{pooled['high'] * 1000:.1f} ms.")


def _twice_text() -> str:
    pairs = [(_cell(H7 + "reports_predict.jsonl", p, 16), _cell(H7 + "reports_all.jsonl", p, 16)) for p in ("dynamic", "grouped")]
    apart = max(max(a.rate, b.rate) / min(a.rate, b.rate) for a, b in pairs)
    (d1, d2), (g1, g2) = ((_kci(a), _kci(b)) for a, b in pairs)
    return f"means up to {apart:.2f}x apart: dynamic 16 {d1}\n    and {d2}; grouped 16 {g1} and {g2}"


def _drift() -> list[dict[str, list[float]]]:
    from experiments.figures import _records

    return [{key: [r[key] for r in _records(f"{H7}host_drift/drift_{run}.jsonl")] for key in ("python_work_ms", "micro_batch_ms")}
            for run in "ab"]


def _rank_correlation(a: list[float], b: list[float]) -> float:
    """Spearman's: Pearson's on the ranks (the readings have no ties)."""
    rank = lambda v: {i: r for r, i in enumerate(sorted(range(len(v)), key=v.__getitem__))}  # noqa: E731
    ra, rb = rank(a), rank(b)
    x, y = [ra[i] for i in range(len(a))], [rb[i] for i in range(len(b))]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((p - mx) * (q - my) for p, q in zip(x, y))
    return cov / (sum((p - mx) ** 2 for p in x) * sum((q - my) ** 2 for q in y)) ** 0.5


def _drift_text() -> str:
    d = _drift()
    span = lambda v: f"{min(v):.1f}-{max(v):.1f}"  # noqa: E731
    return (f"The Python work took {span(d[0]['python_work_ms'])} ms in one process and {span(d[1]['python_work_ms'])} ms in the other")


def _drift_corr_text() -> str:
    d = _drift()
    c = [_rank_correlation(x["python_work_ms"], x["micro_batch_ms"]) for x in d]
    return (f"rank correlations of {c[0]:.2f} and {c[1]:.2f} over {len(d[0]['python_work_ms'])} and {len(d[1]['python_work_ms'])} blocks")


def _drift_swing() -> str:
    r = [max(x["python_work_ms"]) / min(x["python_work_ms"]) for x in _drift()]
    return f"its slowest reading of the fixed work was {r[0]:.1f}x and {r[1]:.1f}x its fastest"


CLAIMS += [
    Claim("8.9 ms a layer from 2 to 4 layers (the pooled 15.4 and\n  33.2 ms), 6.7-6.8 ms from 4 to 8.", _per_layer_text),
    Claim("the check's 10 host-bound blocks at 4 layers (2 cells)\n  lay at 30.2-39.8 ms, their median's interval 30.5-36.5 ms.", _check_blocks_text),
    Claim("means up to 1.35x apart: dynamic 16 101.0k (80.6-117.6k)\n    and 74.5k (54.0-102.7k); grouped 16 65.6k (48.3-102.5k) and 54.9k (40.0-87.9k)",
          _twice_text),
    Claim("The Python work took 8.7-18.9 ms in one process and 8.9-23.1 ms in the other", _drift_text),
    Claim("rank correlations of 0.30 and 0.53 over 151 and 141 blocks", _drift_corr_text),
    Claim("its slowest reading of the fixed work was 2.2x and 2.6x its fastest", _drift_swing),
]
CLAIMS += [Claim("means 1.35x apart (dynamic 16: 101.0k (80.6-117.6k) and 74.5k (54.0-102.7k)", lambda: (
    lambda a, b: f"means {a.rate / b.rate:.2f}x apart (dynamic 16: {_kci(a)} and {_kci(b)}")(
    _cell(H7 + "reports_predict.jsonl", "dynamic", 16), _cell(H7 + "reports_all.jsonl", "dynamic", 16)))]


G4 = "planner/results/h200_g4/"


def _parts_sum(path: str, part: str) -> float:
    return sum(f[part] for f in _families(path))


CLAIMS += [
    Claim("reached 3,516 at most", lambda: f"reached {max(_calibrated_highs(G4 + 'decisions_fastest_leader.jsonl')):,.0f} at most"),
    Claim("58.1 s in all, against call 7's 58.6 s on another machine", lambda: (
        f"{_predictor_process(G4 + 'predictor_grid18.log')} s in all, against call 7's {_predictor_process(H7 + 'predict_predict.log')} s on another machine")),
    Claim("Timing speed took 24.6 s over the three families, against 34.0 s in call 7", lambda: (
        f"Timing speed took {_parts_sum(G4 + 'predictor_grid18.log', 'speed'):.1f} s over the three families, against "
        f"{_parts_sum(H7 + 'predict_predict.log', 'speed'):.1f} s in call 7")),
    Claim("added 4.6 s (copies 5.2 s against 0.6 s)", lambda: (lambda a, b: f"added {a - b:.1f} s (copies {a:.1f} s against {b:.1f} s)")(
        _parts_sum(G4 + "predictor_grid18.log", "copies"), _parts_sum(H7 + "predict_predict.log", "copies"))),
]


F5 = "planner/results/h200_fastest5/"


def _fixed_runs() -> list[tuple[int, int, float]]:
    """Call 9's call 3 (timed before profiling): each run's (micro-batch, grad_accum, mean step s), plan=all's first."""
    from experiments.figures import _records

    return [(r["config"]["batch"]["size"], r["config"]["batch"]["grad_accum"], r["step_time_s"]["mean"])
            for name in ("reports_fastest5_fixed_all.jsonl", "reports_fastest5_fixed_predict.jsonl")
            for r in _records(F5 + name) if r["status"] == "ok"]


def _per_micro_batch() -> tuple[float, float]:
    per = [s / ga for _, ga, s in _fixed_runs()]
    return min(per), max(per)


def _bare_28(batch: int) -> float:
    import statistics

    from experiments.figures import _records

    (r,) = [r for r in _records(F5 + "copies_check_call3.jsonl") if r["batch"] == batch]
    return statistics.median(b["micro_batch"] for b in r["blocks"]["28"])


def _trainer_runs_text() -> str:
    import json

    from experiments.claims import ROOT

    host = {c["micro_batch_s"]["host"] for c in json.loads((ROOT / "experiments" / F5 / "predictions_fastest5_fixed.json").read_text())}
    lo, hi = _per_micro_batch()
    runs = sorted(_fixed_runs())
    by = lambda b: [(ga, s) for mb, ga, s in runs if mb == b]  # noqa: E731
    (ga4, s4), (ga8, s8) = by(4)[0], by(8)[0]
    return (f"The copies put the host's time for a micro-batch at 28 layers at {host.pop():.3f} s. The Trainer's runs took "
            f"{lo:.2f}-{hi:.2f} s\n    (bs 4: {s4:.3f} s for {ga4} micro-batches; bs 8: {s8:.3f} s for {ga8}; bs 16: "
            + " and ".join(f"{s:.3f}" for _, s in by(16)) + " s).")


CLAIMS += [
    Claim("It cost 5.6 s of call 3's 42 s", lambda: f"It cost {_parts_sum(F5 + 'predict_fastest5_fixed.log', 'kernels'):.1f} s of call 3's "
          f"{float(_predictor_process(F5 + 'predict_fastest5_fixed.log')):.0f} s"),
    Claim("The copies put the host's time for a micro-batch at 28 layers at 0.424 s. The Trainer's runs took 0.47-0.56 s\n"
          "    (bs 4: 1.887 s for 4 micro-batches; bs 8: 0.990 s for 2; bs 16: 0.508 and 0.558 s).", _trainer_runs_text),
    Claim("took 0.369 s at bs 8", lambda: f"took {_bare_28(8):.3f} s at bs 8"),
    Claim("The runs took 0.47-0.56 s a micro-batch against that bare loop's 0.37 s", lambda: (
        "The runs took {:.2f}-{:.2f} s a micro-batch against that bare loop's {:.2f} s".format(*_per_micro_batch(), _bare_28(8)))),
]


PR = "planner/results/h200_preset/"


def _preset_runs(name: str, mb: int, ga: int) -> Fig:
    from experiments.figures import _records

    (r,) = [r for r in _records(PR + name) if r["status"] == "ok" and (r["config"]["batch"]["size"], r["config"]["batch"]["grad_accum"]) == (mb, ga)]
    return Fig(PR + name, r["label"])


def _paid() -> list[tuple[tuple[int, int], int, float]]:
    """Call 10's calls 1-2, each run: (micro-batch, ga), its new shapes, and what it paid a shape: the mean of its as
    many slowest steps as it met new shapes, less its median step."""
    import statistics

    from experiments.figures import _records

    out = []
    for name in ("reports_preset_predict.jsonl", "reports_preset_all.jsonl"):
        for r in _records(PR + name):
            if r["status"] == "ok":
                v, s = sorted(r["step_time_s"]["values"]), r["shapes"]["new_in_window"]
                out.append(((r["config"]["batch"]["size"], r["config"]["batch"]["grad_accum"]), s,
                            sum(v[-s:]) / s - statistics.median(v)))
    return out


def _paid_text() -> str:
    p = _paid()
    rest = [x for cell, _, x in p if cell != (32, 1)]
    own = [x for cell, _, x in p if cell == (32, 1)]
    return (f"The runs paid {min(rest):.2f}-{max(rest):.2f} s for each in {len(rest)} of the {len(p)} runs (the mean of as many of their "
            f"slowest steps as\n    they met new shapes, over the median step); 32 x 1 paid "
            + " and ".join(f"{x:.2f}" for x in own) + f" s in its {'two' if len(own) == 2 else len(own)}.")


def _shape_price() -> float:
    import json
    import statistics

    from experiments.claims import ROOT

    (price,) = {statistics.median(c["first_call_s"]) for c in json.loads((ROOT / "experiments" / PR / "predictions_preset.json").read_text())
                if c.get("first_call_s")}
    return price


def _paid_32x1() -> str:
    p = [(s, x) for cell, s, x in _paid() if cell == (32, 1)]
    return (f"{p[0][0]} new shapes predicted at {p[0][0] * _shape_price():.2f} s, paid "
            + " and ".join(f"{s * x:.2f}" for s, x in p) + " s in all")


CLAIMS += [
    Claim("109.7k (94.9-125.9k) and 109.1k (96.2-123.6k) real\n    tok/s planned, 104.2k (80.9-127.8k) and 109.8k (97.9-124.0k) under `plan=all`",
          lambda: "{} and {} real\n    tok/s planned, {} and {} under `plan=all`".format(*(_kci(_preset_runs(n, 32, ga)) for n in (
              "reports_preset_predict.jsonl", "reports_preset_all.jsonl") for ga in (1, 2)))),
    Claim("The runs paid 0.08-0.12 s for each in 9 of the 11 runs (the mean of as many of their slowest steps as\n    they met new shapes, "
          "over the median step); 32 x 1 paid 0.04 and 0.07 s in its two.", _paid_text),
    Claim("2 new shapes predicted at 0.29 s, paid 0.08 and 0.14 s in all", _paid_32x1),
]


C3 = "planner/results/h100_call3/"


def _call3_families_text() -> str:
    """The H100's call 3 (results/h100_call3/predict_predict.log): the predictor's parts per family."""
    fam, total = _families(C3 + "predict_predict.log"), float(_predictor_process(C3 + "predict_predict.log"))
    span = lambda key, spec=".1f": f"{min(f[key] for f in fam):{spec}}-{max(f[key] for f in fam):{spec}}"  # noqa: E731
    sums = [sum(f.values()) for f in fam]
    return (f"predictor's {total} s, each padding family took {min(sums):.0f}-{max(sums):.0f} s (speed {span('speed')} s, memory probes\n"
            f"  {span('memory')} s, data {span('data')} s, copies {span('copies')} s) and ~{total - sum(sums):.0f} s were the process itself")


def _call3_speed_text() -> str:
    import json

    from experiments.claims import ROOT
    from experiments.figures import _records

    predicted = {(c["family"].split("padding=")[1].split()[0], int(c["cell"].split("batch=")[1].split(",")[0])): c["real_tokens_per_s"]
                 for c in json.loads((ROOT / "experiments" / C3 / "predictions_predict.json").read_text())}
    got = {(r["config"]["padding"]["strategy"], r["config"]["batch"]["size"]): r for r in _records(C3 + "reports.jsonl") if r["status"] == "ok"}
    x = {cell: r["throughput"]["real_tokens_per_s"] / predicted[cell] for cell, r in got.items()}
    busy = {cell: f"{r['gpu_busy_fraction']:.0%}" for cell, r in got.items()}
    (b32,) = {busy["dynamic", 32], busy["max_length", 32]}
    return (f"their speed {x['dynamic', 16]:.2f}x (micro-batch 16, dynamic: host-bound,\n  GPU busy {busy['dynamic', 16]}), "
            f"{x['dynamic', 32]:.2f}x and {x['max_length', 32]:.2f}x (32, GPU busy {b32})")


def _g2_paid() -> str:
    p = [x for _, _, x in _paid()]
    return f"(priced {_shape_price():.3f} s each, paid {min(p):.2f}-{max(p):.2f} s)"


def _grid18_dynamic16_predicted() -> str:
    from experiments.figures import _records

    (r,) = [r for r in _records("planner/results/h100_grid18/predict/decisions_predict.jsonl")
            if {"batch='16'", "padding=dynamic"} <= set(r["overrides"])]
    p = r["prediction"]
    return f"predicted {p['real_tokens_per_s'] / 1000:.1f}k ({p['low'] / 1000:.1f}-{p['high'] / 1000:.1f}k)"


def _fixed_calibrated(batch: str) -> str:
    import re

    from experiments.figures import _records

    (r,) = [r for r in _records(F5 + "decisions_fastest5_fixed.jsonl") if f"batch.size={batch}" in r["job"].split(",")]
    return re.search(r"calibrated ([\d,]+ \([\d,-]+\))", r["decision"])[1]


CLAIMS += [
    Claim("predictor's 39.3 s, each padding family took 11-13 s (speed 5.5-6.9 s, memory probes\n"
          "  3.0-4.0 s, data 1.3-1.9 s, copies 0.1-1.0 s) and ~16 s were the process itself", _call3_families_text),
    Claim("their speed 0.62x (micro-batch 16, dynamic: host-bound,\n  GPU busy 53%), 0.99x and 1.02x (32, GPU busy 91%)", _call3_speed_text),
    Claim("(priced 0.144 s each, paid 0.04-0.12 s)", _g2_paid),
    Claim("0.144 s in call 10. The runs paid\n    0.04-0.12 s for each", lambda: (lambda p: f"{_shape_price():.3f} s in call 10. The runs paid\n"
          f"    {min(p):.2f}-{max(p):.2f} s for each")([x for _, _, x in _paid()])),
    Claim("predicted 102.9k (99.4-119.0k)", _grid18_dynamic16_predicted),
    Claim("it put bs 8 at 3,040\n    (2,830-4,422) and bs 4 at 1,522 (1,415-2,213)", lambda: "it put bs 8 at {}\n    {} and bs 4 at {}".format(
        *_fixed_calibrated("8").split(" ", 1), _fixed_calibrated("4"))),
    Claim("19 of 21 measurements within 3%", lambda: f"{_h200_measurements() - len(_h200_memory_misses())} of {_h200_measurements()} measurements within 3%"),
    Claim("a profile slows later launches 1.46x", lambda: "a profile slows later launches {:.2f}x".format(
        {r["teardown_cupti"]: r for r in __import__("experiments.figures", fromlist=["_records"])._records(
            F5 + "profiler_after.jsonl")}[None]["after_over_before"])),
    Claim("max_length 4 measured 33.9k (30.4-38.2k) and 24.4k (23.3-25.6k) on two machines",
          lambda: "max_length 4 measured {} and {} on two machines".format(*_max_length_4()[:2])),
    Claim("Llama bs 16 x ga 1 1.78x (1.61-1.98) bs 8 x ga 2",
          lambda: f"Llama bs 16 x ga 1 {times(Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=16'), Fig.by_overrides(G4_FASTEST_PREDICT, 'batch.size=8'))} bs 8 x ga 2"),
    Claim("210 s against 635 s (0.331)", lambda: (lambda c: (lambda p, a: f"{p} s against {a} s ({p / a:.3f})")(
        int(c[3].split()[0]), sum(int(x) for x in c[4].split(" + "))))(_row("planner/g4_times", "largest"))),
    Claim("146 s against 120 s (1.22)", lambda: (lambda c: (lambda p, a: f"{p} s against {a} s ({p / a:.2f})")(
        int(c[3].split()[0]), sum(int(x) for x in c[4].split(" + "))))(_row("planner/g4_times", "fastest (top 3)"))),
    Claim("85 s against 120 s (0.71)", lambda: _planned_vs_all("planner/g4_times", "fastest (leader)", "{p} s against {a} s ({r})")),
    Claim("115 s against 524 s (0.22)", lambda: _planned_vs_all("planner/fastest5_times", "calls 1-2: profiled between timings", "{p} s against {a} s ({r})")),
]


def _host_flag() -> str:
    """The host-bound flag of call 7's runs (planner_lines_predict.txt): the same step's move between processes."""
    import re

    m = re.search(r"the same such step moved ([\d.]+)x \([^)]*\) and ([\d.]+)x", _text(H7 + "planner_lines_predict.txt"))
    return f"({m[1]}-{m[2]}x on an H200"


def _grid_misses_in_call7() -> str:
    """The 18-cell grids' peaks off their prediction by over 3%, as a word, where all are call 7's."""
    n = sum(abs(x - 1) > 0.03 for x in _grid_memory_ratios())
    return {2: "two"}.get(n, str(n)) if n == len(_h200_memory_misses()) else "?"


# docs/sweeps.md
CLAIMS += [
    Claim("(1.12-1.20x on an H200", _host_flag),
    Claim("On those grids memory was predicted within 3% on every cell measured, but for two cells of that H200 session",
          lambda: "On those grids memory was predicted within 3% on every cell measured, but for {} cells of that H200 session".format(
              _grid_misses_in_call7())),
]


def _grid18_v2_host_bound() -> str:
    """experiments/README.md: call 6's planned sweep (planner/grid18_v2), its host-bound cells of 8-16 rows
    (dynamic and max_length padding; grouped 16 is counted with micro-batch 32): measured over predicted tok/s."""
    from experiments import tables

    x = []
    for line in tables.TABLES["planner/grid18_v2"][1]().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("dynamic", "max_length") and cells[1] in ("8", "16") and cells[6] == "plan=predict":
            x.append(float(cells[8].split("**")[1]))
    return f"host-bound 8-16 rows were still {min(x):.2f}-{max(x):.2f}x"


CLAIMS += [Claim("host-bound 8-16 rows were still 0.63-0.84x", _grid18_v2_host_bound)]


def _grid18_all_jobs() -> dict[int, list[float]]:
    """Call 4's plan=all on H100s (its two calls' logs): each job's seconds, by micro-batch."""
    import re

    from experiments.planner.tables_g4 import _sweeps

    g = "planner/results/h100_grid18/"
    out: dict[int, list[float]] = {}
    for run in _sweeps(g + "all_1/planner.log", g + "all_2/planner.log")["plan_all"]:
        for job, t in run["jobs"].items():
            out.setdefault(int(re.search(r"\bbatch='?(\d+)", job)[1]), []).append(t)
    return out


def _predict_first_dynamic() -> list[float]:
    """predict_first/ (call 4's cut planned sweep): plan=all's measured real tok/s over its dynamic predictions."""
    import json
    import re

    from experiments.claims import ROOT
    from experiments.figures import _records

    g = "planner/results/h100_grid18/"
    pred = {int(re.search(r"(?:^|,)batch=(\d+)", c["cell"])[1]): c["real_tokens_per_s"]
            for c in json.loads((ROOT / "experiments" / g / "predict_first/predictions_predict.json").read_text())
            if "padding=dynamic" in c["family"] and c.get("real_tokens_per_s")}
    return [r["throughput"]["real_tokens_per_s"] / pred[r["config"]["batch"]["size"]]
            for run in ("all_1", "all_2") for r in _records(f"{g}{run}/reports.jsonl")
            if r["status"] == "ok" and "padding=dynamic" in r["label"]]


def _pooled_line_text() -> str:
    """Call 4's depth check, host-bound cells (2-16 rows): one line through the medians of all their blocks at 1 and
    2 layers (host time), at 4 layers over each cell's measured 4-layer median (as _own_line_text, pooled)."""
    import statistics

    cells = [r for r in _h100_depth_check() if r["batch"] <= 16]
    m1, m2 = (statistics.median(b["host"] for r in cells for b in r["wall"]["blocks"][d]) for d in ("1", "2"))
    miss = [(m1 + 3 * (m2 - m1)) / statistics.median(b["host"] for b in r["wall"]["blocks"]["4"]) for r in cells]
    return f"The same line through the median of every host-bound cell's blocks missed it by {min(miss):.2f}-{max(miss):.2f}x."


def _h7_micro_batch_ms() -> str:
    """Call 7 (H200), plan=all: a micro-batch's time (step over grad_accum) at 2-8 rows, max_length and dynamic."""
    from experiments.figures import _records

    ms = [r["step_time_s"]["mean"] / r["config"]["batch"]["grad_accum"] * 1000 for r in _records(H7 + "reports_all.jsonl")
          if r["status"] == "ok" and r["config"]["batch"]["size"] <= 8 and ("padding=max_length" in r["label"] or "padding=dynamic" in r["label"])]
    return f"A host-bound micro-batch (2-8 rows) took {min(ms):.0f}-{max(ms):.0f} ms across the session's `plan=all` runs"


def _f5_busy() -> str:
    from experiments.figures import _records

    b = [r["gpu_busy_fraction"] for f in ("reports_fastest5_all.jsonl", "reports_fastest5_predict.jsonl")
         for r in _records(F5 + f) if r["status"] == "ok"]
    return f"the runs' GPUs were busy {min(b) * 100:.0f}-{max(b):.0%}"


def _probes_text() -> str:
    """The memory probes per family: call 4 (h100_grid18/predict, 6 cells a family) and call 3 (h100_call3, 5)."""
    four, three = ([f["memory"] for f in _families(p)] for p in ("planner/results/h100_grid18/predict/predict_predict.log", C3 + "predict_predict.log"))
    return (f"the memory probes cost {min(four):.1f}-{max(four):.1f} s a family of\n  6 cells, down from "
            f"{min(three):.0f}-{max(three):.0f} s for 5.")


def _call2_two_sweeps() -> str:
    """Call 2 (H100): sweep=fit's and plan=predict's predictions of the same host-bound dynamic cells (4-16 rows)."""
    import json
    import re

    from experiments.claims import ROOT

    def load(name: str) -> dict[int, float]:
        cells = json.loads((ROOT / "experiments/planner/results/h100_call2" / name).read_text())
        return {int(re.search(r"(?:^|,)batch(?:\.size)?=(\d+)", c["cell"])[1]): c["real_tokens_per_s"] for c in cells
                if "padding=dynamic" in c.get("family", "") + c["cell"] and c.get("real_tokens_per_s")}

    fit, predict = load("predictions_fit.json"), load("predictions_predict.json")
    x = [max(fit[b], predict[b]) / min(fit[b], predict[b]) for b in (4, 8, 16)]
    return f"was predicted {min(x):.1f}-{max(x):.1f}x apart in two sweeps of one call"


CLAIMS += [
    Claim("predicted the dynamic\n  family 3.6-6.8x too slow (plan=all's 5 runs over its predictions, min-max)",
          lambda: (lambda x: f"predicted the dynamic\n  family {min(x):.1f}-{max(x):.1f}x too slow (plan=all's {len(x)} runs over its predictions, min-max)")(
              _predict_first_dynamic())),
    Claim("whose cells took 47-84 s each under `plan=all`",
          lambda: (lambda t: f"whose cells took {min(t):.0f}-{max(t):.0f} s each under `plan=all`")(_grid18_all_jobs()[2] + _grid18_all_jobs()[4])),
    Claim("A cell took 18-84 s under `plan=all` (40 s on average)",
          lambda: (lambda t: f"A cell took {min(t):.0f}-{max(t):.0f} s under `plan=all` ({sum(t) / len(t):.0f} s on average)")(
              [x for v in _grid18_all_jobs().values() for x in v])),
    Claim("The same line through the median of every host-bound cell's blocks missed it by 0.89-1.23x.", _pooled_line_text),
    Claim("A host-bound micro-batch (2-8 rows) took 25-43 ms across the session's `plan=all` runs", _h7_micro_batch_ms),
    Claim("the runs' GPUs were busy 12-83%", _f5_busy),
    Claim("the memory probes cost 1.4-1.8 s a family of\n  6 cells, down from 3-4 s for 5.", _probes_text),
    Claim("was predicted 1.3-2.1x apart in two sweeps of one call", _call2_two_sweeps),
]


def _depth_medians_text() -> str:
    """Call 4's depth check, host-bound cells (2-16 rows): the median of all their blocks' host time per depth, and
    the cells' own 4-layer medians, min-max."""
    import statistics

    cells = [r for r in _h100_depth_check() if r["batch"] <= 16]
    m = {d: statistics.median(b["host"] for r in cells for b in r["wall"]["blocks"][d]) * 1000 for d in ("1", "2", "4")}
    own = [statistics.median(b["host"] for b in r["wall"]["blocks"]["4"]) * 1000 for r in cells]
    return (f"a host-bound micro-batch took the bare loop a median of\n{m['1']:.0f} ms on 1 layer, {m['2']:.0f} ms on 2 layers and "
            f"{m['4']:.0f} ms on 4 (each cell's own {min(own):.0f}-{max(own):.0f} ms).")


CLAIMS += [Claim("a host-bound micro-batch took the bare loop a median of\n12 ms on 1 layer, 20 ms on 2 layers and 35 ms on 4 "
                 "(each cell's own 30-41 ms).", _depth_medians_text)]
