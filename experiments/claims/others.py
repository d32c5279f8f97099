"""Claims on the other experiments' files: twelve_x's loaders, scaling, tokenization, batch_vs_accum, speedup."""
from __future__ import annotations

from experiments.claims import ROOT, Claim, n, quoted, times, x_only
from experiments.claims.speed import GRAPHS4, GRAPHS5, REGIONAL4, REGIONAL5
from experiments.figures import Fig, quotient, row_call

CLAIMS: list = []


LOADERS = "twelve_x_slowdown/results/loaders/reports.jsonl"
FIRST, LAST = Fig(LOADERS, "w0_nopin"), Fig(LOADERS, "w0_nopin_again")  # the same job, first and last process
SCALING = "scaling/results/h200x2/scaling_reports.jsonl"
DDP2, ONE_GPU = Fig(SCALING, "two_gpu_ddp"), Fig(SCALING, "one_gpu")
NEAR_CAP = "batch_vs_accum_saturation/results/near_cap/reports.jsonl"
CLAIMS += [
    # docs/configuration.md, docs/multi_gpu.md
    Claim("graphs gained 2.34x over regional compile on 4 layers, 1.85x at full depth",
          lambda: f"graphs gained {x_only(GRAPHS4, REGIONAL4)} over regional compile on 4 layers, {x_only(GRAPHS5, REGIONAL5)} at full depth"),
    Claim("ran 8,412 real tok/s as the last of twelve processes", lambda: f"ran {n(LAST.rate)} real tok/s as the last of twelve processes"),
    Claim("call and 6,994 as the first: 1.20x (1.01-1.43), a tie", lambda: f"call and {n(FIRST.rate)} as the first: {times(LAST, FIRST).replace(': a tie', ', a tie')}"),
    Claim("DDP ran 1.85x (1.79-1.90) one GPU's real tokens/s", lambda: f"DDP ran {times(DDP2, ONE_GPU)} one GPU's real tokens/s"),
    Claim("jobs predicted at 20.6 and 21.6 GB of a 24 GB cap ran out of memory",
          lambda: (lambda a, b: f"jobs predicted at {a.get('memory_predicted_gb.peak_allocated'):.1f} and "
                   f"{b.get('memory_predicted_gb.peak_allocated'):.1f} GB of a 24 GB cap ran out of memory"
                   if {a.get('status'), b.get('status')} == {"oom"} else "they did not run out of memory")(
              Fig(NEAR_CAP, "fp32_b16_1800"), Fig(NEAR_CAP, "fp32_b16_near_cap"))),
]


def _tokenization() -> dict[tuple[int, bool], dict]:
    from experiments.figures import _records

    return {(r["num_proc"], r["tokenizer_threads"]): r for r in _records("tokenization/results/cpu_2core_300k.jsonl")}


def _summary_row(csv_path: str, job: str) -> dict:
    """A row of a sweep's own summary.csv (src/report/summary.py wrote its interval then; the README tables
    recompute theirs with today's code, so a figure quoted from the summary is checked against the summary)."""
    import csv

    with open(ROOT / "experiments" / csv_path) as f:
        return next(r for r in csv.DictReader(f) if r["job"] == job)


def _bva_fastest() -> dict:
    return _summary_row("batch_vs_accum/results/summary.csv", "batch.size=16, batch.grad_accum=2")


CLAIMS += [
    # experiments/tokenization (one CPU file), as the experiments index states it
    Claim("161 s single-threaded; the fast tokenizer's own threads give 1.64x, num_proc 2 on top 1.15x",
          lambda: (lambda t: f"{t[1, False]['cold_s']:.0f} s single-threaded; the fast tokenizer's own threads give "
                   f"{t[1, False]['cold_s'] / t[1, True]['cold_s']:.2f}x, num_proc 2 on top "
                   f"{t[1, True]['cold_s'] / t[2, True]['cold_s']:.2f}x")(_tokenization())),
    # experiments/batch_vs_accum: the sweep's fastest with headroom, from its summary
    Claim("(9.2k real tok/s, 8,699-9,800)",
          lambda: (lambda r: f"({float(r['real_tok_s']) / 1000:.1f}k real tok/s, {n(float(r['real_tok_s_low']))}-"
                   f"{n(float(r['real_tok_s_high']))})")(_bva_fastest())),
    Claim("9,217 (8,699-9,800) real tok/s",
          lambda: (lambda r: f"{n(float(r['real_tok_s']))} ({n(float(r['real_tok_s_low']))}-{n(float(r['real_tok_s_high']))}) "
                   f"real tok/s")(_bva_fastest())),
    Claim("saturates the card (78.3 of 79.2 GB reserved)",
          lambda: (lambda m: f"saturates the card ({m['peak_reserved']:.1f} of {m['capacity']:.1f} GB reserved)")(
              Fig("batch_vs_accum/results/sweep_reports.jsonl", "batch.grad_accum=1,batch.size=32,model=qwen3").get("memory_gb"))),
    # experiments/scaling
    Claim("one GPU's real tok/s, 92% of linear", lambda: f"one GPU's real tok/s, {quotient(DDP2.rate, 2 * ONE_GPU.rate, DDP2.call_id, ONE_GPU.call_id):.0%} of linear"),
    Claim("fits one card at bs 4 (60 GB)",
          lambda: (lambda f: f"fits one card at bs {f.get('config.batch.size')} ({f.get('memory_gb.peak_allocated'):.0f} GB)")(
              Fig(SCALING, "one_gpu_full_ft_fp32"))),
]


CLAIMS += [
    Claim("DDP scales 1.85x (1.79-1.90) on two GPUs**, 92% of linear",
          lambda: f"DDP scales {times(DDP2, ONE_GPU)} on two GPUs**, {quotient(DDP2.rate, 2 * ONE_GPU.rate, DDP2.call_id, ONE_GPU.call_id):.0%} of linear"),
]


def _bert(path: str) -> list[dict]:
    from experiments.figures import _records

    return [r for r in _records(f"speedup/results/{path}") if r["script"] == "bert"]


def _bert_first_call() -> str:
    """The first 4-layer call's BERT, plain and 'sped' (speedup applied nothing): one call, so a ratio in it."""
    from experiments.figures import row_call

    plain, sped = (next(r for r in _bert("h100_4layers.jsonl") if r["mode"] == m) for m in ("plain", "sped"))
    x = quotient(sped["own_clock_tok_s"], plain["own_clock_tok_s"], row_call(sped), row_call(plain))
    return (f"differed by up to {x:.2f}x (the\nfirst 4-layer call's BERT ran {n(plain['own_clock_tok_s'])} tok/s as written "
            f"and {n(sped['own_clock_tok_s'])} with speedup")


def _bert_order() -> str:
    rates = [r["own_clock_tok_s"] for r in _bert("h100_4layers_order.jsonl")]
    return f"put all four BERT runs within {max(rates) / min(rates) - 1:.0%}"


CLAIMS += [
    # experiments/speedup: the noise between processes at 4 layers
    Claim("differed by up to 1.57x (the\nfirst 4-layer call's BERT ran 37,579 tok/s as written and 58,834 with speedup", _bert_first_call),
    Claim("put all four BERT runs within 6%", _bert_order),
]


def _speedup_runs(path: str, script: str, mode: str) -> list[float]:
    from experiments.figures import _records

    return [r["own_clock_tok_s"] for r in _records(f"speedup/results/{path}.jsonl") if r["script"] == script and r["mode"] == mode]


def _mean_k(path: str, script: str, mode: str) -> str:
    runs = _speedup_runs(path, script, mode)
    return f"{sum(runs) / len(runs) / 1000:.1f}k"


def _graphs_calls() -> str:
    graphed, plain = _speedup_runs("h100_graphs_calls2_3", "classifier8", "graphs"), _speedup_runs("h100_graphs_calls2_3", "classifier8", "plain")
    return (f"{min(graphed) / 1000:.1f}-{max(graphed) / 1000:.1f}k real tok/s graphed against {min(plain) / 1000:.1f}-"
            f"{max(plain) / 1000:.1f}k as written")


CLAIMS += [
    # experiments/speedup: the step-overheads lever across calls (said as such), the graphed runs of calls 2-3
    Claim("`classifier32` went from 20.3k to 23.5k real tok/s with it",
          lambda: f"`classifier32` went from {_mean_k('h100_full_before_step_lever', 'classifier32', 'sped')} to "
                  f"{_mean_k('h100_full_classifiers', 'classifier32', 'sped')} real tok/s with it"),
    Claim("17.3-17.4k real tok/s graphed against 3.1-3.5k as written", _graphs_calls),
]


# experiments/batch_vs_accum: the sweep's own summary, quoted (its jobs shortened to "bs 16 x ga 2" in the README)
CLAIMS += quoted("batch_vs_accum/results/summary.md",
                 "9,217 (8,699-9,800) real tokens/s", "(8,714 (8,318-9,150))", "tie (1.05x, 0.97-1.15: within noise)",
                 "for effective batch 8: bs 8 x ga 1 beats bs 4 x ga 2 by 1.87x (1.62-2.16)",
                 "for effective batch 16: bs 16 x ga 1 beats bs 8 x ga 2 by 1.65x (1.53-1.78)",
                 "for effective batch 32: bs 32 x ga 1 and bs 16 x ga 2 tie (1.03x, 0.96-1.10: within noise)")
CLAIMS += [
    *quoted("loop_overheads/results/pooled/summary.md", "debug=empty_cache by 1.51x (1.31-1.74)"),
    *quoted("seed_loss69/results/h200_qwen3_default_before.txt", "12,015 (11,516-12,559)"),
    *quoted("seed_loss69/results/h200_qwen3_default_after.txt", "12,042 (11,508-12,629)"),
    *quoted("speedup/results/h100_measured_classifier8_report.md", "GPU busy 45%, idle waiting for the host 53%"),
    *quoted("speed/results/h100_gpu_tests_after_refactor.log", "causal LM peaked 16% under"),
]


FULL_FT = Fig(SCALING, "one_gpu_full_ft_fp32")
CLAIMS += [
    # experiments/scaling: DDP's step and busy against one GPU (one call), the full fine-tune's memory
    Claim("Each rank's step takes 9% longer than the single GPU's (0.356 against 0.326 s",
          lambda: f"Each rank's step takes {DDP2.get('step_time_s.mean') / ONE_GPU.get('step_time_s.mean') - 1:.0%} longer than the "
                  f"single GPU's ({DDP2.get('step_time_s.mean'):.3f} against {ONE_GPU.get('step_time_s.mean'):.3f} s"),
    Claim("the GPU is busier (91%\n  against 77%", lambda: f"the GPU is busier ({DDP2.get('gpu_busy_fraction'):.0%}\n  against {ONE_GPU.get('gpu_busy_fraction'):.0%}"),
    Claim("(60.4 GB allocated on the H200; the memory model said\n  72.0, 19% high)",
          lambda: (lambda m, p: f"({m:.1f} GB allocated on the H200; the memory model said\n  {p:.1f}, {p / m - 1:.0%} high)")(
              FULL_FT.get("memory_gb.peak_allocated"), FULL_FT.get("memory_predicted_gb.peak_allocated"))),
]


def _speedup_row(path: str, mode: str, call: str | None = None) -> dict:
    from experiments.figures import _records, row_call

    return next(r for r in _records(f"speedup/results/{path}.jsonl")
                if r["mode"] == mode and r["script"] == "classifier8" and (call is None or row_call(r) == call))


def _step(r: dict) -> float:
    """A speedup run's step: the Trainer's train_runtime over its 60 steps (a graphed run's compile is in speedup_s)."""
    return r["train_runtime"] / 60


def _graphs_cost() -> str:
    s1 = _speedup_row("h100_graphs_call1", "sped")
    g2, g3 = (_speedup_row("h100_graphs_calls2_3", "graphs", f"h100_graphs_call{i}") for i in (2, 3))
    pay = lambda g: f"~{round((g['speedup_s'] - s1['speedup_s']) / (_step(s1) - _step(g)), -2):,.0f}"  # noqa: E731  (across calls)
    return (f"their graphed compile and step ({g2['speedup_s']:.0f} s and {_step(g2):.3f} s in call 2, {g3['speedup_s']:.0f} s\n  and "
            f"{_step(g3):.3f} s in call 3) against call 1's regional {s1['speedup_s']:.0f} s and {_step(s1):.3f} s (across calls, another "
            f"machine) give {pay(g2)}\n  and {pay(g3)} steps")


CLAIMS += [
    # experiments/speedup: what the graphed speedup() costs and when it pays (calls 2-3 against call 1, across calls as said)
    Claim("their graphed compile and step (220 s and 0.097 s in call 2, 135 s\n  and 0.098 s in call 3) against call 1's regional 34 s "
          "and 0.175 s (across calls, another machine) give ~2,400\n  and ~1,300 steps", _graphs_cost),
    Claim("`speedup()` took 180 s (call 1) and 220 s (call 2, a fresh machine) with a cold compile, 135 s with",
          lambda: "`speedup()` took {:.0f} s (call 1) and {:.0f} s (call 2, a fresh machine) with a cold compile, {:.0f} s with".format(
              _speedup_row("h100_graphs_call1", "graphs")["speedup_s"],
              *(_speedup_row("h100_graphs_calls2_3", "graphs", f"h100_graphs_call{i}")["speedup_s"] for i in (2, 3)))),
    Claim("regional compile's `speedup()` took 34 s (call 1)",
          lambda: f"regional compile's `speedup()` took {_speedup_row('h100_graphs_call1', 'sped')['speedup_s']:.0f} s (call 1)"),
]


def _measurement(path: str, label: str) -> dict:
    from experiments.figures import _records

    return next(r for r in _records(f"measurement/results/{path}") if r.get("label", r.get("name")) == label)


def _ab() -> dict:
    return _measurement("h100_D_overhead_ab.jsonl", "overhead_ab")


CLAIMS += [
    # experiments/measurement: call A's fixes, call D's paired A/B of measuring on and off
    Claim("the runner from 0.2901 to 0.2414 s/step (1.20x)",
          lambda: (lambda a, b: f"the runner from {a:.4f} to {b:.4f} s/step ({a / b:.2f}x)")(
              _measurement("h100_A_truth.jsonl", "before_bs8")["step_time_s"]["mean"],
              _measurement("h100_A_truth.jsonl", "runner_bs8")["step_time_s"]["mean"])),
    Claim("the device waited for data 0.4% of the step",
          lambda: (lambda r: f"the device waited for data {r['breakdown_s']['data'] / r['step_time_s']['mean']:.1%} of the step")(
              _measurement("h100_A_truth.jsonl", "runner_bs8"))),
    Claim("0.22664 s/step off, 0.22784 on", lambda: f"{_ab()['step_s_off']:.5f} s/step off, {_ab()['step_s_on']:.5f} on"),
    Claim("**+0.53% ± 0.79%** (standard error); blocks spread 5%",
          lambda: f"**+{_ab()['overhead_fraction']:.2%} ± {_ab()['overhead_fraction_stderr']:.2%}** (standard error); blocks spread "
                  f"{_ab()['block_spread_off']:.0%}"),
    Claim("resolves about ±1.6% (two standard errors)", lambda: f"resolves about ±{2 * _ab()['overhead_fraction_stderr']:.1%} (two standard errors)"),
]


def _said_losses(path: str, script: str, mode: str) -> tuple[float, float]:
    """speedup()'s own loss check, as its `said` line printed it: (yours, sped up) on the same rows and weights."""
    import re

    from experiments.figures import _records

    for r in _records(f"speedup/results/{path}.jsonl"):
        if r["script"] == script and r["mode"] == mode:
            m = re.search(r"loss on the same rows and weights ([\d.]+) yours, ([\d.]+) sped up", r.get("said") or "")
            return float(m[1]), float(m[2])
    raise KeyError((path, script, mode))


def _loss_agreement() -> str:
    pairs = [_said_losses("h100_full_classifiers", "classifier8", "sped"), _said_losses("h100_full_classifiers", "classifier32", "sped"),
             _said_losses("h100_full_sft", "sft", "sped")]
    worst = max(abs(b / a - 1) for a, b in pairs)
    (c8, s8), (c32, s32), (sft, ssft) = pairs
    return (f"agreed to {worst:.2%} or better (classifier8 {c8:.4f} as written, {s8:.4f} sped up; classifier32 {c32:.4f} / {s32:.4f};\n"
            f"SFT {sft:.4f} / {ssft:.4f})")


def _graphed_losses() -> str:
    graphed = [_said_losses("h100_graphs_call1", "classifier8", "graphs"), _said_losses("h100_graphs_calls2_3", "classifier8", "graphs")]
    yours = {a for a, _ in graphed}
    lo, hi = min(b for _, b in graphed), max(b for _, b in graphed)
    (plain,) = yours
    return (f"the graphed arm's loss was {lo:.4f}-{hi:.4f} against {plain:.4f} as written\n  "
            f"({(lo / plain - 1) * 100:.1f}-{hi / plain - 1:.1%}, bf16)")


CLAIMS += [
    Claim("agreed to 0.27% or better (classifier8 6.3271 as written, 6.3444 sped up; classifier32 6.1753 / 6.1772;\n"
          "SFT 12.3643 / 12.3645)", _loss_agreement),
    Claim("the graphed arm's loss was 6.3454-6.3500 against 6.3271 as written\n  (0.3-0.4%, bf16)", _graphed_losses),
]


def _dropin_pairs() -> list[tuple[dict, dict]]:
    """experiments/dropin's plain and sped runs of one script and seed, each pair inside one call."""
    from experiments.figures import _records

    pairs = []
    for call in ("h200_call1", "h200_call2", "h200_call3"):
        runs = {(r["script"], r.get("seed", 0), r["mode"]): r for r in _records(f"dropin/results/{call}_runs.jsonl")}
        pairs += [(runs[s, seed, "plain"], runs[s, seed, "sped"]) for s, seed, m in runs if m == "plain" and (s, seed, "sped") in runs]
    return pairs


def _dropin_cost() -> str:
    cls = [(p, s) for p, s in _dropin_pairs() if p["script"] == "lora_classifier"]
    every = [s["speedup_s"] for _, s in _dropin_pairs()]
    step = lambda r: r["train_runtime"] / 60  # noqa: E731  (60 steps a run)
    pays = [s["speedup_s"] / (step(p) - step(s)) for p, s in cls]
    return (f"speedup() itself took {min(every):.0f}-{max(every):.0f} s before training (reading and packing 4,096 rows, probing, "
            f"compiling 28-36 layers,\n  its A/B): at the classifier's step times ({min(step(p) for p, _ in cls):.2f}-"
            f"{max(step(p) for p, _ in cls):.2f} s a step plain, {min(step(s) for _, s in cls):.2f}-{max(step(s) for _, s in cls):.2f} s "
            f"sped up, from train_runtime)\n  it pays for itself after {round(min(pays), -1):.0f}-{round(max(pays), -1):.0f} steps")


def _dropin_rows() -> str:
    rows = [s["rows_per_step"] for _, s in _dropin_pairs()]
    worst = max(abs(r / 8 - 1) for r in rows)
    return f"Rows a step stayed within {worst:.1%} of the script's 8 ({min(rows):.2f}-{max(rows):.2f}, the packs' mean)"


CLAIMS += [
    # experiments/dropin and docs/dropin.md: the zero-line launcher's runs, each S/P inside one call
    Claim("speedup() itself took 30-51 s before training (reading and packing 4,096 rows, probing, compiling 28-36 layers,\n  its A/B): "
          "at the classifier's step times (0.43-0.51 s a step plain, 0.18-0.21 s sped up, from train_runtime)\n  it pays for itself "
          "after 120-180 steps", _dropin_cost),
    Claim("Rows a step stayed within 0.6% of the script's 8 (7.95-8.02, the packs' mean)", _dropin_rows),
    Claim("two of these scripts at real width ran 2.0-2.7x",
          lambda: (lambda x: f"two of these scripts at real width ran {min(x):.1f}-{max(x):.1f}x")(
              [quotient(s["own_clock_tok_s"], p["own_clock_tok_s"], row_call(s), row_call(p)) for p, s in _dropin_pairs()])),
]
