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
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.base import stats  # noqa: E402

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

    @property
    def call_id(self) -> str:
        return self.call or Path(self.path).stem.removesuffix("_anchors")

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


TABLES = {"speed/call1": (HERE / "speed/README.md", speed_call1),
          "speed/call2": (HERE / "speed/README.md", speed_call2),
          "speed/call4": (HERE / "speed/README.md", speed_call4),
          "twelve_x/ladder": (HERE / "twelve_x_slowdown/README.md", twelve_x_ladder)}


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
