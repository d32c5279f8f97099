"""The tables of experiments/planner/README.md from the H100 calls and the H200 18-cell grid; G4, the fastest-of-5,
the preset and the vCPU tables are in tables_g4.py."""
from __future__ import annotations

import json
import re

from experiments.figures import ACROSS, HERE, _records, markdown, over, ranks, row_call


def _planner_jobs(log: str) -> dict[str, dict]:
    """The job lines of experiments/planner's call, by sweep ('all', 'predict') and (batch, padding)."""
    out, sweep = {"all": {}, "predict": {}}, "all"
    for line in (HERE / log).read_text().splitlines():
        if line.startswith("plan_all: exit"):
            sweep = "predict"
        m = re.search(r"#\d+ : .*batch='(\d+)'.*padding=(\w+): (ok|oom)(?:, ([\d,]+) \(([\d,]+)-([\d,]+)\))?", line)
        if m:
            num = [float(x.replace(",", "")) if x else None for x in m.groups()[3:]]
            out[sweep][(int(m[1]), m[2])] = {"status": m[3], "rate": num[0], "low": num[1], "high": num[2]}
    return out


def planner() -> str:
    """sweep.plan=all and sweep.plan=predict on one grid, one call: each cell's prediction, both measurements, the decision."""
    jobs = _planner_jobs("planner/results/h100_planner_call.log")
    rows = []
    for r in _records("planner/results/h100_plan_predict_decisions.jsonl"):
        batch = int(next(o for o in r["overrides"] if o.startswith("batch=")).split("=")[1].strip("'"))
        padding = next(o for o in r["overrides"] if o.startswith("padding=")).split("=")[1]
        p, key = r["prediction"], (batch, padding)
        cells = []
        for sweep in ("all", "predict"):
            j = jobs[sweep].get(key)
            cells.append("" if j is None else j["status"] if j["status"] != "ok" else f"{j['rate']:,.0f} ({j['low']:,.0f}-{j['high']:,.0f})")
        ref = jobs["all"].get(key)
        error = (over(ref["rate"], p["real_tokens_per_s"], "h100_planner_call", row_call(r), across_calls=True)
                 if ref and ref["status"] == "ok" else "")
        decision = r["decision"].split(":")[0] if r["decision"].startswith(("not run", "predicted")) else "ran"
        rows.append((batch, padding, [str(batch), padding, f"{p['memory_gb']:.2f}",
                     f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f})", cells[0] or "cut (call's time)", error,
                     decision, cells[1]]))
    rows.sort(key=lambda x: (x[0], x[1]))
    return markdown(["micro-batch", "padding", "predicted GB", "predicted real tok/s (95%)", "plan=all: measured",
                     "plan=all / predicted", "plan=predict: decision", "plan=predict: measured"], [r[2] for r in rows])


def planner_call2() -> str:
    """Call 2: plan=predict on the same grid with the cheaper probe, then sweep=fit (dynamic padding): each cell's
    prediction, what the plan did with it and, where it ran, the measurement (the reports' own intervals)."""
    reports = _records("planner/results/h100_call2/reports.jsonl")
    rows = []
    for sweep in ("predict", "fit"):
        for r in _records(f"planner/results/h100_call2/decisions_{sweep}.jsonl"):
            got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
            batch = int(got.get("batch", got.get("batch.size")))
            padding = got.get("padding", "dynamic")
            p = r["prediction"]
            ran = [x for x in reports if set(r["overrides"]) <= set(x["overrides"])]
            measured, vs = "", ""
            if ran:
                th, peak = ran[0]["throughput"], ran[0]["memory_gb"]["peak_allocated"]
                measured = (f"{th['real_tokens_per_s']:,.0f} ({th['real_tokens_per_s_low']:,.0f}-{th['real_tokens_per_s_high']:,.0f}); "
                            f"{peak:.2f} GB")
                vs = _vs({"rate": th["real_tokens_per_s"], "gb": peak, "call": row_call(ran[0])}, r)
            decision = r["decision"].split(":")[0] if r["decision"].startswith(("not run", "predicted")) else "ran"
            rows.append((sweep, batch, padding, [f"`sweep.plan=predict`" if sweep == "predict" else "`sweep=fit`",
                         str(batch), padding, f"{p['memory_gb']:.2f}", f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f})",
                         decision, measured, vs]))
    rows.sort(key=lambda x: (x[0] != "predict", x[1], x[2]))
    return markdown(["sweep", "micro-batch", "padding", "predicted GB", "predicted real tok/s (95%)", "decision",
                     "measured real tok/s (95%); peak", "measured / predicted: tok/s; memory"], [r[3] for r in rows])


G18 = "planner/results/h100_grid18/"


def _grid18_reports(*paths: str) -> dict[tuple[int, str], dict]:
    out = {}
    for path in paths:
        for r in _records(G18 + path):
            out[(r["config"]["batch"]["size"], r["config"]["padding"]["strategy"])] = r
    return out


def _measured(r: dict | None) -> tuple[str, dict | None]:
    if r is None:
        return "", None
    if r["status"] != "ok":
        return r["status"], None
    th = r["throughput"]
    return (f"{th['real_tokens_per_s']:,.0f} ({th['real_tokens_per_s_low']:,.0f}-{th['real_tokens_per_s_high']:,.0f}); "
            f"{r['memory_gb']['peak_allocated']:.2f} GB"), {"rate": th["real_tokens_per_s"], "gb": r["memory_gb"]["peak_allocated"],
                                                            "call": row_call(r)}


def _vs(fig: dict, decided: dict, bold: bool = False) -> str:
    """Measured over predicted, real tok/s then GB: the measurement's call against the prediction's (its decisions
    row's), labelled where they differ (a plan=all that ran in other calls than the planned sweep)."""
    p, call = decided["prediction"], row_call(decided)
    speed = over(fig["rate"], p["real_tokens_per_s"], fig["call"], call, bold=bold, across_calls=True)
    return f"{speed.removesuffix(ACROSS)}; {over(fig['gb'], p['memory_gb'], fig['call'], call, '.3f', across_calls=True)}"


def planner_grid18() -> str:
    """The 18-cell grid: each cell's prediction (the planned sweep's), plan=all's measurement (two calls) and its
    rank, what the planned sweep decided and measured and its rank."""
    every = _grid18_reports("all_1/reports.jsonl", "all_2/reports.jsonl")
    planned = _grid18_reports("predict/reports.jsonl")
    rank_all, rank_plan = ranks(G18 + "all_2/summary_all.csv"), ranks(G18 + "predict/summary_predict.csv")
    rows = []
    for r in _records(G18 + "predict/decisions_predict.jsonl"):
        got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
        batch, padding, p = int(got["batch"]), got["padding"], r["prediction"]
        job = f"batch={batch}, padding={padding}"
        text_all, fig_all = _measured(every.get((batch, padding)))
        text_plan, _ = _measured(planned.get((batch, padding)))
        vs = _vs(fig_all, r) if fig_all else ""
        decision = r["decision"].split(":")[0] if r["decision"].startswith(("not run", "predicted")) else "ran"
        rows.append(((padding, batch), [padding, str(batch), f"{p['memory_gb']:.2f}",
                     f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f})", text_all, rank_all.get(job, ""), vs,
                     decision, text_plan, rank_plan.get(job, "") if text_plan and text_plan != "oom" else ""]))
    rows.sort(key=lambda x: x[0])
    return markdown(["padding", "micro-batch", "predicted GB", "predicted real tok/s (range)",
                     "plan=all: real tok/s (95%); peak", "plan=all rank", "plan=all / predicted: tok/s; GB",
                     "plan=predict: decision", "plan=predict: real tok/s (95%); peak", "plan=predict rank"], [r[1] for r in rows])


G18V2 = "planner/results/h100_grid18_v2/"


def planner_grid18_v2() -> str:
    """The 18-cell grid again with the new-shape term and the window's own tokens (one call): each cell's
    prediction, the planned sweep's decision, and the measurement of every cell that ran in that call (the planned
    sweep's, then a plan=all sweep of 2 and 8 rows cut by the call's time)."""
    ran = {}
    for r in _records(G18V2 + "reports.jsonl"):
        key = (r["config"]["batch"]["size"], r["config"]["padding"]["strategy"])
        ran.setdefault(key, []).append(r)
    rows = []
    for r in _records(G18V2 + "decisions_predict.jsonl"):
        got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
        batch, padding, p = int(got["batch"]), got["padding"], r["prediction"]
        decision = r["decision"].split(":")[0] if r["decision"].startswith(("not run", "predicted")) else "ran"
        for m in ran.get((batch, padding), [None]):
            text, fig = _measured(m)
            sweep = "" if m is None else "plan=predict" if m["label"].startswith("plan_predict") else "plan=all"
            vs = _vs(fig, r, bold=True) if fig else ""
            new = f"{p['new_shapes']:.1f}" + (f" / {m['shapes']['new_in_window']}" if fig else "")
            rows.append(((padding, batch), [padding, str(batch), f"{p['memory_gb']:.2f}", new,
                         f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f})", decision, sweep, text, vs]))
    rows.sort(key=lambda x: x[0])
    return markdown(["padding", "micro-batch", "predicted GB", "new shapes in the window: predicted / measured",
                     "predicted real tok/s (range)", "plan=predict: decision", "measured in", "real tok/s (95%); peak",
                     "measured / predicted: tok/s; GB"], [r[1] for r in rows])


def planner_new_shapes() -> str:
    """A new batch shape's first call over its second, at 1, 2 and 4 layers, with sdpa's default kernels (cuDNN's
    under a padding mask) and without cuDNN's; and the 4-layer copy's steady micro-batch beside it."""
    rows = []
    for kernels, label in (("default", "default (cuDNN's under a mask)"), ("no_cudnn", "flash, mem-efficient, math")):
        for r in _records(f"planner/results/h100_new_shapes/copies_{kernels}.jsonl"):
            calls = r["first_call_s"]
            steady = sorted(b["micro_batch"] for b in r["blocks"]["4"])[2]
            rows.append([label, str(r["batch"])] + [", ".join(f"{x * 1e3:.0f}" for x in calls[n]) for n in ("1", "2", "4")]
                        + [f"{steady * 1e3:.1f}"])
    return markdown(["sdpa kernels", "micro-batch (grouped)", "1 layer: first call ms over the second",
                     "2 layers", "4 layers", "4 layers: a micro-batch, steady, ms (median of 5 blocks)"], rows)


G18H200 = "planner/results/h200_grid18/"


def _by_cell(path: str) -> dict:
    out = {}
    for r in _records(path):
        out.setdefault((r["config"]["padding"]["strategy"], r["config"]["batch"]["size"]), r)
    return out


def planner_h200() -> str:
    """The 18-cell grid on an H200 with the host/kernels split (one session, one machine): each cell's prediction,
    what bounds it, the planned sweep's decision and measurement, and plan=all's measurement of every cell."""
    planned, every = _by_cell(G18H200 + "reports_predict.jsonl"), _by_cell(G18H200 + "reports_all.jsonl")
    rank = ranks(G18H200 + "summary_all.csv")
    rows = []
    for r in _records(G18H200 + "decisions_predict.jsonl"):
        got = {o.split("=")[0]: o.split("=")[1].strip("'") for o in r["overrides"]}
        key, p = (got["padding"], int(got["batch"])), r["prediction"]
        decision = r["decision"].split(":")[0] if r["decision"].startswith(("not run", "predicted")) else "ran"
        cells = []
        for m in (planned.get(key), every.get(key)):
            text, fig = _measured(m)
            cells += [text, _vs(fig, r, bold=True) if fig else ""]
        rows.append((key, [key[0], str(key[1]), f"{p['memory_gb']:.2f}", p.get("bound") or "own line",
                           f"{p['real_tokens_per_s']:,.0f} ({p['low']:,.0f}-{p['high']:,.0f})", decision, *cells[:2],
                           cells[2], rank.get(f"batch={key[1]}, padding={key[0]}", ""), cells[3]]))
    rows.sort(key=lambda x: x[0])
    return markdown(["padding", "micro-batch", "predicted GB", "bound",
                     "predicted real tok/s (range)", "plan=predict: decision", "plan=predict: real tok/s (95%); peak",
                     "measured / predicted: tok/s; GB", "plan=all: real tok/s (95%); peak", "plan=all rank",
                     "plan=all / predicted: tok/s; GB"], [r[1] for r in rows])


def planner_h200_check() -> str:
    """copies_check.py at 8 layers on the H200: the three readings of the copies against the 8-layer copy."""
    rows = []
    for r in _records(G18H200 + "copies_check.jsonl"):
        m = r["measured_s"]
        rows.append([str(r["batch"]), f"{r['gpu_s']['8'] * 1e3:.1f}", f"{m * 1e3:.1f}",
                     f"{r['line_1_2_s'] * 1e3:.1f} ({r['line_1_2_s'] / m:.2f})", f"{r['own_s'] * 1e3:.1f} ({r['own_s'] / m:.2f})",
                     f"{r['predicted_s'] * 1e3:.1f} ({r['predicted_s'] / m:.2f}), {r['bound'] or 'own line'}"])
    return markdown(["micro-batch (max_length)", "8 layers: kernels ms", "8 layers: measured ms (median of 5 blocks)",
                     "its own 1-2 line (/ measured)", "its own 2-4 line", "the predictor: pooled host, kernels"], rows)


def planner_h200_repeats() -> str:
    """The predictor run 3 more times on the same 18 cells (one call, the families in another order in run b):
    each family's pooled host line at 4 layers, and the predictions of two host-bound cells."""
    rows = []
    for run in "abc":
        preds = json.loads((HERE / G18H200 / f"repeats/pred_{run}.json").read_text())
        order = list(dict.fromkeys(p["family"].split("padding=")[1].split()[0] for p in preds))
        line = {}
        for p in preds:
            padding = p["family"].split("padding=")[1].split()[0]
            size = int(p["cell"].split(",batch=")[1].split(",")[0])
            line.setdefault(padding, {})[size] = p
        rows.append([run, ", ".join(order)] + [f"{line[f][2]['micro_batch_s']['host'] * 1e3:.1f}" for f in ("max_length", "dynamic", "grouped")]
                    + [f"{line['max_length'][s]['real_tokens_per_s']:,.0f}" for s in (4, 8)]
                    + [f"{line['max_length'][2]['memory_gb']:.2f}"])
    return markdown(["predictor run", "families in order", "host ms a micro-batch: max_length", "dynamic", "grouped",
                     "max_length 4: predicted real tok/s", "max_length 8", "max_length 2: predicted GB"], rows)


TABLES = {"planner/h100": (HERE / "planner/README.md", planner),
          "planner/call2": (HERE / "planner/README.md", planner_call2),
          "planner/grid18": (HERE / "planner/README.md", planner_grid18),
          "planner/grid18_v2": (HERE / "planner/README.md", planner_grid18_v2),
          "planner/h200": (HERE / "planner/README.md", planner_h200),
          "planner/h200_check": (HERE / "planner/README.md", planner_h200_check),
          "planner/h200_repeats": (HERE / "planner/README.md", planner_h200_repeats),
          "planner/new_shapes": (HERE / "planner/README.md", planner_new_shapes)}
