"""The loss curves of experiments/speedup: each script's plain runs and sped-up runs, one panel a script.
    python experiments/speedup/plot.py      # writes experiments/speedup/loss_curves.png from results/"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
FILES = ("results/h100_full_classifiers.jsonl", "results/h100_graphs_calls2_3.jsonl", "results/h100_full_sft.jsonl")
LOGGING_STEPS = 5  # scripts.py logs every 5 steps: point k is the mean loss of steps 5k-4..5k


LOOK = {"plain": ("-", "tab:gray", "as written"), "sped": ("--", "tab:blue", "speedup(trainer)"),
        "graphs": (":", "tab:orange", "speedup(trainer, graphs=True)")}  # line style, colour, legend


def main() -> None:
    runs = [json.loads(line) for f in FILES for line in (HERE / f).read_text().splitlines() if line.startswith("{")]
    scripts = list(dict.fromkeys(r["script"] for r in runs))
    fig, axes = plt.subplots(1, len(scripts), figsize=(5 * len(scripts), 3.6))
    for ax, script in zip(axes, scripts):
        seen = {mode: 0 for mode in LOOK}
        for r in (r for r in runs if r["script"] == script):
            seen[r["mode"]] += 1
            steps = [LOGGING_STEPS * (i + 1) for i in range(len(r["losses"]))]
            style, color, label = LOOK[r["mode"]]
            ax.plot(steps, r["losses"], ls=style, marker="o", ms=3, color=color, label=f"{label} #{seen[r['mode']]}")
        ax.set_title(f"{script} ({runs[0]['gpu'].replace('NVIDIA ', '')})", fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("logged train loss (mean of 5 steps)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "loss_curves.png", dpi=110)


if __name__ == "__main__":
    main()
