"""The tables of experiments/loop_overheads/README.md: each habit over its rounds, pandas.concat's cost."""
from __future__ import annotations

from experiments.figures import ACROSS, HERE, Fig, _records, check, markdown
from src.base import stats


def loop_overheads() -> str:
    """Each habit's runs in rounds over two calls; its interval is the spread of its runs (stats.of_repeats)."""
    P = "loop_overheads/results/pooled/reports.jsonl"
    run = lambda habit, r: Fig(P, f"debug={habit},experiment=loop_overheads,logger=none,model=qwen3" + (f",repeat={r}" if r else ""))
    habits = {"none": [0, 1, 2, 3], **{h: [0, 1, 3] for h in ("empty_cache", "item_sync", "pandas_concat", "cudnn_deterministic")}}
    figs = {h: [run(h, r) for r in reps] for h, reps in habits.items()}
    ci = {h: stats.of_repeats([f.rate for f in fs]) for h, fs in figs.items()}
    rows = []
    for habit, fs in figs.items():
        rates = [f"{f.rate:,.0f}" + (" (call 1)" if habit == "none" and r == 2 else "") for f, r in zip(fs, habits[habit])]
        busy = [f.get("gpu_busy_fraction") for f in fs]
        against = ""
        if habit != "none":  # both sides pool the rounds of calls 1 and 2 (a block design): labelled as crossing
            across = check({f.call_id for f in figs["none"]}, {f.call_id for f in fs}, across_calls=True, what=habit)
            c = stats.compare(ci["none"], ci[habit], ci["none"].mean, ci[habit].mean)
            against = (f"tie ({c.ratio:.2f}x, {c.low:.2f}-{c.high:.2f})" if c.tie
                       else f"**loses: none is {c.ratio:.2f}x ({c.low:.2f}-{c.high:.2f})**") + (ACROSS if across else "")
        rows.append([habit, ", ".join(rates), f"{ci[habit].mean:,.0f} ({ci[habit].low:,.0f}-{ci[habit].high:,.0f})",
                     f"{sum(f.get('step_time_s.mean') for f in fs) / len(fs) * 1000:.0f}", f"{min(busy) * 100:.0f}-{max(busy):.0%}", against])
    return markdown(["habit", "real tok/s per run (rounds 1, 2, 3)", "mean (95%)", "step ms", "GPU busy", "against none"], rows)

def loop_overheads_concat() -> str:
    """pandas.concat's cost per step as the frame grows (concat_cost.py on the CPU; one JSON line per logged step)."""
    rows = [r for r in _records("loop_overheads/concat_cost_cpu.jsonl") if r.get("step") in (1000, 10000, 50000)]
    return markdown(["step", "rows in the frame", "mean ms per concat (100-step window)", "p90 ms"],
                    [[f"{r['step']:,}", f"{r['rows_in_frame']:,}", f"{r['concat_ms_mean']:.3f}", f"{r['concat_ms_p90']:.3f}"]
                     for r in rows])


TABLES = {"loop_overheads/pooled": (HERE / "loop_overheads/README.md", loop_overheads),
          "loop_overheads/concat": (HERE / "loop_overheads/README.md", loop_overheads_concat)}
