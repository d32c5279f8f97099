"""The tables of experiments/batch_vs_accum_saturation/README.md: saturation, long rows, near the cap, the largest
micro-batch that fits."""
from __future__ import annotations

import re

from experiments.figures import HERE, Fig, markdown


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


TABLES = {"saturation/claims": (HERE / "batch_vs_accum_saturation/README.md", saturation_claims),
          "saturation/long": (HERE / "batch_vs_accum_saturation/README.md", saturation_long),
          "saturation/near_cap": (HERE / "batch_vs_accum_saturation/README.md", saturation_near_cap),
          "saturation/largest": (HERE / "batch_vs_accum_saturation/README.md", saturation_largest)}
