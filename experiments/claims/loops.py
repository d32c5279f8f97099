"""Claims on kobart_batch, loop_overheads and twelve_x_slowdown's files: ratios inside a call, costs per step."""
from __future__ import annotations

import math
from functools import cache

from experiments.claims import Claim, _row, n, times
from experiments.figures import Fig, quotient

CLAIMS: list = []


def _kobart(size: int, accum: int) -> Fig:
    return Fig("kobart_batch/results/h100_sweep/kobart_reports.jsonl",
               f"batch.grad_accum={accum},batch.size={size},experiment=kobart_batch,logger=none")


def _kobart_ratio(template: str, a: tuple[int, int], b: tuple[int, int]) -> str:
    head, _, rest = times(_kobart(*a), _kobart(*b)).partition(" (")
    low, high = rest.split(")")[0].split("-")
    return template.format(x=head, low=low, high=high)


CLAIMS += [
    # experiments/kobart_batch: ratios of real tok/s (rows alike) with the batch-means intervals of figures.ratio
    Claim("**bs 16 gives 2.10x the samples/s of bs 8 (real tok/s alike; 95% interval 1.51-2.92)",
          lambda: _kobart_ratio("**bs 16 gives {x} the samples/s of bs 8 (real tok/s alike; 95% interval {low}-{high})", (16, 1), (8, 1))),
    Claim("2.10x (95%: 1.51-2.92", lambda: _kobart_ratio("{x} (95%: {low}-{high}", (16, 1), (8, 1))),
    Claim("bs 16 x ga 1 beats bs 8 x ga 2 by 1.63x (1.16-2.30)", lambda: _kobart_ratio("bs 16 x ga 1 beats bs 8 x ga 2 by {x} ({low}-{high})", (16, 1), (8, 2))),
    Claim("(bs 8: 1.29x, 1.05-1.58)", lambda: _kobart_ratio("(bs 8: {x}, {low}-{high})", (8, 2), (8, 1))),
    Claim("(1.38x, 0.85-2.27: within noise)", lambda: _kobart_ratio("({x}, {low}-{high}: within noise)", (16, 2), (16, 1))),
    Claim("(0.142 s at bs 8, 0.136 s at\nbs 16)",
          lambda: f"({_kobart(8, 1).get('step_time_s.mean'):.3f} s at bs 8, {_kobart(16, 1).get('step_time_s.mean'):.3f} s at\nbs 16)"),
    Claim("The GPU was busy 6-12% of each step",
          lambda: (lambda b: f"The GPU was busy {min(b) * 100:.0f}-{max(b):.0%} of each step")(
              [_kobart(s, a).get("gpu_busy_fraction") for s in (8, 16) for a in (1, 2)])),
]


POOLED = "loop_overheads/results/pooled/reports.jsonl"
ROUNDS = {"none": (0, 1, 2, 3), "other": (0, 1, 3)}  # `none` ran a fourth time (the cut third round, call 1)


def _habit(habit: str, repeat: int) -> Fig:
    return Fig(POOLED, f"debug={habit},experiment=loop_overheads,logger=none,model=qwen3" + (f",repeat={repeat}" if repeat else ""))


def _habit_ms(habit: str, key: str = "step_time_s.mean", calls: tuple[str, ...] | None = None) -> list[float]:
    runs = [_habit(habit, r) for r in ROUNDS["none" if habit == "none" else "other"]]
    return [f.get(key) * 1000 for f in runs if calls is None or f.call_id in calls]


def _rounds(habit: str) -> list[float]:
    """`none` over the habit, round by round (one call each: rounds 1-2 in call 1, round 3 in call 2)."""
    return [quotient(_habit("none", r).rate, _habit(habit, r).rate, _habit("none", r).call_id, _habit(habit, r).call_id) for r in (0, 1, 3)]


def _empty_cache() -> str:
    clean, cost = (sum(x) / len(x) for x in (_habit_ms("none"), _habit_ms("empty_cache")))
    return (f"+{cost - clean:.0f} ms a step\n  ({cost:.0f} against {clean:.0f}), every one of its runs slower than every clean one, "
            f"in both calls. On a 300k-row epoch at\n  bs 8 ({300_000 // 8:,} steps) that is about {300_000 // 8 * (cost - clean) / 1000 / 60:.0f} minutes")


def _launch_first_call() -> str:
    first = ("loop_overheads_call1",)
    cost, clean = _habit_ms("empty_cache", "host_s.launch", first), _habit_ms("none", "host_s.launch", first)
    return f"(host launch time {min(cost):.0f}-{max(cost):.0f}\n  ms against {min(clean):.0f}-{max(clean):.0f} ms in the first call)"


CLAIMS += [
    # experiments/loop_overheads: the habits round by round (ratios inside a call) and empty_cache's cost
    Claim("+135 ms a step\n  (400 against 265), every one of its runs slower than every clean one, in both calls. On a 300k-row epoch at\n"
          "  bs 8 (37,500 steps) that is about 84 minutes", _empty_cache),
    Claim("(host launch time 336-368\n  ms against 238-272 ms in the first call)", _launch_first_call),
    Claim("round `none` ran 1.01x, 0.98x and 1.18x its speed.",
          lambda: "round `none` ran {}x, {}x and {}x its speed.".format(*(f"{x:.2f}" for x in _rounds("item_sync")))),
    Claim("1.18x (1.11-1.26), but that interval is the steps' noise",
          lambda: f"{times(_habit('none', 3), _habit('item_sync', 3))}, but that interval is the steps' noise"),
    Claim("Round by round `none` ran\n  0.87-1.08x their speed.",
          lambda: (lambda x: f"Round by round `none` ran\n  {min(x):.2f}-{max(x):.2f}x their speed.")(
              _rounds("pandas_concat") + _rounds("cudnn_deterministic"))),
]


LADDER, LADDER_C = "twelve_x_slowdown/results/ladder/reports.jsonl", "twelve_x_slowdown/results/ladder_c/reports.jsonl"


def _ladder_c() -> dict[str, Fig]:
    return {label: Fig(LADDER_C, label) for label in ("rung_3_env_a", "rung_4_bf16_a", "rung_4_bf16_b", "rung_3_env_b")}


def _bf16_ties() -> str:
    c = _ladder_c()
    r4, r3 = (c["rung_4_bf16_a"].rate + c["rung_4_bf16_b"].rate) / 2, (c["rung_3_env_a"].rate + c["rung_3_env_b"].rate) / 2
    pair = lambda a, b: times(a, b).removesuffix(": a tie")  # noqa: E731  (each pair, earlier run over later)
    return (f"**bf16 ties TF32 here: {quotient(r4, r3, c['rung_4_bf16_a'].call_id, c['rung_3_env_a'].call_id):.2f}x** (rung 4's two runs "
            f"{n(r4)} against rung 3's {n(r3)}; each same-position pair ties,\n  {pair(c['rung_3_env_a'], c['rung_4_bf16_a'])} and "
            f"{pair(c['rung_4_bf16_b'], c['rung_3_env_b'])}). Across calls it read "
            f"{times(Fig(LADDER, 'rung_4_bf16'), Fig(LADDER, 'rung_3_env'), across_calls=True).split('x')[0]}")


def _epochs() -> str:
    before, best = (Fig(LADDER, label).get("throughput.samples_per_s") for label in ("rung_0_before", "rung_8_padding_free"))
    return (f"3M rows at the \"before\"'s {before:.2f} samples/s take {3e6 / before / 3600:.0f} h, 300k take {3e5 / before / 3600:.0f} h; "
            f"at the best rung's {best:.0f} samples/s (call B),\n3M rows take {3e6 / best / 3600:.1f} h")


CLAIMS += [
    # experiments/twelve_x_slowdown: rungs 3 and 4 in call C (A-B-B-A), the epochs the ladder's rates give
    Claim("**bf16 ties TF32 here: 0.99x** (rung 4's two runs 3,192 against rung 3's 3,238; each same-position pair ties,\n"
          "  1.05x (0.94-1.17) and 1.02x (0.92-1.13)). Across calls it read 0.87", _bf16_ties),
    Claim("ran 1.12x (1.08-1.16) apart as first and last process of this call",
          lambda: f"ran {times(_ladder_c()['rung_3_env_a'], _ladder_c()['rung_3_env_b'])} apart as first and last process of this call"),
    Claim("(launch 0.98-1.10 s of 0.99-1.11 s)",
          lambda: (lambda fs: f"(launch {min(f.get('host_s.launch') for f in fs):.2f}-{max(f.get('host_s.launch') for f in fs):.2f} s of "
                   f"{min(f.get('step_time_s.mean') for f in fs):.2f}-{max(f.get('step_time_s.mean') for f in fs):.2f} s)")(
              list(_ladder_c().values()))),
    Claim("3M rows at the \"before\"'s 5.86 samples/s take 142 h, 300k take 14 h; at the best rung's 131 samples/s (call B),\n"
          "3M rows take 6.4 h", _epochs),
]


LOADERS = "twelve_x_slowdown/results/loaders/reports.jsonl"


def _padding_loss() -> float:
    fixed, longest = Fig(LADDER, "rung_1_padding"), Fig(LADDER, "rung_0_before")
    return 1 - quotient(fixed.rate, longest.rate, fixed.call_id, longest.call_id)


def _b32_spread() -> float:
    rates = [Fig(LOADERS, label).rate for label in ("w2_pin_b32", "w0_nopin_b32", "w2_nopin_b32")]
    return max(rates) / min(rates) - 1


CLAIMS += [
    # twelve_x_slowdown: fixed padding on the fp32 step (rungs 0-1, call A), the three loaders at bs 32 (one call)
    Claim("to 320 loses 6% on a GPU-bound step", lambda: f"to 320 loses {_padding_loss():.0%} on a GPU-bound step"),
    Claim("padding *loses* 6% (a GPU-bound fp32 step", lambda: f"padding *loses* {_padding_loss():.0%} (a GPU-bound fp32 step"),
    Claim("within 1% at\nbs 32", lambda: f"within {math.ceil(_b32_spread() * 100)}% at\nbs 32"),
    Claim("the three loader setups tie within 1%.", lambda: f"the three loader setups tie within {math.ceil(_b32_spread() * 100)}%."),
]


def _collate() -> str:
    """Host time waiting for data per step (host_s.data): the first process without workers, and with 2 workers."""
    basic, workers = Fig(LOADERS, "w0_nopin"), Fig(LOADERS, "w2_pin")
    return (f"collating 8 pre-tokenised rows of 320 ids takes {basic.get('host_s.data') * 1000:.1f} ms of a\n  "
            f"{basic.get('step_time_s.mean') * 1000:.0f} ms step on the training thread, {workers.get('host_s.data') * 1000:.1f} ms with workers")


CLAIMS += [
    Claim("collating 8 pre-tokenised rows of 320 ids takes 2.6 ms of a\n  242 ms step on the training thread, 0.8 ms with workers", _collate),
]


CLAIMS += [
    # experiments/kobart_batch: the low end of bs 16 over bs 8's interval, the gain it can claim
    Claim("this run shows a gain of at least 1.51x (the interval's low end) and can't tell 2.10x from",
          lambda: _kobart_ratio("this run shows a gain of at least {low}x (the interval's low end) and can't tell {x} from", (16, 1), (8, 1))),
    Claim("A gain of at least\n  1.51x survives that, not the 2.10x itself;",
          lambda: _kobart_ratio("A gain of at least\n  {low}x survives that, not the {x} itself;", (16, 1), (8, 1))),
]


def _loaders_drift() -> str:
    """The same loader job as the last and the first process of one call (twelve_x_slowdown/results/loaders):
    the most a host-bound step moved between processes, '1.20x (1.01-1.43)'."""
    return times(Fig(LOADERS, "w0_nopin_again"), Fig(LOADERS, "w0_nopin")).removesuffix(": a tie")


def _rung3_drift() -> str:
    """Ladder C's rung 3 as the first and the last process of its call: '1.12x (1.08-1.16)'."""
    return times(_ladder_c()["rung_3_env_a"], _ladder_c()["rung_3_env_b"]).removesuffix(": a tie")


def _drift_pct() -> str:
    return f"~{(float(_loaders_drift().split('x')[0]) - 1) * 100:.0f}%"


def _comma(ratio: str) -> str:
    """'1.20x (1.01-1.43)' as '1.20x, 1.01-1.43'."""
    return ratio.replace(" (", ", ").removesuffix(")")


CONCAT = "loop_overheads/concat_cost_cpu.jsonl"
SINGLE = "loop_overheads/results/reports.jsonl"  # the first, single-shot H200 sweep (100 steps a job)


@cache
def _concat() -> dict[int, dict]:
    from experiments.figures import _records

    return {r["step"]: r for r in _records(CONCAT) if "step" in r}


def _concat_ms() -> float:
    """pd.concat's mean cost a step over the whole measured run (its total over its steps), in ms."""
    last = _concat()[max(_concat())]
    return last["total_s_so_far"] / last["step"] * 1000


def _single(habit: str) -> Fig:
    return Fig(SINGLE, f"debug={habit},experiment=loop_overheads,logger=none,model=qwen3,trainer.max_steps=100")


def _single_behind() -> str:
    ratios = [quotient(_single(h).rate, _single("none").rate, _single(h).call_id, _single("none").call_id) for h in ("item_sync", "pandas_concat", "cudnn_deterministic")]
    return f"ran first in its call ({min(ratios):.2f}-{max(ratios):.2f}x slower than each of the three, min-max)."


CLAIMS += [
    # experiments/loop_overheads: the host's drift between processes (twelve_x_slowdown's loaders), pd.concat on the CPU,
    # the first single-shot sweep
    Claim("not the up to ~20% (1.20x, 1.01-1.43) a host-bound", lambda: f"not the up to {_drift_pct()} ({_comma(_loaders_drift())}) a host-bound"),
    Claim("50,000 steps cost 25.5 s in all", lambda: (lambda r: f"{r['step']:,} steps cost {r['total_s_so_far']:.1f} s in all")(_concat()[max(_concat())])),
    # pd.concat timed on the CPU against a step of another call: across calls, and said so
    Claim("That is about 0.2% of the H100's 0.24 s bs-8 step\n(across calls:",
          lambda: (lambda f: f"That is about {quotient(_concat_ms() / 1000, f.get('step_time_s.mean'), 'concat_cost_cpu', f.call_id, across_calls=True):.1%}"
                             f" of the H100's {f.get('step_time_s.mean'):.2f} s bs-8 step\n(across calls:")(
              Fig("measurement/results/h100_A_truth.jsonl", "runner_bs8"))),
    Claim("The first 100-step window (5.9 ms mean)", lambda: (lambda r: f"The first {r['step']}-step window ({r['concat_ms_mean']:.1f} ms mean)")(
        _concat()[min(_concat())])),
    Claim("(0.86-1.38) can be neither shown nor ruled out",
          lambda: f"({_row('loop_overheads/pooled', 'item_sync')[-1].split(', ')[1].split(')')[0]}) can be neither shown nor ruled out"),
    Claim("bounds pd.concat at about 0.5 ms a step (0.2% of this step, across calls)",
          lambda: f"bounds pd.concat at about {_concat_ms():.1f} ms a step ("
                  f"{quotient(_concat_ms(), sum(_habit_ms('none')) / len(_habit_ms('none')), 'concat_cost_cpu', {'loop_overheads_call1', 'loop_overheads_call2'}, across_calls=True):.1%}"
                  " of this step, across calls)"),
    Claim("ran first in its call (1.27-1.31x slower than each of the three, min-max).", _single_behind),
    Claim("`debug=all_bad` included: 418 ms a step", lambda: f"`debug=all_bad` included: {_single('all_bad').get('step_time_s.mean') * 1000:.0f} ms a step"),
]


def _collation_share() -> str:
    basic = Fig(LOADERS, "w0_nopin")
    return f"{basic.get('host_s.data') / basic.get('step_time_s.mean'):.0%}"


CLAIMS += [
    # experiments/twelve_x_slowdown: the host's drift (loaders, ladder C), collation's share of the step, call 6's copies
    Claim("(collation is 1% of the step)", lambda: f"(collation is {_collation_share()} of the step)"),
    Claim("The most a loader can save here is ~1%", lambda: f"The most a loader can save here is ~{_collation_share()}"),
    Claim("(0.87), so a third call settled it",
          lambda: f"({times(Fig(LADDER, 'rung_4_bf16'), Fig(LADDER, 'rung_3_env'), across_calls=True).split('x')[0]}), so a third call settled it"),
    Claim("ladder C's rung 3 moved 1.12x (1.08-1.16) the same way", lambda: f"ladder C's rung 3 moved {_rung3_drift()} the same way"),
    Claim("that speed moved by up to ~20% within one", lambda: f"that speed moved by up to {_drift_pct()} within one"),
    Claim("the same such step moved 1.12x (1.08-1.16)\n  and 1.20x (1.01-1.43) between processes of one call",
          lambda: f"the same such step moved {_rung3_drift()}\n  and {_loaders_drift()} between processes of one call"),
    # experiments/speed's overlap table (call 6, H100): the first 'non-blocking copies' row is the graphed 2k packs
    Claim("On an H100 it bought 1.29x (1.24-1.34)",
          lambda: f"On an H100 it bought {_row('speed/overlap_full', 'the same, non-blocking copies (the default)')[4].replace(' (', 'x (', 1)}"),
]


CLAIMS += [
    # experiments/batch_vs_accum_saturation restates the host's drift (twelve_x_slowdown's loaders and ladder C)
    Claim("past the up to 1.20x (1.01-1.43) drift", lambda: f"past the up to {_loaders_drift()} drift"),
    Claim("move up to ~20% between processes on one card (1.20x, 1.01-1.43;\n  1.12x, 1.08-1.16, in another call",
          lambda: f"move up to {_drift_pct()} between processes on one card ({_comma(_loaders_drift())};\n  {_comma(_rung3_drift())}, in another call"),
]


def _clean_over_empty_cache() -> str:
    """experiments/README.md: the pooled rounds' `none` over empty_cache, as the loop_overheads/pooled table gives it."""
    import re

    return "the clean loop is {} faster".format(re.search(r"is (\S+ \([^)]*\))", _row("loop_overheads/pooled", "empty_cache")[-1])[1])


CLAIMS += [Claim("the clean loop is 1.51x (1.31-1.74) faster", _clean_over_empty_cache)]
