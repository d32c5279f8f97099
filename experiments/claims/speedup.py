"""Claims on experiments/speedup's and experiments/dropin's files: a user's script plain and sped up."""
from __future__ import annotations

from experiments.claims import Claim, n
from experiments.figures import quotient, row_call

CLAIMS: list = []


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
    calls = lambda g: {row_call(g), row_call(s1)}  # noqa: E731  (calls 2-3 against call 1: said "across calls")
    pay = lambda g: f"~{round(quotient(g['speedup_s'] - s1['speedup_s'], _step(s1) - _step(g), calls(g), calls(g), across_calls=True), -2):,.0f}"  # noqa: E731
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


def _call1_graphs_over_regional() -> str:
    """Call 1: the graphed run over the regionally compiled one, one call, on the script's own clock."""
    graphs, sped = (_speedup_row("h100_graphs_call1", mode) for mode in ("graphs", "sped"))
    return (f"so graphs are {quotient(graphs['own_clock_tok_s'], sped['own_clock_tok_s'], row_call(graphs), row_call(sped)):.2f}x "
            "regional compile's speed at this batch (call 1)")


def _overlap6() -> str:
    from experiments.claims.speed import GRAPHS6, GRAPHS6_WAIT

    return f"bs-8 step from {GRAPHS6_WAIT.rate / 1000:.1f}k to {GRAPHS6.rate / 1000:.1f}k, experiments/speed call 6"


CLAIMS += [
    Claim("so graphs are 2.13x regional compile's speed at this batch (call 1)", _call1_graphs_over_regional),
    Claim("bs-8 step from 18.1k to 23.3k, experiments/speed call 6", _overlap6),
]


def _call1_graphed_step() -> float:
    """Call 1's graphed step: its train_runtime holds a second whole-model compile in the first step, so the step is
    the regional run's (same packs) scaled by the two runs' own clocks, which start after step 10."""
    graphs, sped = (_speedup_row("h100_graphs_call1", mode) for mode in ("graphs", "sped"))
    return _step(sped) * sped["own_clock_tok_s"] / graphs["own_clock_tok_s"]


def _call1_cost() -> str:
    graphs, sped = (_speedup_row("h100_graphs_call1", mode) for mode in ("graphs", "sped"))
    more = graphs["speedup_s"] - sped["speedup_s"]
    return (f"step took {_call1_graphed_step():.3f} s and a regionally compiled one {_step(sped):.3f} s: the {more:.0f} s more "
            f"of `speedup()` paid off after ~{round(more / (_step(sped) - _call1_graphed_step()), -2):,.0f}")


def _call1_first_step() -> str:
    graphs = _speedup_row("h100_graphs_call1", "graphs")
    first = graphs["train_runtime"] - 59 * _call1_graphed_step()
    return (f"took {graphs['speedup_s']:.0f} s and then its first training step another ~{first:.0f} s (its train_runtime, "
            f"{graphs['train_runtime']:.0f} s, less 59 graphed steps)")


def _classifier32_pays() -> str:
    from experiments.figures import _records

    rows = [r for r in _records("speedup/results/h100_full_classifiers.jsonl") if r["script"] == "classifier32"]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    plain, sped = (mean([_step(r) for r in rows if r["mode"] == m]) for m in ("plain", "sped"))
    cost = mean([r["speedup_s"] for r in rows if r["mode"] == "sped"])
    return (f"from ~{plain:.2f} s to ~{sped:.2f} s, so the line pays for itself after ~{round(cost / (plain - sped), -2):.0f} steps")


def _nonblocking_4layers() -> str:
    from experiments.claims import times
    from experiments.figures import Fig

    path = "speed/results/h100_overlap_4layer_call.jsonl"
    return f"one pair:\n  {times(Fig(path, 'o2k_regional'), Fig(path, 'o2k_regional_wait'))}, about"


def _measured_report() -> str:
    """The attached run's report: its step time with its interval, and the breakdown's GPU share, as the report has them."""
    import re

    from experiments.claims import ROOT, quote

    path = "speedup/results/h100_measured_classifier8_report.md"
    m = re.search(r"\| step time \| ([\d.]+) s \(95% ([\d.]+)-([\d.]+) ", (ROOT / "experiments" / path).read_text())
    return f"{float(m[1]):.3f} s ({float(m[2]):.3f}-{float(m[3]):.3f}), **{quote(path, 'GPU busy 45%, idle waiting for the host 53%')}**"


CLAIMS += [
    Claim("step took 0.082 s and a regionally compiled one 0.175 s: the 145 s more of `speedup()` paid off after ~1,600", _call1_cost),
    Claim("took 180 s and then its first training step another ~149 s (its train_runtime, 154 s, less 59 graphed steps)", _call1_first_step),
    Claim("from ~0.81 s to ~0.29 s, so the line pays for itself after ~100 steps", _classifier32_pays),
    Claim("one pair:\n  0.82x (0.73-0.92), about", _nonblocking_4layers),
    Claim("0.195 s (0.186-0.205), **GPU busy 45%, idle waiting for the host 53%**", _measured_report),
]


def _dropin_runs() -> list[dict]:
    from experiments.figures import _records

    return [r for call in ("h200_call1", "h200_call2", "h200_call3") for r in _records(f"dropin/results/{call}_runs.jsonl")]


def _dropin_sft_agree() -> str:
    """The SFT pair's loss windows (experiments/dropin/agree.py, as its losses table): the largest relative gap."""
    from experiments.dropin.agree import agree

    (p, s), = [(p, s) for p, s in _dropin_pairs() if p["script"] == "trl_sft_lora"]
    worst = max(abs(w["relative"]) for w in agree(p["losses"], s["losses"])["windows"])
    return f"The SFT curves agree to {worst:.1%}."


def _dropin_round0() -> str:
    import re

    said = next(r["said"] for r in _dropin_runs() if r["script"] == "lora_classifier" and r.get("seed", 0) == 0 and r.get("said"))
    a, b = map(float, re.search(r"same rows and weights ([\d.]+) yours, ([\d.]+) sped up", said).groups())
    return f"the two losses agreed to {abs(b / a - 1):.2%} ({a:.4f} and {b:.4f}, the A/B's round 0)"


CLAIMS += [
    Claim("random weights, bf16, 60 steps, every\nloss logged",
          lambda: "random weights, bf16, {} steps, every\nloss logged".format(
              "/".join(sorted({str(len(r["losses"])) for r in _dropin_runs()})))),
    Claim("The SFT curves agree to 0.1%.", _dropin_sft_agree),
    Claim("the two losses agreed to 0.04% (6.1768 and 6.1793, the A/B's round 0)", _dropin_round0),
]


def _dropin_h100_steps() -> str:
    """Call 4 (an H100, P S P S): each run's seconds a step from train_runtime over its logged steps."""
    from experiments.figures import _records

    runs = list(_records("dropin/results/h100_call4_runs.jsonl"))
    step = {mode: [r["train_runtime"] / len(r["losses"]) for r in runs if r["mode"] == mode] for mode in ("plain", "sped")}
    sped = sorted({f"{s:.2f}" for s in step["sped"]})
    return (f"the steps took {' and '.join(f'{s:.2f}' for s in step['plain'])} s plain and "
            f"{' and '.join(sped)} s sped up")


CLAIMS += [Claim("the steps took 0.39 and 0.42 s plain and 0.20 s sped up", _dropin_h100_steps)]


def _dropin_h100_anchors() -> str:
    """Calls 4 and 5 ran on two H100 machines: their plain-Trainer anchors, across calls (said as such)."""
    from experiments.figures import _records

    four, five = (next(a for a in _records(f"dropin/results/h100_call{i}_anchors.jsonl") if a.get("name") == "bf16_sdpa_b8")
                  for i in (4, 5))
    x = quotient(five["real_tok_per_s"], four["real_tok_per_s"], row_call(five), row_call(four), across_calls=True)
    return f"another NVIDIA H100 80GB HBM3 (its anchor ran {x - 1:.0%} faster than call 4's)"


CLAIMS += [Claim("another NVIDIA H100 80GB HBM3 (its anchor ran 39% faster than call 4's)", _dropin_h100_anchors)]


def _call7() -> tuple[dict, dict, dict]:
    """experiments/dropin call 7 (the arguments view): the sped and plain classifier, the anchor; call 6's too."""
    from experiments.figures import _records

    runs = {r["mode"]: r for r in _records("dropin/results/h100_call7_runs.jsonl")}
    anchor = next(a for a in _records("dropin/results/h100_call7_anchors.jsonl") if a.get("name") == "bf16_sdpa_b8")
    return runs["sped"], runs["plain"], anchor


def _call7_ratio() -> str:
    sped, plain, _ = _call7()
    x = quotient(sped["own_clock_tok_s"], plain["own_clock_tok_s"], row_call(sped), row_call(plain))
    return f"{x:.2f}x the plain one by the script's own clock ({n(sped['own_clock_tok_s'])} against {n(plain['own_clock_tok_s'])} real tok/s)"


def _call7_ab() -> str:
    from experiments.dropin.agree import agree

    sped, plain, _ = _call7()
    sp, out = sped["verified"]["speedup"], agree(plain["losses"], sped["losses"])
    assert out["agree"]
    return (f"speedup()'s A/B said {sp['ratio']:.2f}x ({sp['low']:.2f}-{sp['high']:.2f}); the losses agree within "
            f"{out['k']:.0f} standard errors in every window of 10 steps")


def _args_view_us() -> float:
    """`python -m benchmarks.args_view` on this repo's CPU: host microseconds the view adds to a step."""
    import json

    from experiments.claims import ROOT

    return json.loads((ROOT / "experiments/dropin/results/cpu_args_view.json").read_text())["added_us_per_step"]


def _call7_cost() -> str:
    sped, _, _ = _call7()
    step = sped["train_runtime"] / 60
    return (f"about {_args_view_us():.0f} µs a step on the CPU (`python -m benchmarks.args_view`), which is\n  "
            f"{_args_view_us() * 1e-6 / step:.2%} of this run's {step:.2f} s step ({sped['train_runtime']:.1f} s of "
            f"train_runtime over 60 steps)")


def _call7_hosts() -> str:
    from experiments.figures import _records

    call6 = next(r for r in _records("dropin/results/h100_call6_runs.jsonl") if r["mode"] == "sped")
    anchor6 = next(a for a in _records("dropin/results/h100_call6_anchors.jsonl") if a.get("name") == "bf16_sdpa_b8")
    _, _, anchor7 = _call7()
    return (f"Call 6's sped-up run on another H100 went faster ({n(call6['own_clock_tok_s'])}), but its anchor did too "
            f"({n(anchor6['real_tok_per_s'])} against {n(anchor7['real_tok_per_s'])} here)")


CLAIMS += [
    # experiments/dropin call 7: the arguments view on a GPU (one H100), its cost against the CPU benchmark
    Claim("2.40x the plain one by the script's own clock (10,448 against 4,361 real tok/s)", _call7_ratio),
    Claim("speedup()'s A/B said 1.89x (1.72-2.09); the losses agree within 3 standard errors in every window of 10 steps",
          _call7_ab),
    Claim("about 82 µs a step on the CPU (`python -m benchmarks.args_view`), which is\n  0.05% of this run's 0.16 s step "
          "(9.9 s of train_runtime over 60 steps)", _call7_cost),
    Claim("Call 6's sped-up run on another H100 went faster (12,196), but its anchor did too (5,156 against 3,226 here)",
          _call7_hosts),
]
