"""The table of experiments/measurement/README.md: TRL's SFT script plain and attached."""
from __future__ import annotations

from experiments.figures import HERE, _records, markdown


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


TABLES = {"measurement/dropin_sft": (HERE / "measurement/README.md", dropin_sft)}
