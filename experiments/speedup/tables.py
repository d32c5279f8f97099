"""The tables of experiments/speedup/README.md: a user's script plain and sped up, run by run and as ratios."""
from __future__ import annotations

from statistics import fmean

from experiments.figures import HERE, _records, markdown, quotient, row_call


RUN_MARK = {"plain": "P", "sped": "S", "graphs": "G"}  # as written, speedup(trainer), speedup(trainer, graphs=True)


def speedup_runs(path: str, scripts: tuple[str, ...]) -> str:
    """A user's script plain (P) and with `trainsweep.speedup(trainer)` (S), each its own process, in the order they
    ran (one call): the script's own clock, what speedup's verification said, the losses."""
    rows, seen = [], {}
    for r in _records(path):
        if r["script"] not in scripts:
            continue
        key = (r["script"], r["mode"])
        seen[key] = seen.get(key, 0) + 1
        v = (r.get("verified") or {}).get("speedup")
        said = f"{v['ratio']:.2f}x ({v['low']:.2f}-{v['high']:.2f})" if v else ""
        rows.append([r["script"], f"{RUN_MARK[r['mode']]}{seen[key]}", f"{r['own_clock_tok_s']:,.0f}",
                     f"{r['train_runtime']:.1f}", f"{r['speedup_s']:.0f}" if r["mode"] != "plain" else "",
                     f"{r['rows_per_step']:.1f}", said, f"{r['peak_gb']:.1f}", f"{r['train_loss']:.4f}",
                     " / ".join(f"{x:.3f}" for x in r["losses"][:3])])
    return markdown(["script", "run", "script's own clock, real tok/s", "Trainer train_runtime s", "speedup() s",
                     "rows a step", "speedup()'s own A/B (95%)", "peak GB", "train loss", "logged loss, first 3 points"], rows)


def speedup_ratios(path: str, scripts: tuple[str, ...], modes: tuple[str, ...] = ("sped",)) -> str:
    """Per script, sped-up mode and device call: its runs' mean over the plain runs' mean, and the range of S/P (or
    G/P) over every pairing. A file of several calls gets a row per call (its calls from figures.row_call): no ratio
    pairs runs of two calls."""
    rows = []
    calls = list(dict.fromkeys(row_call(r) for r in _records(path)))
    for script in scripts:
        for call in calls:
            runs = [r for r in _records(path) if r["script"] == script and row_call(r) == call]
            plain = [r["own_clock_tok_s"] for r in runs if r["mode"] == "plain"]
            for mode in modes:
                sped = [r["own_clock_tok_s"] for r in runs if r["mode"] == mode]
                line = f"{script}, speedup(trainer, graphs=True)" if mode == "graphs" else script
                pairings = (f"{quotient(min(sped), max(plain), call, call):.2f}-{quotient(max(sped), min(plain), call, call):.2f}"
                            if len(sped) * len(plain) > 1 else "one pairing")
                rows.append([line + (f" ({call})" if len(calls) > 1 else ""), ", ".join(f"{x:,.0f}" for x in plain),
                             ", ".join(f"{x:,.0f}" for x in sped), f"**{quotient(fmean(sped), fmean(plain), call, call):.2f}x**",
                             pairings])
    return markdown(["script", "plain runs, real tok/s", "sped-up runs, real tok/s", "speedup (means)",
                     "range over every P/S pairing"], rows)


TABLES = {"speedup/full": (HERE / "speedup/README.md", lambda: speedup_runs("speedup/results/h100_full_classifiers.jsonl",
                                                                             ("classifier8", "classifier32"))),
          "speedup/full_ratios": (HERE / "speedup/README.md", lambda: speedup_ratios(
              "speedup/results/h100_full_classifiers.jsonl", ("classifier8", "classifier32"))),
          "speedup/sft": (HERE / "speedup/README.md", lambda: speedup_runs("speedup/results/h100_full_sft.jsonl", ("sft",))),
          "speedup/sft_ratios": (HERE / "speedup/README.md", lambda: speedup_ratios("speedup/results/h100_full_sft.jsonl",
                                                                                     ("sft",))),
          "speedup/before_step_lever": (HERE / "speedup/README.md", lambda: speedup_ratios(
              "speedup/results/h100_full_before_step_lever.jsonl", ("classifier8", "classifier32"))),
          "speedup/graphs_call1": (HERE / "speedup/README.md", lambda: speedup_runs(
              "speedup/results/h100_graphs_call1.jsonl", ("classifier8",))),
          "speedup/graphs_call1_ratios": (HERE / "speedup/README.md", lambda: speedup_ratios(
              "speedup/results/h100_graphs_call1.jsonl", ("classifier8",), ("sped", "graphs"))),
          "speedup/graphs_calls2_3": (HERE / "speedup/README.md", lambda: speedup_runs(
              "speedup/results/h100_graphs_calls2_3.jsonl", ("classifier8",))),
          "speedup/graphs_calls2_3_ratios": (HERE / "speedup/README.md", lambda: speedup_ratios(
              "speedup/results/h100_graphs_calls2_3.jsonl", ("classifier8",), ("graphs",))),
          "speedup/4layers": (HERE / "speedup/README.md", lambda: speedup_runs(
              "speedup/results/h100_4layers.jsonl", ("classifier8", "classifier32", "sft", "bert"))),
          "speedup/bert_order": (HERE / "speedup/README.md", lambda: speedup_runs(
              "speedup/results/h100_4layers_order.jsonl", ("bert", "classifier8")))}
