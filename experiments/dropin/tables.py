"""The tables of experiments/dropin/README.md, built from results/ (found by experiments/tables.py, which
checks the README's copies). Every figure of a row comes from one device call's files: <card>_callN_runs.jsonl
(experiments/dropin/record.py, a line per run) and <card>_callN_anchors.jsonl (the plain-Trainer anchor)."""
from __future__ import annotations

from pathlib import Path

from experiments.figures import _records, quotient, row_call

from .agree import agree

HERE = Path(__file__).resolve().parent
# call 3: the classifier at seeds 1 and 2; call 4: P S P S; call 5: S then P, speedup()'s A/B timed on a second pass;
# call 6: S alone, then the anchor (the device time left held no P); call 7: S P, then the anchor (arguments view)
CALLS = ("h200_call1", "h200_call2", "h200_call3", "h100_call4", "h100_call5", "h100_call6", "h100_call7")
NAMES = {"lora_classifier": "Qwen3-4B LoRA classifier, bs 8", "trl_sft_lora": "Llama-3.2-3B TRL SFT LoRA, bs 8"}


def _lines(path: str) -> tuple[dict, ...]:
    """A results file's JSON lines, through figures._records: the calltrace scan sees each number's call."""
    return _records(f"dropin/results/{path}")


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])


def _by_run(call: str) -> dict:
    """(script, seed, round, mode) -> the run's line; round counts a script's repeats at one seed (REPEATS=2 runs
    P S P S). Calls 1-2 predate the seed in the line: seed 0."""
    out, seen = {}, {}
    for r in _lines(f"{call}_runs.jsonl"):
        key = (r["script"], r.get("seed", 0), r["mode"])
        seen[key] = seen.get(key, 0) + 1
        out[key[:2] + (seen[key], key[2])] = r
    return out


def _pairs(by: dict) -> list[tuple[str, int, int]]:
    return sorted({(script, seed, round_) for script, seed, round_, _ in by},
                  key=lambda k: (list(NAMES).index(k[0]), k[1], k[2]))


def _label(script: str, seed: int, round_: int) -> str:
    return f"{NAMES[script]}, seed {seed}" + (f", round {round_}" if round_ > 1 else "")


def _ab(run: dict) -> str:
    """speedup()'s own A/B before training: the ratio and its 95% interval over 5 interleaved rounds."""
    sp = (run.get("verified") or {}).get("speedup")
    return f"{sp['ratio']:.2f}x ({sp['low']:.2f}-{sp['high']:.2f})" if sp else ""


def runs() -> str:
    rows = []
    for call in CALLS:
        anchor = next(a for a in _lines(f"{call}_anchors.jsonl") if a.get("name") == "bf16_sdpa_b8")
        rows.append([call, "plain-Trainer anchor (bf16 sdpa bs 8, its own rows)", "P", f"{anchor['real_tok_per_s']:,}",
                     "", "", "", "", f"{anchor['peak_alloc_gb']}", ""])
        by = _by_run(call)
        for script, seed, round_ in _pairs(by):
            p, s = by.get((script, seed, round_, "plain")), by.get((script, seed, round_, "sped"))
            for mode, r in (("P", p), ("S", s)):
                if r is None:
                    continue
                ratio = (f"**{quotient(s['own_clock_tok_s'], p['own_clock_tok_s'], row_call(s), row_call(p)):.2f}x**"
                         if mode == "S" and p else "")
                rows.append([call, _label(script, seed, round_), mode, f"{r['own_clock_tok_s']:,.0f}", ratio, _ab(r) if mode == "S" else "",
                             f"{r['train_runtime']:.1f}", f"{r['speedup_s']:.0f}" if mode == "S" else "",
                             f"{r['peak_gb']}", f"{r['rows_per_step']:.2f}"])
    return _markdown(["call", "script", "run", "script's own clock, real tok/s", "S / P", "speedup()'s A/B (95%)",
                      "train_runtime s", "speedup() s", "peak GB", "rows a step"], rows)


def losses() -> str:
    rows = []
    for call in CALLS:
        by = _by_run(call)
        for script, seed, round_ in _pairs(by):
            p, s = by.get((script, seed, round_, "plain")), by.get((script, seed, round_, "sped"))
            if p is None or s is None:
                continue
            out = agree(p["losses"], s["losses"])
            for w in out["windows"]:
                rows.append([call, _label(script, seed, round_), w["steps"], f"{w['plain']:.4f}", f"{w['sped']:.4f}",
                             f"{w['relative']:+.2%}", f"{abs(w['gap']) / w['se']:.1f}" if w["se"] else "-",
                             "yes" if w["within"] else "**no**"])
    return _markdown(["call", "script", "steps", "P mean loss", "S mean loss", "gap", "gap / se", "within 3 se"], rows)


def ab_rates() -> str:
    """speedup()'s A/B beside the script's own clock: the rate it timed for the script's own batches (forward and
    backward alone) against the rate the plain run's whole steps reached, and the two ratios."""
    rows = []
    for call in CALLS:
        by = _by_run(call)
        for script, seed, round_ in _pairs(by):
            p, s = by.get((script, seed, round_, "plain")), by.get((script, seed, round_, "sped"))
            v = (s or {}).get("verified") or {}
            if p is None or "real_tokens_per_s" not in v:
                continue
            first = v.get("first_pass_real_tokens_per_s")
            timed = "second pass" if first else "first pass (the only one)"
            rows.append([call, _label(script, seed, round_), timed, f"{v['real_tokens_per_s']['your batches']:,.0f}",
                         f"{first['your batches']:,.0f}" if first else "", f"{p['own_clock_tok_s']:,.0f}", _ab(s),
                         f"{quotient(s['own_clock_tok_s'], p['own_clock_tok_s'], row_call(s), row_call(p)):.2f}x"])
    return _markdown(["call", "script", "A/B timed", "A/B: your batches, real tok/s", "the same, first pass",
                      "plain run's own clock, real tok/s", "A/B ratio (95%)", "own clock S / P"], rows)


TABLES = {"dropin/runs": (HERE / "README.md", runs), "dropin/losses": (HERE / "README.md", losses),
          "dropin/ab_rates": (HERE / "README.md", ab_rates)}
