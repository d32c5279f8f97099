"""Do two runs' logged loss curves agree? The script as written (P) and sped up (S) see the same rows but grouped
into other micro-batches, so no step's loss is the same; what must agree is the curve. Over the first `steps`
logged steps, in windows of `window`: each window's mean of S minus its mean of P, against K standard errors of
that difference. A step's noise is read from successive differences (half the mean squared difference of
neighbouring steps: a falling curve's trend does not count as noise), so the test stays as strict early, where
the loss moves fast, as late.

    python3 experiments/dropin/agree.py RESULTS.jsonl SCRIPT [SEED]   # P and S lines of one script (and seed) in one call
"""
from __future__ import annotations

import json
import math
import sys
from statistics import fmean

K = 3.0  # standard errors: a window outside is a curve that differs (~0.3% of windows by chance, normal noise)


def noise(values: list[float]) -> float:
    """One step's noise variance, from neighbouring steps (von Neumann): immune to a smooth trend."""
    diffs = [(b - a) ** 2 for a, b in zip(values, values[1:])]
    return fmean(diffs) / 2 if diffs else 0.0


def agree(plain: list[float], sped: list[float], steps: int = 50, window: int = 10, k: float = K) -> dict:
    """Window by window over the first `steps` losses: the gap, its standard error, and whether it is within k."""
    if min(len(plain), len(sped)) < steps:
        raise ValueError(f"{len(plain)} and {len(sped)} logged losses: {steps} needed")
    rows = []
    for start in range(0, steps, window):
        p, s = plain[start:start + window], sped[start:start + window]
        gap = fmean(s) - fmean(p)
        se = math.sqrt(noise(p) / len(p) + noise(s) / len(s))
        rows.append({"steps": f"{start + 1}-{start + len(p)}", "plain": fmean(p), "sped": fmean(s), "gap": gap,
                     "se": se, "relative": gap / fmean(p), "within": abs(gap) <= k * se})
    return {"windows": rows, "agree": all(r["within"] for r in rows), "k": k,
            "largest_relative": max(abs(r["relative"]) for r in rows)}


if __name__ == "__main__":
    path, script = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else None
    lines = [json.loads(x) for x in open(path) if x.startswith("{")]
    runs = {r["mode"]: r["losses"] for r in lines if r["script"] == script and seed in (None, r.get("seed", 0))}
    out = agree(runs["plain"], runs["sped"])
    for r in out["windows"]:
        print(f"steps {r['steps']}: P {r['plain']:.4f}  S {r['sped']:.4f}  gap {r['gap']:+.4f} "
              f"({r['relative']:+.2%}, {abs(r['gap']) / r['se'] if r['se'] else math.inf:.1f} se)")
    print(f"agree within {out['k']} se in every window: {out['agree']}; largest gap {out['largest_relative']:.2%}")
