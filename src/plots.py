"""A sweep's plots, from its summary table (src/summary.py): throughput heatmap over batch x grad_accum, peak
memory vs batch with the memory model's prediction, the step-time breakdown per job, and loss curves."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from src.report import PHASES


def _label(row) -> str:
    return f"bs {row['batch']} x ga {row['grad_accum']}"


def plots(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    if df.empty:
        return paths
    sizes = sorted(df["batch"].dropna().unique())
    accums = sorted(df["grad_accum"].dropna().unique())
    # 1. throughput heatmap: batch x grad_accum (the best job per cell when other keys vary too)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(sizes), 1.2 + 0.8 * len(accums)))
    grid = df.groupby(["grad_accum", "batch"])["real_tok_s"].max().unstack().reindex(index=accums, columns=sizes)
    image = ax.imshow(grid.values.astype(float), cmap="viridis", aspect="auto")
    for i, ga in enumerate(accums):
        for j, bs in enumerate(sizes):
            cell = df[(df["batch"] == bs) & (df["grad_accum"] == ga)]
            value = grid.values[i, j]
            text = f"{value:,.0f}" if pd.notna(value) else (cell["status"].iloc[0].upper() if not cell.empty else "")
            ax.text(j, i, text, ha="center", va="center", color="white" if pd.notna(value) else "red", fontsize=8)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_yticks(range(len(accums)), [str(a) for a in accums])
    ax.set_xlabel("micro-batch size")
    ax.set_ylabel("grad_accum")
    ax.set_title("real tokens/s")
    fig.colorbar(image, ax=ax)
    paths.append(_save(fig, out_dir / "throughput_heatmap.png"))
    # 2. peak memory vs batch, the card's capacity, saturated and failed points marked
    mem_col = "peak_reserved_gb" if df["peak_reserved_gb"].notna().any() else "peak_rss_gb"
    fig, ax = plt.subplots(figsize=(6, 4))
    for ga in accums:
        sub = df[(df["grad_accum"] == ga) & df[mem_col].notna()].sort_values("batch")
        ax.plot(sub["batch"], sub[mem_col], marker="o", label=f"{mem_col.split('_')[1]}, grad_accum {ga}")
        sat = sub[sub["saturated"] == True]  # noqa: E712
        ax.scatter(sat["batch"], sat[mem_col], marker="x", s=90, color="red", zorder=3)
    predicted = df.dropna(subset=["predicted_alloc_gb", "peak_alloc_gb"]).sort_values("batch")
    if not predicted.empty:  # the memory model's prediction (allocated, before step 1) against what was allocated
        ax.plot(predicted["batch"], predicted["peak_alloc_gb"], marker=".", color="black", linewidth=0.8,
                label="allocated, measured")
        ax.plot(predicted["batch"], predicted["predicted_alloc_gb"], linestyle=":", marker="+", color="gray",
                label="allocated, predicted")
    capacity = df["capacity_gb"].dropna()
    if not capacity.empty:
        ax.axhline(capacity.iloc[0], color="gray", linestyle="--", label=f"capacity {capacity.iloc[0]:.0f} GB")
        for _, row in df[df["status"] == "oom"].iterrows():
            ax.scatter([row["batch"]], [capacity.iloc[0]], marker="v", s=90, color="black", zorder=3)
    if len(sizes) > 1:  # matplotlib can't log-scale a single point
        ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("micro-batch size")
    ax.set_ylabel("peak memory (GB)")
    ax.set_title("peak memory (x: saturated, v: out of memory)")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out_dir / "memory_vs_batch.png"))
    # 3. where each job's step time goes
    ok = df[df["status"] == "ok"].dropna(subset=["step_s"])
    if not ok.empty:
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(ok)), 4))
        bottom = pd.Series(0.0, index=ok.index)
        for phase in PHASES:
            values = ok[f"{phase}_s"].fillna(0.0)
            ax.bar(range(len(ok)), values, bottom=bottom, label=phase)
            bottom += values
        ax.set_xticks(range(len(ok)), [_label(r) for _, r in ok.iterrows()], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("seconds per optimizer step")
        ax.set_title("step time breakdown (device timeline)")
        ax.legend(fontsize=8)
        paths.append(_save(fig, out_dir / "step_breakdown.png"))
    return paths


def loss_curves(reports: list[dict], df: pd.DataFrame, out_dir: Path) -> Path | None:
    """Training loss against step, one line per job, with the uniform-guess loss the runs should start at."""
    import matplotlib.pyplot as plt

    curves = [(label, r["loss"]["curve"], r["loss"].get("expected_initial"))
              for label, r in zip(df.set_index("dir").loc[[r["job"] for r in reports], "job"], reports)
              if (r.get("loss") or {}).get("curve")]
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, curve, _ in curves:
        steps, losses = zip(*curve)
        ax.plot(steps, losses, marker=".", label=label)
    expected = curves[0][2]
    if expected:
        ax.axhline(expected, color="gray", linestyle="--", label=f"uniform guess {expected:.2f}")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss")
    ax.set_title("loss curves")
    ax.legend(fontsize=7)
    return _save(fig, out_dir / "loss_curves.png")


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
