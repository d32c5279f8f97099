"""The ladder as one picture: real tokens/s per rung, in rung order, with each rung's 95% interval and the
plain-Trainer anchors of the same calls as lines.
    python experiments/twelve_x_slowdown/plot_ladder.py experiments/twelve_x_slowdown/results/ladder"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

folder = Path(sys.argv[1])
rows = sorted((json.loads(line) for line in open(folder / "reports.jsonl")), key=lambda r: r["label"])
names = [r["label"].removeprefix("rung_") for r in rows]
rate = [r["throughput"]["real_tokens_per_s"] for r in rows]
err = [[v - r["throughput"]["real_tokens_per_s_low"] for v, r in zip(rate, rows)],
       [r["throughput"]["real_tokens_per_s_high"] - v for v, r in zip(rate, rows)]]
fig, ax = plt.subplots(figsize=(9, 4.5))
ax.bar(names, rate, yerr=err, capsize=3, color=["#999999"] * 4 + ["#1f77b4"] * (len(rows) - 4))
for i, v in enumerate(rate):
    ax.text(i, v * 1.08, f"{v:,.0f}\n{v / rate[0]:.1f}x", ha="center", fontsize=8)
for path, style in ((folder / "anchor_call_A.jsonl", ":"), (folder / "anchor_call_B.jsonl", "--")):
    for line in open(path):  # the anchor's JSON lines, between the Trainer's own printed dicts
        anchor = json.loads(line) if line.startswith('{"') else {}
        if "real_tok_per_s" in anchor:
            ax.axhline(anchor["real_tok_per_s"], ls=style, color="k", lw=1)
            ax.text(-0.4, anchor["real_tok_per_s"] * 1.05, f"plain Trainer {anchor['name']}", ha="left", fontsize=8)
ax.set_yscale("log")
ax.set_ylim(500, max(rate) * 3)
ax.set_ylabel("real tokens/s (log scale, 95% interval)")
ax.set_title(f"12x ladder: the report's before, its fixes (grey), trainsweep's levers (blue)\n"
             f"Qwen3-4B-shape LoRA classifier on {rows[0]['env']['device_name']}")
plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
fig.tight_layout()
fig.savefig(folder / "ladder.png", dpi=110)
print(folder / "ladder.png")
