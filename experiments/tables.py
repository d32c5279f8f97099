"""The result tables of experiments/*/README.md, built from the committed result files, so that no figure in a
README can drift from its data.

A README marks each table built here: `<!-- table: NAME -->` on the line before it, `<!-- /table -->` after.
    python experiments/tables.py           # exit 1 naming each table whose README copy differs from its files
    python experiments/tables.py --write   # rewrite those tables in place

A figure is one labelled report (`report.json` as scripts/collect.py appends it) or one plain-Trainer anchor line
in a results file. Its 95% interval is the one the report stores, or, for reports older than the interval code,
the same batch-means interval computed from its stored step times. A ratio is taken only between two figures of
one device call (one machine, one sitting): a figure's call is its file's name without `_anchors`, unless the
table names it. A ratio that must cross calls is refused unless its row asks for it, and then it says so.

One concern, however long: the README tables, one small builder per table with its rows as data, registered in TABLES.
"""
from __future__ import annotations

import csv
import gzip
import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from statistics import correlation, fmean, median
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.base import stats  # noqa: E402
from experiments.dropin import tables as dropin_tables  # noqa: E402

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- table: {} -->", "<!-- /table -->"


class CrossCall(ValueError):
    """A ratio between figures of two device calls, which the project never states as a same-call result."""


@cache
def _records(path: str) -> tuple[dict, ...]:
    rows = []
    for line in (HERE / path).read_text().splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # the anchor script's Trainer prints dicts in Python's repr
                pass
    return tuple(rows)


@dataclass(frozen=True)
class Fig:
    """One measured figure: `label` is a report's label or an anchor's name in the results file `path`."""

    path: str
    label: str
    call: str | None = None

    @property
    def record(self) -> dict:
        found = [r for r in _records(self.path) if r.get("label", r.get("name")) == self.label]
        if len(found) != 1:
            raise KeyError(f"{self.path}: {len(found)} records labelled {self.label!r}")
        return found[0]

    @classmethod
    def by_overrides(cls, path: str, *given: str, without: tuple[str, ...] = ()) -> "Fig":
        """The one report in `path` run with every override in `given` and none in `without`: for sweep reports
        whose label is a long hashed job name."""
        found = [r for r in _records(path) if set(given) <= set(r.get("overrides") or []) and not set(without) & set(r.get("overrides") or [])]
        if len(found) != 1:
            raise KeyError(f"{path}: {len(found)} reports with {given}, without {without}")
        return cls(path, found[0]["label"])

    @property
    def call_id(self) -> str:
        """The device call the figure came from: the one the table names, else the row's own (scripts/collect.py
        writes CALL_ID into each row since issue 52), else its file's (older rows carry none)."""
        return self.call or self.record.get("call") or Path(self.path).stem.removesuffix("_anchors")

    @property
    def rate(self) -> float:
        r = self.record
        return r["real_tok_per_s"] if "name" in r and "label" not in r else r["throughput"]["real_tokens_per_s"]

    @property
    def interval(self) -> stats.Interval | None:
        """The real tok/s interval: the stored one, else batch means over the stored step times (an anchor has none)."""
        r = self.record
        th, step = r.get("throughput") or {}, r.get("step_time_s") or {}
        if th.get("real_tokens_per_s_low"):
            return stats.Interval(self.rate, th["real_tokens_per_s_low"], th["real_tokens_per_s_high"],
                                  step.get("ci_batches") or 2)
        ci = stats.batch_means(step.get("values") or [])
        if ci is None:
            return None
        ci = stats.Interval(ci.mean, max(ci.low, min(step["values"])), ci.high, ci.batches)  # as analysis.with_interval
        return ci.inverse(self.rate * step["mean"])

    def get(self, dotted: str):
        value = self.record
        for key in dotted.split("."):
            value = (value or {}).get(key)
        return value


def ratio(a: Fig, b: Fig, across_calls: bool = False) -> str:
    """a / b, with its 95% interval where both sides have one, and 'a tie' where that interval says so."""
    if a.call_id != b.call_id and not across_calls:
        raise CrossCall(f"{a.label} ({a.call_id}) / {b.label} ({b.call_id}) crosses calls")
    c = stats.compare(a.interval, b.interval, a.rate, b.rate)
    text = f"{c.ratio:.2f}"
    if c.high != float("inf"):
        text += f" ({c.low:.2f}-{c.high:.2f}){': a tie' if c.tie else ''}"
    return text + (" (across calls)" if a.call_id != b.call_id else "")


def rate(f: Fig, bold: bool = False) -> str:
    ci = f.interval
    text = f"**{f.rate:,.0f}**" if bold else f"{f.rate:,.0f}"
    return text + (f" ({ci.low:,.0f}-{ci.high:,.0f})" if ci else "")


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1%}"


def gb(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


@cache
def ranks(summary_csv: str) -> dict[str, str]:
    """A sweep's ranks by job, from its summary.csv (src/report/summary.py: jobs it can't tell apart share one)."""
    with open(HERE / summary_csv) as f:
        return {row["job"]: row["rank"] for row in csv.DictReader(f)}


# -- the tables ---------------------------------------------------------------------------------------
S = "speed/results/"


def speed_call1() -> str:
    anchor = Fig(S + "h100_table_call1_anchors.jsonl", "bf16_sdpa_b32_group")
    rows = [[f"plain Trainer, {what}", "", rate(f), ratio(f, anchor), "", "", ""]
            for what, f in [('seed "before" (fp32, eager, GC, pad 320, bs 8 x ga 2)', Fig(S + "h100_table_call1_anchors.jsonl", "seed_before")),
                            ("bf16 sdpa bs 8", Fig(S + "h100_table_call1_anchors.jsonl", "bf16_sdpa_b8")),
                            ("bf16 sdpa bs 32 grouped", anchor)]]
    runs = [("fixed 320, bs 32", "`batch=32 padding=max_length`", "fixed_bs32"),
            ("buckets, bs 32", "`batch=32 padding=buckets`", "buckets_bs32"),
            ("packed 8k", "`padding=packed_8k`", "packed8k"),
            ("fixed 320, bs 32, compiled", "`+ trainer.torch_compile=true`", "fixed_bs32_compile"),
            ("packed 8k, compiled", "`padding=packed_8k trainer.torch_compile=true`", "packed8k_compile"),
            ("packed 12k, compiled", "`padding=packed batch.tokens=12288 trainer.torch_compile=true`", "packed12k_compile"),
            ("packed 8k, compiled, second job (warm cache)", "same as packed 8k compiled", "packed8k_compile_again")]
    for what, overrides, label in runs:
        f = Fig(S + "h100_table_call1.jsonl", label)
        rows.append([what, overrides, rate(f), ratio(f, anchor), pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x best plain", "MFU", "GPU busy", "to first step"], rows)


def speed_call2() -> str:
    anchor = Fig(S + "h100_table_call2_anchors.jsonl", "bf16_sdpa_b8")
    runs = [("ours, `batch=8` defaults (dynamic padding, eager)", "bs8_default", True),
            ("packed 2k tokens (~bs 9), compiled", "packed2k_compile", True),
            ("causal LM, fixed 320 bs 16, compiled", "lm_fixed_bs16_compile", False),
            ("causal LM, packed 5k (= 16 x 320), compiled", "lm_packed5k_compile", False),
            ("causal LM, packed 8k, Liger (fused linear CE), eager", "lm_packed8k_liger", False),
            ("classification packed 8k, compiled, fp32 adapters", "packed8k_compile_fp32_adapters", False),
            ("classification packed 8k, Liger, eager", "packed8k_liger", False),
            ("classification packed 8k, Liger + compiled", "packed8k_compile_liger", False)]
    rows = [["plain Trainer, bf16 sdpa bs 8", rate(anchor), "1.00", "", "", ""]]
    for what, label, vs_anchor in runs:
        f = Fig(S + "h100_table_call2.jsonl", label)
        rows.append([what, rate(f), ratio(f, anchor) if vs_anchor else "", pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "real tok/s (95%)", "x plain bs 8", "MFU", "GPU busy", "to first step"], rows)


def speed_call4_kernels() -> str:
    """Where the GPU's time went in the profiled steps after each window: kernel kinds (report.json's gpu_kernels)."""
    share = lambda x: f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"  # noqa: E731
    rows = []
    for name, label in [("bf16", "packed8k_compile"), ("fused", "packed8k_compile_fused"), ("FP8", "packed8k_compile_fp8"),
                        ("FP8 + fused", "packed8k_compile_fp8_fused")]:
        f = Fig(S + "h100_fp8_fused_call.jsonl", label)
        k = f.get("gpu_kernels")
        rows.append([name] + [share(k[kind]) for kind in ("gemm", "elementwise", "attention", "copy", "optimizer")]
                    + [share(1 - f.get("gpu_busy_fraction"))])
    return markdown(["run", "GEMMs", "norms, activations, other elementwise", "attention", "copies", "optimizer", "idle"], rows)


def speed_call4() -> str:
    path = S + "h100_fp8_fused_call.jsonl"
    anchor, bf16 = Fig(S + "h100_fp8_fused_call_anchors.jsonl", "bf16_sdpa_b32_group"), Fig(path, "packed8k_compile")
    rows = [["plain Trainer bf16 sdpa bs 32 grouped", "", rate(anchor), "1.00", "", "", "", "", ""]]
    runs = [("packed 8k compiled (bf16)", "", "packed8k_compile"),
            ("+ fused LoRA", "`peft.fused=true`", "packed8k_compile_fused"),
            ("+ FP8 base", "`precision=fp8`", "packed8k_compile_fp8"),
            ("+ FP8 base + fused LoRA", "`experiment=fastest`", "packed8k_compile_fp8_fused"),
            ("packed 8k compiled again (warm cache)", "", "packed8k_compile_again")]
    for what, overrides, label in runs:
        f = Fig(path, label)
        ceiling = f.get("flops.ceiling_tokens_per_s")
        rows.append([what, overrides, rate(f, bold=label.endswith("fp8_fused")), ratio(f, anchor),
                     ratio(f, bf16) if label not in ("packed8k_compile", "packed8k_compile_again") else "",
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {ceiling / 1000:.1f}k",
                     f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x best plain", "x bf16", "MFU (bf16-equivalent)",
                     "% of ceiling", "GPU busy", "peak / predicted GB"], rows)


SWEEP = S + "h100_levers_sweep/"


def lever(padding: str, compiled: bool) -> Fig:
    """One job of call 3's `sweep=levers` (its reports and its anchor are one call: 'levers')."""
    return Fig(SWEEP + "reports.jsonl", f"logger=none,model=qwen3,padding={padding},trainer.torch_compile={compiled}", "levers")


def speed_call3() -> str:
    anchor, base = Fig(SWEEP + "anchors.jsonl", "bf16_sdpa_b32_group", "levers"), lever("max_length", False)
    rows = []
    for compiled in (False, True):
        for padding in ("max_length", "buckets", "packed_8k"):
            f = lever(padding, compiled)
            first = f"{f.get('compile.to_first_step_s'):.0f} s" + (" (cache warm)" if compiled and padding == "buckets" else "")
            rows.append([f"`padding={padding}` {'compiled' if compiled else 'eager'}", rate(f, bold=compiled and padding == "packed_8k"),
                         "1.00" if f == base else ratio(f, base), ratio(f, anchor), pct(f.get("flops.mfu")),
                         f"{gb(f.get('memory_gb.peak_allocated'))} ({gb(f.get('memory_predicted_gb.peak_allocated'))})", first])
    return markdown(["job", "real tok/s (95%)", "x max_length eager", f"x best plain ({anchor.rate:,.0f})", "MFU",
                     "peak GB (predicted)", "to first step"], rows)


LEVERS7 = S + "h100_levers_call7/"
# (job, what it changes in the reference, its overrides); fp8_fused ran in a second call on the same warm machine
LEVER_ROWS = [("packed_8k", "the reference: packed 8k, regional compile, varlen flash, non-blocking copies, bf16", ""),
              ("fixed_320", "padding-free off: 32 rows padded to 320", "`padding=max_length batch=32`"),
              ("fixed_320_cudnn", "fixed_320 with cuDNN attention first", "`padding=max_length batch=32 attention=cudnn`"),
              ("eager", "compile off", "`trainer.torch_compile=false`"),
              ("blocking_copies", "batch copies wait for the GPU", "`dataloader.non_blocking=false`"),
              ("fused", "fused LoRA linear", "`peft.fused=true`"),
              ("fp8", "FP8 base matmuls", "`precision=fp8`"),
              ("fp8_fused", "FP8 + fused (`experiment=fastest`)", "`precision=fp8 peft.fused=true`")]


def lever7(name: str) -> Fig:
    part = "b" if name == "fp8_fused" else "a"
    return Fig(LEVERS7 + f"reports_{part}.jsonl", f"+lever={name},logger=none,model=qwen3", f"levers7{part}")


def speed_call7() -> str:
    """Issue 33 item 6: sweep=levers at full depth, every lever against the reference, the anchor in call 7a."""
    anchor, ref = Fig(LEVERS7 + "anchors.jsonl", "bf16_sdpa_b32_group", "levers7a"), lever7("packed_8k")
    rows = [["plain Trainer bf16 sdpa bs 32 grouped", "", "", rate(anchor), "", "1.00", "", "", "", "", ""]]
    for name, what, overrides in LEVER_ROWS:
        f = lever7(name)
        across = f.call_id != ref.call_id
        ran = ", ".join(f"{fam} {v:.0%}" for fam, v in (f.get("attention_kernels") or {}).items() if v >= 0.005)
        rows.append([f"`+lever={name}`", what, overrides, rate(f, bold=name == "fp8_fused"),
                     "1.00" if f == ref else ratio(f, ref, across_calls=across), ratio(f, anchor, across_calls=across),
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {f.get('flops.ceiling_tokens_per_s') / 1000:.1f}k",
                     f"{f.get('gpu_busy_fraction'):.0%}", ran,
                     f"{f.get('memory_gb.peak_allocated'):.1f} / {f.get('memory_predicted_gb.peak_allocated'):.1f}"])
    return markdown(["job", "what changes", "overrides", "real tok/s (95%)", "x reference", "x best plain", "MFU",
                     "% of ceiling", "GPU busy", "attention ran (share of the step)", "peak / predicted GB"], rows)


def speed_attention() -> str:
    """benchmarks/attention_bench.py on the H100: one layer's attention, fwd+bwd, at Qwen3-4B's heads."""
    rows = []
    for r in _records(S + "h100_attention_bench.jsonl"):
        shape = f"{r['tokens']:,} tokens packed" if r["layout"] == "packed" else f"{r['rows']} x {r['length']} padded"
        if "skipped" in r:
            rows.append([shape, r["kernel"], "", "", r["skipped"]])
        else:
            rows.append([shape, r["kernel"], f"{r['ms']:.3f} ({r['p10']:.3f}-{r['p90']:.3f})", f"{r['rel_diff']:.0e}",
                         f"`{r['ran'].split('<')[0][:60]}`"])
    return markdown(["shape", "kernel", "fwd+bwd ms, median (p10-p90)", "output vs first row", "longest kernel / why not run"], rows)


def span(figs: list, key: str) -> str:
    return f"{min(f.get(key) for f in figs):.1f}-{max(f.get(key) for f in figs):.1f}"


def memory_error(f: Fig) -> float:
    return f.get("memory_predicted_gb.peak_allocated") / f.get("memory_gb.peak_allocated") - 1


def speed_memory() -> str:
    h200, h100 = S + "h200_memory_call.jsonl", S + "h100_memory_call2.jsonl"
    runs = [("classification, fixed 320, eager", Fig(h200, "mem_fixed_bs32")),
            ("classification, packed 8k, compiled", Fig(h200, "mem_packed8k_compile")),
            ("causal LM, fixed 320 bs 16, compiled", Fig(h200, "mem_lm_fixed_bs16_compile")),
            ("causal LM, packed 8k, Liger", Fig(h200, "mem_lm_packed8k_liger")),
            ("classification, fixed 320, full checkpointing", Fig(h200, "mem_gc_all_bs32")),
            ("QLoRA, packed 8k, eager", Fig(h100, "mem_qlora_packed8k")),  # the H200 call's QLoRA prediction predates fix 3
            ("classification, packed 8k, eager", Fig(h100, "mem_packed8k")),
            ("classification, buckets, eager", Fig(h100, "mem_buckets_bs32"))]
    card = lambda f: f.get("env.device_name").split()[1]  # "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    rows = [[what, card(f), f"{f.get('memory_gb.peak_allocated'):.2f}", f"{f.get('memory_predicted_gb.peak_allocated'):.2f}",
             pct(memory_error(f))] for what, f in runs]
    sweep = [lever(p, c) for p in ("max_length", "buckets", "packed_8k") for c in (False, True)]
    errors = [memory_error(f) for f in sweep]
    rows.append(["the six jobs of call 3's padding x compile sweep", card(sweep[0]), span(sweep, "memory_gb.peak_allocated"),
                 span(sweep, "memory_predicted_gb.peak_allocated"), f"{pct(min(errors))} to {pct(max(errors))}"])
    eager = lever7("eager")
    rows.append(["classification, packed 8k, eager (call 7)", card(eager), f"{eager.get('memory_gb.peak_allocated'):.2f}",
                 f"{eager.get('memory_predicted_gb.peak_allocated'):.2f}", pct(memory_error(eager))])
    rest = [lever7(name) for name, _, _ in LEVER_ROWS if name != "eager"]
    errors = [memory_error(f) for f in rest]
    rows.append(["the other seven jobs of `sweep=levers` (call 7: compiled, FP8, fused)", card(rest[0]),
                 span(rest, "memory_gb.peak_allocated"), span(rest, "memory_predicted_gb.peak_allocated"),
                 f"{pct(min(errors))} to {pct(max(errors))}"])
    return markdown(["run (full depth, bs 32 at 320 or 8k-token packs)", "card", "measured peak GB", "predicted GB", "error"], rows)


def speed_fp8_accuracy() -> str:
    """FP8 against bf16 seeds on 4 layers: the loss curve's points, the final eval, the curves' gaps."""
    acc = {(d, s): Fig(S + "h100_fp8_accuracy_call.jsonl", f"acc_{d}_seed{s}") for d in ("bf16", "fp8") for s in (0, 1)}

    def gap(a: Fig, b: Fig) -> str:
        (steps_a, la), (steps_b, lb) = zip(*a.get("loss.curve")), zip(*b.get("loss.curve"))
        assert steps_a == steps_b, "curves logged at different steps"
        d = [abs(x - y) for x, y in zip(la, lb)]
        return f"{sum(d) / len(d):.4f} / {max(d):.3f}"

    rows = []
    for (dtype, seed), f in acc.items():
        curve = dict(map(tuple, f.get("loss.curve")))
        vs = ("bf16 seed 0 vs 1: " + gap(acc["bf16", 0], acc["bf16", 1]) if seed else "") if dtype == "bf16" else gap(f, acc["bf16", seed])
        rows.append([f"{'FP8' if dtype == 'fp8' else dtype} seed {seed}", " / ".join(f"{curve[s]:.3f}" for s in (100, 200, 300)),
                     f"{f.get('eval.final.loss'):.3f}", pct(f.get("eval.final.accuracy")), vs])
    return markdown(["", "train loss at 100 / 200 / 300", "eval loss", "eval accuracy",
                     "curve vs bf16 same seed: mean / max abs gap"], rows)


L = "twelve_x_slowdown/results/ladder/"
RUNGS = [("0 before", "fp32, no TF32, eager, checkpointing, pad \"longest\", bs 8 x ga 2, no workers", "A"),
         ("1 padding", "fixed padding to 320 (report: 2-3x)", "A"),
         ("2 dataloader", "2 workers, pinned, prefetch 2, persistent (report: 1.5-2x)", "A"),
         ("3 env", "TF32, sdpa (flash), cudnn autotune, expandable segments (report: 1.2-1.5x)", "A"),
         ("4 bf16", "bf16 weights, autocast, bf16 adapters", "B"),
         ("5 no checkpointing", "no recomputed forward", "B"),
         ("6 bs16", "one micro-batch of 16 instead of 8 x ga 2", "B"),
         ("7 compile", "regional torch.compile, one shape", "B"),
         ("8 padding-free", "8,192-token packs, varlen flash attention, compiled", "B")]
LABELS = ["rung_0_before", "rung_1_padding", "rung_2_dataloader", "rung_3_env", "rung_4_bf16",
          "rung_5_no_checkpointing", "rung_6_bs16", "rung_7_compile", "rung_8_padding_free"]


def twelve_x_ladder() -> str:
    """Rungs 0-3 ran in call A, 4-8 in call B (one file): the step from 3 to 4 and 'x before' past rung 3 cross calls."""
    figs = [Fig(L + "reports.jsonl", label, call) for label, (_, _, call) in zip(LABELS, RUNGS)]
    plain = {"A": Fig(L + "anchor_call_A.jsonl", "seed_before", "A"), "B": Fig(L + "anchor_call_B.jsonl", "bf16_sdpa_b32_group", "B")}
    rows = []
    for i, ((name, adds, call), f) in enumerate(zip(RUNGS, figs)):
        step = "" if i == 0 else ratio(f, figs[i - 1], across_calls=True)
        if i == 4:
            step = "see call C below"
        mfu = pct(f.get("flops.mfu")) + ("*" if i < 3 else "")
        rows.append([name, adds, call, rate(f, bold=i == 8), step,
                     "1.00" if i == 0 else ratio(f, figs[0], across_calls=True),
                     "1.00" if i == 4 else (ratio(f, figs[4]) if i > 4 else ""), ratio(f, plain[call]),
                     f"{f.get('gpu_busy_fraction'):.0%}", mfu, gb(f.get("memory_gb.peak_allocated"))])
    for call, name in [("A", 'seed "before" (TF32 on, pad 320, eager, checkpointing, 2 workers)'),
                       ("B", "bf16 sdpa bs 32 length-grouped (its best)")]:
        a = plain[call]
        rows.append([f"plain Trainer, {name}", "", call, rate(a), "", "", "", "1.00", "", "", gb(a.get("peak_alloc_gb"))])
    return markdown(["rung", "adds", "call", "real tok/s (95%)", "x rung before", 'x "before"', "x rung 4",
                     "x plain Trainer (same call)", "GPU busy", "MFU", "peak GB"], rows)


C = "twelve_x_slowdown/results/ladder_c/"


def twelve_x_ladder_c() -> str:
    """Rungs 3 and 4 in one call, A-B-B-A, after the plain Trainer nearest rung 4."""
    runs = [("rung 3 env (1st)", "rung_3_env_a"), ("rung 4 bf16 (2nd)", "rung_4_bf16_a"),
            ("rung 4 bf16 (3rd)", "rung_4_bf16_b"), ("rung 3 env (4th)", "rung_3_env_b")]
    rows = []
    for what, label in runs:
        f = Fig(C + "reports.jsonl", label, "C")
        rows.append([what, rate(f), f"{f.get('step_time_s.mean'):.3f}", f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('host_s.launch'):.3f}", gb(f.get("memory_gb.peak_allocated"))])
    a = Fig(C + "anchor.jsonl", "bf16_sdpa_b16_gc", "C")
    rows.append(["plain Trainer, bf16 sdpa, checkpointing, bs 16 x ga 1 (`bf16_sdpa_b16_gc`, before them)", rate(a),
                 f"{a.get('step_s'):.3f}", "", "", gb(a.get("peak_alloc_gb"))])
    return markdown(["run (order)", "real tok/s (95%)", "step s", "GPU busy", "host launch s/step", "peak GB"], rows)


def twelve_x_loaders() -> str:
    """Twelve loader setups, each its own process, in the order they ran (one call)."""
    runs = [("0 workers, no pinning (first process)", "w0_nopin"), ("2 workers, pinned, persistent, prefetch 2", "w2_pin"),
            ("2 workers, not pinned", "w2_nopin"), ("0 workers, pinned", "w0_pin"), ("4 workers, pinned", "w4_pin"),
            ("8 workers, pinned", "w8_pin"), ("bs 32: 2 workers, pinned", "w2_pin_b32"),
            ("bs 32: 0 workers, no pinning", "w0_nopin_b32"), ("bs 32: 2 workers, not pinned", "w2_nopin_b32"),
            ("2 workers, pinned, not persistent", "w2_pin_transient"), ("2 workers, pinned, prefetch 8", "w2_pin_prefetch8"),
            ("0 workers, no pinning (last process, same as the first)", "w0_nopin_again")]
    rows = []
    for what, label in runs:
        f = Fig("twelve_x_slowdown/results/loaders/reports.jsonl", label)
        rows.append([what, rate(f), f"{f.get('step_time_s.mean') * 1000:.0f}", f"{f.get('host_s.data') * 1000:.1f}",
                     f"{f.get('gpu_busy_fraction'):.0%}"])
    return markdown(["loader (bs 8 unless noted)", "real tok/s (95%)", "step ms", "host data ms/step", "GPU busy"], rows)


def batch_vs_accum() -> str:
    B = "batch_vs_accum/results/"
    rows = []
    for bs, ga in [(32, 2), (32, 1), (16, 2), (16, 1), (8, 1), (8, 2), (4, 1), (4, 2)]:
        f = Fig(B + "sweep_reports.jsonl", f"batch.grad_accum={ga},batch.size={bs},model=qwen3")
        rows.append([ranks(B + "summary.csv")[f"batch.size={bs}, batch.grad_accum={ga}"], f"bs {bs} x ga {ga}",
                     f.get("status"), str(bs * ga), rate(f), f"{f.get('throughput.samples_per_s'):.1f}",
                     f"{f.get('step_time_s.mean'):.4f}", pct(f.get("flops.mfu")), gb(f.get("memory_gb.peak_allocated")),
                     gb(f.get("memory_gb.peak_reserved")), "yes" if f.get("verdict.saturated") else "no",
                     f"{f.get('gpu_busy_fraction'):.0%}", f.get("verdict.bottleneck")])
    for bs in (64, 128):
        status = {Fig(B + "sweep_reports.jsonl", f"batch.grad_accum={ga},batch.size={bs},model=qwen3").get("status") for ga in (1, 2)}
        rows.append(["-", f"bs {bs} x ga 1, 2", *status] + [""] * 10)
    return markdown(["rank", "job", "status", "effective batch", "real tok/s (95%)", "samples/s", "step s", "MFU",
                     "peak alloc GB", "peak reserved GB", "saturated", "GPU busy", "bottleneck"], rows)


def kobart() -> str:
    K = "kobart_batch/results/h100_sweep/kobart_reports.jsonl"
    rows = []
    for bs, ga in [(16, 2), (16, 1), (8, 2), (8, 1)]:
        f = Fig(K, f"batch.grad_accum={ga},batch.size={bs},experiment=kobart_batch,logger=none")
        spread = stats.batch_means(f.get("step_time_s.values")).half_width  # the step time's, as the report's flag has it
        rows.append([f"bs {bs} x ga {ga}", f"{f.get('throughput.samples_per_s'):.1f}", rate(f), f"{f.get('step_time_s.mean'):.3f}",
                     f"{f.get('gpu_busy_fraction'):.0%}", f"+-{spread:.0%}; {f.get('shapes.new_in_window')} new shapes in the window"])
    return markdown(["job", "samples/s", "real tok/s (95%)", "step s", "GPU busy", "flags"], rows)


def scaling() -> str:
    P = "scaling/results/h200x2/scaling_reports.jsonl"
    rows = []
    for what, label in [("LoRA, one GPU", "one_gpu"), ("LoRA, DDP x 2", "two_gpu_ddp"), ("full FT fp32, one GPU", "one_gpu_full_ft_fp32")]:
        f = Fig(P, label)
        peaks = {gb(m["peak_allocated"]) for m in f.get("distributed.memory_per_rank") or [f.get("memory_gb")]}
        peak = " / ".join(sorted(peaks)) + (" each" if f.get("distributed") and len(peaks) == 1 else "")
        rows.append([what, rate(f), f"{f.get('throughput.real_tokens_per_s_per_gpu'):,.0f}", f"{f.get('step_time_s.mean'):.3f}",
                     f"{f.get('gpu_busy_fraction'):.0%}", pct(f.get("flops.mfu")) + (f" (of TF32's {f.get('flops.peak_tflops'):.0f})" if f.get("config.precision.name") == "fp32" else ""), peak])
    rows.append(["full FT fp32, FSDP x 2", "did not finish", "", "", "", "", ""])  # no report: the save hung (below)
    return markdown(["run", "real tok/s (95%)", "per GPU", "step s", "GPU busy", "MFU", "peak allocated GB"], rows)


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
        if habit != "none":
            c = stats.compare(ci["none"], ci[habit], ci["none"].mean, ci[habit].mean)
            against = (f"tie ({c.ratio:.2f}x, {c.low:.2f}-{c.high:.2f})" if c.tie
                       else f"**loses: none is {c.ratio:.2f}x ({c.low:.2f}-{c.high:.2f})**")
        rows.append([habit, ", ".join(rates), f"{ci[habit].mean:,.0f} ({ci[habit].low:,.0f}-{ci[habit].high:,.0f})",
                     f"{sum(f.get('step_time_s.mean') for f in fs) / len(fs) * 1000:.0f}", f"{min(busy) * 100:.0f}-{max(busy):.0%}", against])
    return markdown(["habit", "real tok/s per run (rounds 1, 2, 3)", "mean (95%)", "step ms", "GPU busy", "against none"], rows)


SAT = "batch_vs_accum_saturation/results/"


def peak(f: Fig, of_cap: bool = False) -> str:
    """'4.59 / 5.47' GB allocated / reserved, with the cap where asked and the verdict where it says saturated."""
    m = f.get("memory_gb")
    text = f"{m['peak_allocated']:.2f} / {m['peak_reserved']:.2f}" + (f" of {m['memory_cap_gb']:.0f}" if of_cap and m["memory_cap_gb"] else "")
    return text + (f" ({m['peak_reserved'] / m['capacity']:.0%}: saturated)" if f.get("verdict.saturated") else "")


def out_of_memory(f: Fig) -> str:
    """The CUDA error's own figures: what PyTorch had allocated and reserved when the request failed."""
    request, alloc, reserved = re.search(r"allocate ([\d.]+) MiB.*?([\d.]+) GiB is allocated by PyTorch, and ([\d.]+) GiB is reserved",
                                         f.get("error")).groups()
    return (f"out of memory: {float(alloc):.1f} GB allocated + {float(reserved):.1f} reserved but unallocated "
            f"at a {float(request) / 1024:.2g} GB request")


def saturation_claims() -> str:
    runs = [("fp32 compute, 24 GB cap, bs 8", "fp32_b8"), ("fp32 compute, 24 GB cap, bs 16", "fp32_b16"),
            ("fp32 compute, 24 GB cap, bs 8 x ga 2", "fp32_b8_ga2"), ("bf16 compute, no cap, bs 8", "bf16_b8"),
            ("bf16 compute, no cap, bs 16", "bf16_b16")]
    rows = []
    for what, label in runs:
        f = Fig(SAT + "claims/reports.jsonl", label)
        st = f.get("step_time_s")
        rows.append([what, f"{st['mean']:.3f} ({st['ci_low']:.3f}-{st['ci_high']:.3f})", f"{f.get('throughput.samples_per_s'):.1f}",
                     peak(f, of_cap=True), f"{f.get('memory_predicted_gb.peak_allocated'):.2f}", f"{f.get('gpu_busy_fraction'):.0%}"])
    return markdown(["job", "step s (95%)", "samples/s", "peak allocated / reserved GB", "predicted GB", "GPU busy"], rows)


def three_steps(path: str, runs: list[tuple[str, str]], step_header: str) -> str:
    """Jobs of 3 timed steps (no interval): the mean step with its range, or the out-of-memory error's figures."""
    rows = []
    for what, label in runs:
        f = Fig(path, label)
        predicted = f"{f.get('memory_predicted_gb.peak_allocated'):.2f}"
        if f.get("status") == "oom":
            rows.append([what, out_of_memory(f), "-", "-", predicted])
            continue
        st = f.get("step_time_s")
        rows.append([what, f"{st['mean']:.3f} ({min(st['values']):.2f}-{max(st['values']):.2f})",
                     f"{f.get('throughput.samples_per_s'):.2f}", peak(f), predicted])
    return markdown(["job", step_header, "samples/s", "peak allocated / reserved GB", "predicted GB"], rows)


def saturation_long() -> str:
    return three_steps(SAT + "long/reports.jsonl", [("fp32 compute bs 8", "fp32_b8"), ("fp32 compute bs 16", "fp32_b16"),
                       ("bf16 compute bs 8", "bf16_b8"), ("bf16 compute bs 16", "bf16_b16"), ("fp32 compute bs 8 x ga 2", "fp32_b8_ga2")],
                       "step s (3 steps: mean, range)")


def saturation_near_cap() -> str:
    return three_steps(SAT + "near_cap/reports.jsonl", [("fp32 bs 16", "fp32_b16_near_cap"), ("fp32 bs 8", "fp32_b8_near_cap"),
                       ("fp32 bs 16, the same job again", "fp32_b16_near_cap_expandable"),
                       ("fp32 bs 16, rows of at most 1,800", "fp32_b16_1800")], "step s (3 steps)")


def saturation_largest() -> str:
    """SOLAR and Polyglot under the 24 GB cap: the micro-batch doubled until a job saturated or ran out of memory."""
    path, long = SAT + "largest/reports.jsonl", "data.length_mean=1800"
    searches = [("SOLAR-10.7B", "solar-10.7b", "~211 tokens", [16, 32, 64]), ("SOLAR-10.7B", "solar-10.7b", "~1,800 tokens", [4, 8, 16]),
                ("Polyglot-Ko-12.8B", "polyglot-ko-12.8b", "~211 tokens", [16, 32, 64]),
                ("Polyglot-Ko-12.8B", "polyglot-ko-12.8b", "~1,800 tokens", [4, 8])]
    rows = []
    for name, model, rows_of, batches in searches:
        given, without = ((long,), ()) if rows_of.startswith("~1,800") else ((), (long,))
        jobs = [(b, Fig.by_overrides(path, f"model={model}", f"batch.size={b}", *given, without=without)) for b in batches]
        cells = []
        for b, f in jobs:
            m, predicted = f.get("memory_gb"), f"({f.get('memory_predicted_gb.peak_allocated'):.2f})"
            cells.append(f"{b}: out of memory {predicted}" if f.get("status") != "ok" else
                         f"{b}: {m['peak_allocated']:.2f} / {m['peak_reserved']:.2f}{', saturated' if f.get('verdict.saturated') else ''} {predicted}")
        fits = [(b, f) for b, f in jobs if f.get("status") == "ok"]
        b, top = fits[-1]
        m = top.get("memory_gb")
        rows.append([name, rows_of, "; ".join(cells),
                     f"**{b}**" + (f" ({m['peak_reserved'] / m['capacity']:.0%} reserved)" if top.get("verdict.saturated") else ""),
                     ", ".join(f"{x:.1f}" if x >= 10 else f"{x:.2f}" for x in (f.get("throughput.samples_per_s") for _, f in fits))])
    return markdown(["model", "rows", "micro-batch: peak allocated / reserved GB (predicted)", "largest that fits", "samples/s"], rows)


def loop_overheads_concat() -> str:
    """pandas.concat's cost per step as the frame grows (concat_cost.py on the CPU; one JSON line per logged step)."""
    rows = [r for r in _records("loop_overheads/concat_cost_cpu.jsonl") if r.get("step") in (1000, 10000, 50000)]
    return markdown(["step", "rows in the frame", "mean ms per concat (100-step window)", "p90 ms"],
                    [[f"{r['step']:,}", f"{r['rows_in_frame']:,}", f"{r['concat_ms_mean']:.3f}", f"{r['concat_ms_p90']:.3f}"]
                     for r in rows])


def speed_graphs() -> str:
    """Issue 33 G4 on 4 layers: what cuts the host's launch time at 2k tokens a step (one call, no anchor)."""
    path = S + "h100_graphs_4layer_call.jsonl"
    base = Fig(path, "g2k_regional")
    runs = [("regional compile (each layer)", "", "g2k_regional"),
            ("whole-model compile", "`trainer.compile_scope=model`", "g2k_model"),
            ("whole-model CUDA graphs", "`+ trainer.compile_mode=reduce-overhead`", "g2k_model_graphs"),
            ("regional + fused LoRA", "`peft.fused=true`", "g2k_regional_fused"),
            ("whole-model CUDA graphs + fused LoRA", "`+ peft.fused=true`", "g2k_model_graphs_fused"),
            ("regional, inductor's C++ wrapper", "`TORCHINDUCTOR_CPP_WRAPPER=1`", "g2k_regional_cpp_wrapper")]
    rows = []
    for what, overrides, label in runs:
        f = Fig(path, label)
        if f.get("status") != "ok":
            rows.append([what, overrides, f"failed: {f.get('error').splitlines()[0]}", "", "", "", ""])
            continue
        rows.append([what, overrides, rate(f, bold=label == "g2k_model_graphs_fused"), ratio(f, base) if label != "g2k_regional" else "1.00",
                     pct(f.get("flops.mfu")), f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x regional", "MFU", "GPU busy", "to first step"], rows)


def speed_graphs_full() -> str:
    """Issue 33 G4 at full depth: the plain-Trainer bs 8 anchor and the 4-layer call's winner, one call."""
    path = S + "h100_graphs_full_call.jsonl"
    anchor, base = Fig(S + "h100_graphs_full_call_anchors.jsonl", "bf16_sdpa_b8"), Fig(path, "f2k_regional")
    rows = [["plain Trainer bf16 sdpa bs 8", "", rate(anchor), "1.00", "", "", "", "", "", ""]]
    for what, overrides, label in [("packed 2k, regional compile", "`padding=packed batch.tokens=2048 trainer.torch_compile=true`", "f2k_regional"),
                                   ("+ whole-model CUDA graphs + fused LoRA", "`trainer.compile_scope=model trainer.compile_mode=reduce-overhead peft.fused=true`", "f2k_model_graphs_fused")]:
        f = Fig(path, label)
        ceiling = f.get("flops.ceiling_tokens_per_s")
        rows.append([what, overrides, rate(f, bold=label != "f2k_regional"), ratio(f, anchor), ratio(f, base) if label != "f2k_regional" else "",
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {ceiling / 1000:.1f}k", f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('compile.to_first_step_s'):.0f} s",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x plain bs 8", "x regional", "MFU", "% of ceiling", "GPU busy",
                     "to first step", "peak / predicted GB"], rows)


def speed_budget() -> str:
    """Issue 53 item 1: batch.tokens=auto against hand-set budgets, full depth, each call with its plain-Trainer
    anchor; ratios only inside a call. Call 1 ran the first, one-point probe (since replaced); calls 2-3 the two-point one."""
    calls = [("h200_budget_call1", "1", [("FP8 + fused, 8k (`experiment=fastest`)", "fastest", None),
                                         ("the same, auto (one-point probe)", "fastest_auto", "fastest")]),
             ("h200_budget_call2", "2", [("FP8 + fused, 8k (`experiment=fastest`)", "fastest", None),
                                         ("the same, 16k", "fastest16k", "fastest"),
                                         ("the same, `batch.tokens=auto`", "fastest_auto", "fastest"),
                                         ("causal LM, FP8 + fused, 8k", "lm_fastest", None),
                                         ("the same, `batch.tokens=auto`", "lm_fastest_auto", "lm_fastest")]),
             ("h200_budget_call3", "3", [("bf16 reference, 8k (`+lever=packed_8k`)", "ref", None),
                                         ("the same, 16k", "ref16k", "ref"),
                                         ("the same, `batch.tokens=auto`", "ref_auto", "ref"),
                                         ("the same, auto again (warm caches)", "ref_auto_again", "ref")])]
    rows = []
    for call, n, runs in calls:
        anchor = Fig(S + call + "_anchors.jsonl", "bf16_sdpa_b32_group", call=call)
        rows.append([n, "plain Trainer bf16 sdpa bs 32 grouped", rate(anchor), "1.00", "", "", "", "", "", ""])
        for what, label, versus in runs:
            f = Fig(S + call + ".jsonl", label, call=call)
            chosen = (f.get("resolved.budget") or {}).get("tokens")
            rows.append([n, what, rate(f, bold=chosen is not None), ratio(f, anchor),
                         ratio(f, Fig(S + call + ".jsonl", versus, call=call)) if versus else "",
                         pct(f.get("flops.mfu")), f"{f.get('gpu_busy_fraction'):.0%}", f"{chosen:,}" if chosen else "",
                         f"{f.get('compile.to_first_step_s'):.0f} s",
                         f"{f.get('memory_gb.peak_allocated'):.1f} / {f.get('memory_predicted_gb.peak_allocated'):.1f}"])
    return markdown(["call", "run", "real tok/s (95%)", "x plain Trainer", "x 8k of its kind", "MFU", "GPU busy",
                     "auto chose", "to first step", "peak / predicted GB"], rows)


def speed_memory_fullft() -> str:
    """Issue 53 G4: the memory model on full fine-tunes (8 layers of Qwen3-4B width, one call, no anchor: memory
    only): the prediction as the run made it, its parts, and the measured peak."""
    path = S + "h200_fullft_memory_call1.jsonl"
    rows = []
    for label in ("fp32_ga1", "fp32_ga2", "bf16_ga1", "bf16_ga2"):
        f = Fig(path, label)
        parts, measured = f.get("memory_predicted_gb.parts"), f.get("memory_gb.peak_allocated")
        predicted = f.get("memory_predicted_gb.peak_allocated")
        rows.append([f"`{' '.join(o for o in f.get('overrides') if o.startswith(('precision', 'batch')))}`",
                     *(gb(parts[k]) for k in ("weights", "grads", "optimizer", "activations")),
                     gb(predicted), f"{measured:.2f}", f"{predicted / measured - 1:+.1%}",
                     f"{measured - parts['weights'] - parts['optimizer'] - parts['workspace'] - parts['grads']:.2f}"])
    return markdown(["run (`peft=none`, 8 layers)", "weights", "grads", "AdamW", "activations", "predicted", "measured",
                     "error", "measured - weights - AdamW - workspace - grads"], rows)


def ms(x: float | None) -> str:
    return "" if x is None else f"{x * 1000:.1f}"


def speed_overlap_full() -> str:
    """Issue 33 G4: batch copies that don't wait for the GPU, at full depth; each pair compared inside its own call."""
    calls = [(S + "h100_overlap_full_call.jsonl", [
                 ("2k packs, whole-model CUDA graphs + fused LoRA, copies wait", "`padding=packed batch.tokens=2048 trainer.torch_compile=true "
                  "trainer.compile_scope=model trainer.compile_mode=reduce-overhead peft.fused=true dataloader.non_blocking=false`", "f2k_graphs_fused_wait"),
                 ("the same, non-blocking copies (the default)", "`dataloader.non_blocking=true`", "f2k_graphs_fused")]),
             (S + "h100_overlap_fp8_call.jsonl", [
                 ("8k packs, FP8 + fused LoRA (`experiment=fastest`), copies wait", "`experiment=fastest dataloader.non_blocking=false`", "f8k_fastest_wait"),
                 ("the same, non-blocking copies (the default)", "`experiment=fastest`", "f8k_fastest")]),
             (S + "h100_overlap_bf16_call.jsonl", [
                 ("8k packs, bf16, regional compile, copies wait", "`padding=packed_8k trainer.torch_compile=true dataloader.non_blocking=false`", "f8k_bf16_wait"),
                 ("the same, non-blocking copies (the default)", "`padding=packed_8k trainer.torch_compile=true`", "f8k_bf16")])]
    anchor = Fig(S + "h100_overlap_full_call_anchors.jsonl", "bf16_sdpa_b8", call="h100_overlap_full_call")
    rows = [["plain Trainer bf16 sdpa bs 8 (call 6a)", "", rate(anchor), "", "", "", "", "", "", ""]]
    for path, runs in calls:
        wait = Fig(path, runs[0][2])
        for what, overrides, label in runs:
            f = Fig(path, label)
            first = label == wait.label
            versus = "" if first else ratio(f, wait)
            plain = ratio(f, anchor) if path == calls[0][0] else ""
            rows.append([what, overrides, rate(f, bold=not first), plain, versus, pct(f.get("flops.mfu")),
                         f"{f.get('gpu_busy_fraction'):.0%}", ms(f.get("host_s.data")), ms(f.get("host_s.launch")),
                         f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x plain bs 8", "x copies that wait", "MFU", "GPU busy",
                     "host waits for data, ms", "host in the step, ms", "to first step"], rows)


def speed_overlap_4layer() -> str:
    """The same question on 4 layers of real width at 2k tokens a step, one call, in the order the runs ran."""
    path = S + "h100_overlap_4layer_call.jsonl"
    base = Fig(path, "o2k_regional_wait")
    graphs = Fig(path, "o2k_graphs_wait")
    runs = [("regional compile, copies wait", "o2k_regional_wait", None), ("regional compile, non-blocking", "o2k_regional", base),
            ("whole-model CUDA graphs + fused, copies wait", "o2k_graphs_wait", None),
            ("whole-model CUDA graphs + fused, non-blocking", "o2k_graphs", graphs),
            ("whole-model CUDA graphs + fused, copies wait, again", "o2k_graphs_wait_again", graphs),
            ("whole-model CUDA graphs + fused, non-blocking, again", "o2k_graphs_again", graphs)]
    rows = []
    for what, label, against in runs:
        f = Fig(path, label)
        rows.append([what, rate(f), ratio(f, against) if against else "", f"{f.get('gpu_busy_fraction'):.0%}",
                     ms(f.get("host_s.data")), ms(f.get("host_s.launch")), ms(f.get("step_time_s.mean"))])
    return markdown(["run", "real tok/s (95%)", "x the first run of its kind", "GPU busy", "host waits for data, ms",
                     "host in the step, ms", "step, ms"], rows)


def speed_host_ops() -> str:
    """measure.host_ops on 4 layers at 2k tokens: the host's costliest ops a step, whole-model CUDA graphs vs regional."""
    path = S + "h100_hostops_4layer_call.jsonl"
    out = []
    for what, label in [("whole-model CUDA graphs + fused", "h2k_graphs_hostops"), ("regional compile", "h2k_regional_hostops")]:
        ops = Fig(path, label).get("host_ops")[:8]
        out.append([what, "; ".join(f"{o['op'][:40]} x{o['calls']:g} {o['self_ms']:.2f} ms" for o in ops)])
    return markdown(["run", "the host's top ops a step (self time): name x calls, ms"], out)


def speed_qlora_fused() -> str:
    """Issue 33 G5: the fused LoRA linear over a 4-bit base against peft's LoRA on it, full depth, one call."""
    path = S + "h100_qlora_fused_call.jsonl"
    base = Fig(path, "qlora_packed8k_compile")
    rows = []
    for what, overrides, label in [("QLoRA packed 8k compiled, peft's LoRA", "`peft=qlora padding=packed_8k trainer.torch_compile=true`", "qlora_packed8k_compile"),
                                   ("+ fused LoRA linear", "`+ peft.fused=true`", "qlora_packed8k_compile_fused")]:
        f = Fig(path, label)
        rows.append([what, overrides, rate(f), ratio(f, base) if label != "qlora_packed8k_compile" else "", pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x peft's LoRA", "MFU", "GPU busy", "peak / predicted GB"], rows)


def dropin_sft() -> str:
    """TRL's SFTTrainer script plain (P) and attached (A), in the order they ran (one call, one process each)."""
    rows, seen = [], {"plain": 0, "attached": 0}
    for r in _records("measurement/results/h100_dropin_sft.jsonl"):
        seen[r["mode"]] += 1
        attached = r["mode"] == "attached"
        low, high = r.get("real_tok_s_95") or (None, None)
        checks = r.get("checks") or {}
        rows.append([f"{'A' if attached else 'P'}{seen[r['mode']]}", f"{r['train_runtime']:.2f}", f"{r['own_clock_tok_s']:,.0f}",
                     f"{r['real_tok_s']:,.0f} ({low:,.0f}-{high:,.0f})" if attached else "",
                     f"{r['report_vs_own_clock']:.3f}" if attached else "", f"{r['train_loss']:.4f}",
                     " / ".join(f"{x:.4f}" for x in r["losses"][:3]),
                     f"{sum(v == 'pass' for v in checks.values())} pass, {sum(v == 'fail' for v in checks.values())} fail" if attached else ""])
    return markdown(["run", "Trainer train_runtime s", "script's own clock, tok/s", "report's real tok/s (95%)",
                     "report / own clock", "train loss", "logged loss at steps 10 / 20 / 30", "checks"], rows)


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
    """Per script and sped-up mode: its runs' mean over the plain runs' mean, and the range of S/P (or G/P) over
    every pairing."""
    rows = []
    for script in scripts:
        runs = [r for r in _records(path) if r["script"] == script]
        plain = [r["own_clock_tok_s"] for r in runs if r["mode"] == "plain"]
        for mode in modes:
            sped = [r["own_clock_tok_s"] for r in runs if r["mode"] == mode]
            line = f"{script}, speedup(trainer, graphs=True)" if mode == "graphs" else script
            rows.append([line, ", ".join(f"{x:,.0f}" for x in plain), ", ".join(f"{x:,.0f}" for x in sped),
                         f"**{fmean(sped) / fmean(plain):.2f}x**",
                         f"{min(sped) / max(plain):.2f}-{max(sped) / min(plain):.2f}"])
    return markdown(["script", "plain runs, real tok/s", "sped-up runs, real tok/s", "speedup (means)",
                     "range over every P/S pairing"], rows)


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
        error = f"{ref['rate'] / p['real_tokens_per_s']:.2f}" if ref and ref["status"] == "ok" else ""
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
                vs = f"{th['real_tokens_per_s'] / p['real_tokens_per_s']:.2f}; {peak / p['memory_gb']:.3f}"
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
            f"{r['memory_gb']['peak_allocated']:.2f} GB"), {"rate": th["real_tokens_per_s"], "gb": r["memory_gb"]["peak_allocated"]}


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
        vs = f"{fig_all['rate'] / p['real_tokens_per_s']:.2f}; {fig_all['gb'] / p['memory_gb']:.3f}" if fig_all else ""
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
            vs = f"**{fig['rate'] / p['real_tokens_per_s']:.2f}**; {fig['gb'] / p['memory_gb']:.3f}" if fig else ""
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
            cells += [text, f"**{fig['rate'] / p['real_tokens_per_s']:.2f}**; {fig['gb'] / p['memory_gb']:.3f}" if fig else ""]
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
                out.setdefault(m[1], []).append({"wall_s": int(m[3]), "cut": m[2] == "124", "jobs": jobs})
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
                    cells += [f"{peak:.2f} ({peak / p['memory_gb']:.3f})",
                              f"{rate:,.0f}" + (f" ({low:,.0f}-{th['real_tokens_per_s_high']:,.0f})" if low else "")
                              + (f"; **{rate / p['real_tokens_per_s']:.2f}**" if p.get("real_tokens_per_s") else "")]
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
                     f"{sum(jobs):.0f} + {start:.0f}", f"**{plan['wall_s'] / (sum(jobs) + start):.2f}**"])
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


TABLES = {"speed/call1": (HERE / "speed/README.md", speed_call1),
          "speed/call2": (HERE / "speed/README.md", speed_call2),
          "speed/call3": (HERE / "speed/README.md", speed_call3),
          "speed/call4": (HERE / "speed/README.md", speed_call4),
          "speed/call4_kernels": (HERE / "speed/README.md", speed_call4_kernels),
          "speed/graphs": (HERE / "speed/README.md", speed_graphs),
          "speed/graphs_full": (HERE / "speed/README.md", speed_graphs_full),
          "speed/qlora_fused": (HERE / "speed/README.md", speed_qlora_fused),
          "speed/overlap_full": (HERE / "speed/README.md", speed_overlap_full),
          "speed/overlap_4layer": (HERE / "speed/README.md", speed_overlap_4layer),
          "speed/host_ops": (HERE / "speed/README.md", speed_host_ops),
          "speed/call7": (HERE / "speed/README.md", speed_call7),
          "speed/attention": (HERE / "speed/README.md", speed_attention),
          "speed/budget": (HERE / "speed/README.md", speed_budget),
          "speed/memory_fullft": (HERE / "speed/README.md", speed_memory_fullft),
          "planner/h100": (HERE / "planner/README.md", planner),
          "planner/call2": (HERE / "planner/README.md", planner_call2),
          "planner/grid18": (HERE / "planner/README.md", planner_grid18),
          "planner/grid18_v2": (HERE / "planner/README.md", planner_grid18_v2),
          "planner/h200": (HERE / "planner/README.md", planner_h200),
          "planner/h200_check": (HERE / "planner/README.md", planner_h200_check),
          "planner/h200_repeats": (HERE / "planner/README.md", planner_h200_repeats),
          "planner/new_shapes": (HERE / "planner/README.md", planner_new_shapes),
          "planner/g4": (HERE / "planner/README.md", planner_g4),
          "planner/g4_times": (HERE / "planner/README.md", planner_g4_times),
          "planner/fastest5": (HERE / "planner/README.md", lambda: planner_g4(FASTEST5_SWEEPS)),
          "planner/fastest5_times": (HERE / "planner/README.md", lambda: planner_g4_times(FASTEST5_SWEEPS)),
          "planner/preset": (HERE / "planner/README.md", lambda: planner_g4(PRESET_SWEEPS)),
          "planner/preset_times": (HERE / "planner/README.md", lambda: planner_g4_times(PRESET_SWEEPS)),
          "planner/vcpu": (HERE / "planner/README.md", planner_vcpu),
          "planner/pinned": (HERE / "planner/README.md", planner_pinned),
          "measurement/dropin_sft": (HERE / "measurement/README.md", dropin_sft),
          "speedup/full": (HERE / "speedup/README.md", lambda: speedup_runs("speedup/results/h100_full_classifiers.jsonl",
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
              "speedup/results/h100_4layers_order.jsonl", ("bert", "classifier8"))),
          "speed/memory": (HERE / "speed/README.md", speed_memory),
          "speed/fp8_accuracy": (HERE / "speed/README.md", speed_fp8_accuracy),
          "twelve_x/ladder": (HERE / "twelve_x_slowdown/README.md", twelve_x_ladder),
          "twelve_x/ladder_c": (HERE / "twelve_x_slowdown/README.md", twelve_x_ladder_c),
          "twelve_x/loaders": (HERE / "twelve_x_slowdown/README.md", twelve_x_loaders),
          "batch_vs_accum": (HERE / "batch_vs_accum/README.md", batch_vs_accum),
          "saturation/claims": (HERE / "batch_vs_accum_saturation/README.md", saturation_claims),
          "saturation/long": (HERE / "batch_vs_accum_saturation/README.md", saturation_long),
          "saturation/near_cap": (HERE / "batch_vs_accum_saturation/README.md", saturation_near_cap),
          "saturation/largest": (HERE / "batch_vs_accum_saturation/README.md", saturation_largest),
          "kobart_batch": (HERE / "kobart_batch/README.md", kobart),
          "scaling/h200x2": (HERE / "scaling/README.md", scaling),
          "loop_overheads/pooled": (HERE / "loop_overheads/README.md", loop_overheads),
          "loop_overheads/concat": (HERE / "loop_overheads/README.md", loop_overheads_concat)}
TABLES |= dropin_tables.TABLES  # experiments/dropin builds its own, beside its experiment


# -- README blocks ------------------------------------------------------------------------------------
def blocks(text: str, name: str) -> tuple[int, int]:
    """Where table NAME's body sits in a README's text: (start, end) offsets between its two markers."""
    begin = BEGIN.format(name)
    start = text.index(begin) + len(begin) + 1
    return start, text.index(END, start)


def stale(tables: dict = TABLES) -> list[str]:
    """The names of the tables whose README copy differs from what their files give now."""
    out = []
    for name, (readme, build) in tables.items():
        text = readme.read_text()
        start, end = blocks(text, name)
        if text[start:end].rstrip("\n") != build():
            out.append(name)
    return out


def write(tables: dict = TABLES) -> None:
    for name, (readme, build) in tables.items():
        text = readme.read_text()
        start, end = blocks(text, name)
        readme.write_text(text[:start] + build() + "\n" + text[end:])


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    elif bad := stale():
        print("tables that differ from their result files (python experiments/tables.py --write): " + ", ".join(bad))
        sys.exit(1)
