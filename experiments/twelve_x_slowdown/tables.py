"""The tables of experiments/twelve_x_slowdown/README.md: the ladder (calls A and B), rungs 3-4 in call C, the loaders."""
from __future__ import annotations

from experiments.figures import HERE, Fig, gb, markdown, pct, rate, ratio


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
    figs = [Fig(L + "reports.jsonl", label) for label in LABELS]
    plain = {"A": Fig(L + "anchor_call_A.jsonl", "seed_before"), "B": Fig(L + "anchor_call_B.jsonl", "bf16_sdpa_b32_group")}
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
        f = Fig(C + "reports.jsonl", label)
        rows.append([what, rate(f), f"{f.get('step_time_s.mean'):.3f}", f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('host_s.launch'):.3f}", gb(f.get("memory_gb.peak_allocated"))])
    a = Fig(C + "anchor.jsonl", "bf16_sdpa_b16_gc")
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


TABLES = {"twelve_x/ladder": (HERE / "twelve_x_slowdown/README.md", twelve_x_ladder),
          "twelve_x/ladder_c": (HERE / "twelve_x_slowdown/README.md", twelve_x_ladder_c),
          "twelve_x/loaders": (HERE / "twelve_x_slowdown/README.md", twelve_x_loaders)}
