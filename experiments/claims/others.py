"""Claims on the other experiments' files: twelve_x's loaders, scaling, tokenization, batch_vs_accum, measurement."""
from __future__ import annotations

from experiments.claims import ROOT, Claim, _row, n, quote, quoted, times, x_only
from experiments.claims.speed import GRAPHS4, GRAPHS5, REGIONAL4, REGIONAL5
from experiments.figures import Fig, quotient

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


def _bva_wall() -> int:
    import re

    return int(re.search(r"sweep wall time: (\d+) s", (ROOT / "experiments/batch_vs_accum/results/sweep.log").read_text())[1])


def _rung(label: str) -> Fig:
    return Fig("twelve_x_slowdown/results/ladder/reports.jsonl", label)


CLAIMS += [
    # batch_vs_accum's wall time (its sweep.log), twelve_x's ladder ratios as the index states them
    Claim("sweep of the Qwen3-4B shape took 504 s", lambda: f"sweep of the Qwen3-4B shape took {_bva_wall()} s"),
    Claim("**Time to answer: 504 s** for the 12 jobs", lambda: f"**Time to answer: {_bva_wall()} s** for the 12 jobs"),
    Claim("12 jobs in 504 s)", lambda: f"12 jobs in {_bva_wall()} s)"),
    Claim("(fixed padding 0.94x,", lambda: f"(fixed padding {times(_rung('rung_1_padding'), _rung('rung_0_before')).split()[0]},"),
    Claim("reach 27.7k real tok/s, 9.0x bf16 rung 4",
          lambda: f"reach {_rung('rung_8_padding_free').rate / 1000:.1f}k real tok/s, "
                  f"{float(times(_rung('rung_8_padding_free'), _rung('rung_4_bf16')).split('x')[0]):.1f}x bf16 rung 4"),
]


def _bva_said(effective: int) -> tuple[str, str]:
    """The sweep summary's comparison at one effective batch: (ratio, interval), as summary.md states it."""
    import re

    text = (ROOT / "experiments/batch_vs_accum/results/summary.md").read_text()
    m = re.search(rf"for effective batch {effective}: .*?(\d\.\d\dx)[ ,(]+([\d.]+-[\d.]+)", text)
    return m[1], m[2]


CLAIMS += [
    Claim("8 x 1 beats\n  4 x 2 by 1.87x (1.62-2.16) and 16 x 1 beats 8 x 2 by 1.65x (1.53-1.78); at 32 x 1 vs 16 x 2 the GPU is\n"
          "  nearly full and the two tie (1.03x, 0.96-1.10)",
          lambda: "8 x 1 beats\n  4 x 2 by {} ({}) and 16 x 1 beats 8 x 2 by {} ({}); at 32 x 1 vs 16 x 2 the GPU is\n"
                  "  nearly full and the two tie ({}, {})".format(*_bva_said(8), *_bva_said(16), *_bva_said(32))),
    Claim("tied with bs 32 x ga 2 (1.05x, 0.97-1.15)", lambda: f"tied with bs 32 x ga 2 ({quote('batch_vs_accum/results/summary.md', '1.05x, 0.97-1.15')})"),
]


def _mem_errors(path: str, keep=lambda r: True) -> list[float]:
    """Predicted over measured peak, less 1, for each row of a results file that has both (and passes `keep`)."""
    from experiments.figures import _records

    return [r["memory_predicted_gb"]["peak_allocated"] / r["memory_gb"]["peak_allocated"] - 1 for r in _records(path)
            if keep(r) and (r.get("memory_gb") or {}).get("peak_allocated") and (r.get("memory_predicted_gb") or {}).get("peak_allocated")]


def _other_runs() -> tuple[str, str, str, str]:
    """The memory model on other experiments' full-depth runs: the ladder's checkpointed rungs, loop_overheads'
    third round with scaling's LoRA runs, saturation's Llama QLoRA claims, scaling's fp32 full fine-tune."""
    span = lambda e: f"{min(abs(x) for x in e) * 100:.1f}-{max(abs(x) for x in e):.1%}"  # noqa: E731
    ladder = _mem_errors("twelve_x_slowdown/results/ladder/reports.jsonl", lambda r: r["config"]["trainer"]["gradient_checkpointing"])
    high = _mem_errors("loop_overheads/results/round3/reports.jsonl") + _mem_errors(SCALING, lambda r: r["config"]["peft"]["method"] == "lora")
    llama = _mem_errors("batch_vs_accum_saturation/results/claims/reports.jsonl")
    (full,) = _mem_errors(SCALING, lambda r: r["label"] == "one_gpu_full_ft_fp32")
    assert max(ladder) < 0 < min(high) and max(llama) < 0
    return span(ladder), span(high), span(llama), f"{full:+.1%}"


CLAIMS += [
    Claim("Qwen3-4B LoRA 1.3-1.5% low (the 12x ladder's checkpointed rungs) to 1.8-2.3% high\n(loop_overheads, scaling LoRA); "
          "Llama-3.2-3B QLoRA 1.0-3.6% low (batch_vs_accum_saturation's claims); the\nfp32 full fine-tune +19.2%",
          lambda: "Qwen3-4B LoRA {} low (the 12x ladder's checkpointed rungs) to {} high\n(loop_overheads, scaling LoRA); "
                  "Llama-3.2-3B QLoRA {} low (batch_vs_accum_saturation's claims); the\nfp32 full fine-tune {}".format(*_other_runs())),
    Claim("1.3-1.5% low on the 12x ladder's\ncheckpointed rungs and 1.8-2.3% high on loop_overheads' third round and scaling's LoRA "
          "runs (all H200); 1.0-3.6%\nlow for Llama-3.2-3B QLoRA at 211-token rows (H200); +19.2% on scaling's",
          lambda: "{} low on the 12x ladder's\ncheckpointed rungs and {} high on loop_overheads' third round and scaling's LoRA "
                  "runs (all H200); {}\nlow for Llama-3.2-3B QLoRA at 211-token rows (H200); {} on scaling's".format(*_other_runs())),
]


def _dropin_runs() -> list[dict]:
    """measurement's drop-in runs in the order they ran: P in one call, then P A P in the next."""
    from experiments.figures import _records

    return list(_records("measurement/results/h200_dropin.jsonl"))


def _dropin_runtimes() -> str:
    runs = _dropin_runs()
    plain, (attached,) = [r["train_runtime"] for r in runs if r["mode"] == "plain"], [r["train_runtime"] for r in runs if r["mode"] == "attached"]
    second = [r["train_runtime"] for r in runs[1:] if r["mode"] == "plain"]  # the second call's two plain runs
    return (f"The Trainer's own runtime: {plain[0]:.2f}, {plain[1]:.2f} and {plain[2]:.2f} s plain, {attached:.2f} s attached.\n"
            f"  The {attached - max(second):.1f}-{attached - min(second):.1f} s more in the second call ({attached - plain[0]:.1f} s against "
            f"the first call's plain run) is one-off:")


def _dropin_step() -> str:
    """The attached run's step time and its interval, as its report.md printed them (to 4 decimals)."""
    import re

    m = re.search(r"\| step time \| ([\d.]+) s \(95% ([\d.]+)-([\d.]+)",
                  (ROOT / "experiments/measurement/results/h200_dropin_report.md").read_text())
    return "Per step the attached run measured {:.3f} s ({:.3f}-{:.3f})".format(*map(float, m.groups()))


CLAIMS += [
    Claim("The Trainer's own runtime: 7.51, 8.02 and 7.76 s plain, 9.41 s attached.\n  The 1.4-1.7 s more in the second call "
          "(1.9 s against the first call's plain run) is one-off:", _dropin_runtimes),
    Claim("against 0.125-0.134 s for a plain run's\n  whole runtime over 60 steps. The training loss came out 6.1172 both ways (plain runs: 6.1167-6.1172;",
          lambda: (lambda runs: "against {:.3f}-{:.3f} s for a plain run's\n  whole runtime over 60 steps. The training loss came out {:.4f} both ways "
                   "(plain runs: {:.4f}-{:.4f};".format(
                       min(r["train_runtime"] for r in runs if r["mode"] == "plain") / 60, max(r["train_runtime"] for r in runs if r["mode"] == "plain") / 60,
                       next(r["train_loss"] for r in runs if r["mode"] == "attached"),
                       min(r["train_loss"] for r in runs if r["mode"] == "plain"), max(r["train_loss"] for r in runs if r["mode"] == "plain")))(
              _dropin_runs())),
    Claim("Per step the attached run measured 0.121 s (0.084-0.158)", _dropin_step),
]
CLAIMS += [
    # experiments/scaling: the full fine-tune's training state, from its parameter count (fp32 weights, grads, AdamW's two)
    Claim("4.02B x 16 bytes = 64 GB before activations",
          lambda: (lambda p: f"{p / 1e9:.2f}B x 16 bytes = {p * 16 / 1e9:.0f} GB before activations")(FULL_FT.get("params.total"))),
    Claim("(4.02B x 16 bytes of weights", lambda: f"({FULL_FT.get('params.total') / 1e9:.2f}B x 16 bytes of weights"),
]
CLAIMS += [
    Claim("(+0.5% ± 0.8% in a paired A/B)", lambda: f"(+{_ab()['overhead_fraction']:.1%} ± {_ab()['overhead_fraction_stderr']:.1%} in a paired A/B)"),
    Claim("(+0.5% ± 0.8% paired A/B)", lambda: f"(+{_ab()['overhead_fraction']:.1%} ± {_ab()['overhead_fraction_stderr']:.1%} paired A/B)"),
    # a random Qwen3-4B's weights in bf16: its parameter count (scaling's full fine-tune) x 2 bytes
    Claim("(a random Qwen3-4B is 8 GB)", lambda: f"(a random Qwen3-4B is {FULL_FT.get('params.total') * 2 / 1e9:.0f} GB)"),
    Claim("Qwen3-4B would write 8 GB a job", lambda: f"Qwen3-4B would write {FULL_FT.get('params.total') * 2 / 1e9:.0f} GB a job"),
]


def _truth(label: str) -> dict:
    return _measurement("h100_A_truth.jsonl", label)


def _bare(size: int) -> dict:
    from experiments.figures import _records

    return dict(zip((8, 32), (r for r in _records("measurement/results/h100_A_truth.jsonl") if r.get("name") == "bare_loop")))[size]


CLAIMS += [
    # experiments/measurement: call A's bare loop and nvidia-smi, the runner's bs-8 step across three machines
    Claim("passes differ by 4% at bs 8 (the warm one slower)",
          lambda: f"passes differ by {_bare(8)['step_s_warm'] / _bare(8)['step_s_cold'] - 1:.0%} at bs 8 (the warm one "
                  f"{'slower' if _bare(8)['step_s_warm'] > _bare(8)['step_s_cold'] else 'faster'})"),
    Claim("peaked at 78,181 MiB (76.35 GiB)", lambda: (lambda m: f"peaked at {m:,} MiB ({m / 1024:.2f} GiB)")(_truth("nvidia_smi_bs32")["max_used_mib"])),
    Claim("The runner at bs 8 measured 0.2414 s/step in call A, 0.2963 in call C and 0.3158 in the sweep",
          lambda: "The runner at bs 8 measured {:.4f} s/step in call A, {:.4f} in call C and {:.4f} in the sweep".format(
              _truth("runner_bs8")["step_time_s"]["mean"], _measurement("h100_C_overhead.jsonl", "runner_bs8_gc")["step_time_s"]["mean"],
              Fig("batch_vs_accum/results/sweep_reports.jsonl", "batch.grad_accum=1,batch.size=8,model=qwen3").get("step_time_s.mean"))),
]


# experiments/measurement: sections 1-3 and the drop-in runs' reports
def _report_md(name: str) -> str:
    return (ROOT / "experiments/measurement/results" / name).read_text()


def _report_wall(name: str, part: str) -> float:
    import re

    return float(re.search(rf"\| wall time \|.*?\b{part} ([\d.]+)s", _report_md(name))[1])


def _events_vs_wall() -> str:
    """Every runner run's mean CUDA-event step against its wall clock over the window (step_time_s.wall_mean)."""
    from experiments.figures import _records

    runs = [r for f in ("h100_A_truth.jsonl", "h100_C_overhead.jsonl") for r in _records(f"measurement/results/{f}")
            if "wall_mean" in (r.get("step_time_s") or {})]
    worst = max(abs(r["step_time_s"]["mean"] / r["step_time_s"]["wall_mean"] - 1) for r in runs)
    return "to better than 0.01% in every run" if worst < 1e-4 else f"to {worst:.3%} at worst"


def _internals_left() -> str:
    """What the Trainer's loop still walks (trainer_internals' 'remains' rows) against the runner's bs-8 step."""
    walks = [v for k, v in _measurement("h100_C_overhead.jsonl", "trainer_internals").items() if "(remains) ms" in k]
    ms = sum(walks)
    share = quotient(ms / 1000, _truth("runner_bs8")["step_time_s"]["mean"], "h100_C_overhead", "h100_A_truth", across_calls=True)
    return f"(~{ms:.0f} ms, ~{share:.0%} of call A's bs-8 step, across calls)"


def _mid_run_shift() -> str:
    """The bs-8 runner process of call C: its step times' median before and after the shift (at step 24 of the window)."""
    from statistics import median

    v = Fig("measurement/results/h100_C_overhead.jsonl", "runner_bs8_gc").get("step_time_s.values")
    return f"shift from ~{median(v[:24]):.2f} to ~{median(v[24:]):.2f} s mid-run"


def _dropin_steps() -> str:
    """measurement's drop-in runs' steps: samples/s x runtime over the script's batch of 16."""
    steps = {round(r["samples_per_s"] * r["train_runtime"] / 16) for r in _dropin_runs()}
    return f"padding, {'/'.join(map(str, sorted(steps)))} steps) run without (P)"


def _padding_found() -> str:
    import ast
    import re

    p = ast.literal_eval(re.search(r"data\.padding_waste: (\{.*?\})", _report_md("h200_dropin_report.md"))[1])
    return f"the padding-waste check found {p['dynamic']:.0%} padding where packing would leave {p['packed']:.0%}"


def _sft_runs() -> list[dict]:
    from experiments.figures import _records

    return list(_records("measurement/results/h100_dropin_sft.jsonl"))


def _sft_attached_over() -> str:
    runs = _sft_runs()
    warm = [r["train_runtime"] for r in runs if r["mode"] == "plain"][1]  # P A P A: the second plain run is the warm one
    over = [r["train_runtime"] - warm for r in runs if r["mode"] == "attached"]
    return (f"the Trainer's runtime came out {min(over):.1f}-{max(over):.1f} s over the warm plain run: the checks "
            f"({_report_wall('h100_dropin_sft_report.md', 'diagnostics'):.1f} s in the report)")


def _sft_first_loss() -> str:
    import re

    guess = float(re.search(r"uniform guess: ([\d.]+)", _report_md("h100_dropin_sft_report.md"))[1])
    first = {f"{r['loss_initial']:.2f}" for r in _sft_runs() if r["mode"] == "attached"}
    return f"the high first loss ({'/'.join(sorted(first))}\n  against the uniform guess's {guess:.2f})"


CLAIMS += [
    Claim("to better than 0.01% in every run", _events_vs_wall),
    Claim("(~14 ms, ~6% of call A's bs-8 step, across calls)", _internals_left),
    Claim("shift from ~0.23 to ~0.36 s mid-run", _mid_run_shift),
    Claim("a small fraction of a 0.227 s step", lambda: f"a small fraction of a {_ab()['step_s_off']:.3f} s step"),
    Claim("padding, 60 steps) run without (P)", _dropin_steps),
    Claim("the preflight checks at train begin (1.3 s)",
          lambda: f"the preflight checks at train begin ({_report_wall('h200_dropin_report.md', 'diagnostics'):.1f} s)"),
    Claim("the padding-waste check found 20% padding where packing would leave 1%", _padding_found),
    Claim("the Trainer's runtime came out 0.5-1.8 s over the warm plain run: the checks (1.1 s in the report)", _sft_attached_over),
    Claim("the step is host-bound, GPU busy 55%, so",
          lambda: f"the step is host-bound, {quote('measurement/results/h100_dropin_sft_report.md', 'GPU busy 55%')}, so"),
    Claim("the high first loss (12.44\n  against the uniform guess's 11.93)", _sft_first_loss),
]


# experiments/scaling: the FSDP runs, read off their logs (the progress bar and the launcher's timestamps)
def _scaling_log(name: str) -> str:
    return (ROOT / "experiments/scaling/results/h200x2" / name).read_text().replace("\r", "\n")


def _fsdp_bar() -> str:
    """The FSDP full fine-tune's progress bar (the 20-step run after the one-GPU full fine-tune): its end, and its
    pace from step 2 to 19 at the bar's one-second resolution, as samples/s against the single GPU's at bs 4."""
    import re

    log = _scaling_log("scaling.log")
    fsdp = log[log.index("one_gpu_full_ft_fp32: exit"):]
    at = {int(s): int(m) * 60 + int(sec) for s, m, sec in re.findall(r"\b(\d+)/20 \[(\d\d):(\d\d)<", fsdp)}
    end = max(int(m) * 60 + int(sec) for m, sec in re.findall(r"\b20/20 \[(\d\d):(\d\d)<", fsdp))
    step = (at[19] - at[2]) / 17
    one = Fig(SCALING, "one_gpu_full_ft_fp32")
    ratio = (2 * 4 / step) / (one.get("config.batch.size") / one.get("step_time_s.mean"))
    return (f"Its progress bar reached 20 of 20 steps in {end} s: about {step:.2f} s a\n  step from step 2 to 19 with bs 4 on "
            f"each card, against the single GPU's {one.get('step_time_s.mean'):.2f} s at bs 4, so roughly {ratio:.1f}x the")


def _fsdp_stopped() -> str:
    """From torchrun's start to the NCCL store's failure when the call's limit stopped the job."""
    import re
    from datetime import datetime

    log = _scaling_log("scaling.log")
    fsdp = log[log.index("one_gpu_full_ft_fp32: exit"):]
    t = lambda s: datetime.strptime(s[:15], "%H:%M:%S.%f")  # noqa: E731  (to the microsecond)
    start = re.search(r"W\d{4} (\d\d:\d\d:\d\d\.\d+) \d+ torch/distributed/run\.py", fsdp)[1]
    stop = re.search(r"\[rank0\]:\[W\d{4} (\d\d:\d\d:\d\d\.\d+)", fsdp)[1]
    return f"no report before the call's limit\n  stopped it, {(t(stop) - t(start)).total_seconds() / 60:.1f} minutes after torchrun started"


CLAIMS += [
    Claim("DDP 1.85x, FSDP trained but did not finish", lambda: f"DDP {x_only(DDP2, ONE_GPU)}, FSDP trained but did not finish"),
    Claim("Its progress bar reached 20 of 20 steps in 17 s: about 0.35 s a\n  step from step 2 to 19 with bs 4 on each card, against "
          "the single GPU's 0.24 s at bs 4, so roughly 1.3x the", _fsdp_bar),
    Claim("no report before the call's limit\n  stopped it, 5.8 minutes after torchrun started", _fsdp_stopped),
    Claim("A second, short call (12 steps,",
          lambda: "A second, short call ({} steps,".format(
              "/".join(sorted(set(__import__("re").findall(r"\b\d+/(\d+) \[", _scaling_log("fsdp_saved_stacks.log"))))))),
]
CLAIMS += [
    # docs/multi_gpu.md: the FSDP full fine-tune's bar in experiments/scaling's log, to its last step
    Claim("An FSDP full fine-tune trained its 20 steps there",
          lambda: (lambda log: "An FSDP full fine-tune trained its {} steps there".format(
              max(int(s) for s in __import__("re").findall(r"\b(\d+)/20 \[", log[log.index("one_gpu_full_ft_fp32: exit"):]))))(
              _scaling_log("scaling.log"))),
]


# experiments/README.md (the index): its rows' figures, recomputed as the linked pages' claims recompute them
def _index_seed() -> str:
    from experiments.claims.seed import _check, _reports

    c = _check("model.initial_loss")
    step1 = _reports("h200_qwen3_reports.jsonl", "experiment=seed_loss69,model=qwen3")["loss"]["curve"][0][1]
    return (f"A head initialised at std {c['head_weight_std']:.2f} on hidden states of norm ~{round(c['hidden_norm_at_head'], -1):,.0f} "
            f"gives logits of std ~{c['head_weight_std'] * c['hidden_norm_at_head']:.0f}: loss {step1:.1f} at step 1")


def _index_memory() -> str:
    from experiments.claims.speed import _memory_table

    n, total, within, lo, hi, outlier = _memory_table()
    return (f"Memory model within {within} of measured peaks on {n} of the {total} full-depth runs of this experiment "
            f"({lo} to {hi}; call 7's eager packed 8k {outlier})")


def _index_saturation() -> str:
    from experiments.claims.speed import _saturation_qlora

    largest, llama = _saturation_qlora()
    return f"Memory model within {largest} for SOLAR and Polyglot, up to {llama} low for Llama"


def _index_speedup_losses() -> str:
    from experiments.claims.speedup import _said_losses

    pairs = [_said_losses("h100_full_classifiers", "classifier8", "sped"), _said_losses("h100_full_classifiers", "classifier32", "sped"),
             _said_losses("h100_full_sft", "sft", "sped"), _said_losses("h100_graphs_call1", "classifier8", "graphs"),
             _said_losses("h100_graphs_calls2_3", "classifier8", "graphs")]
    return f"losses on the same rows within {max(abs(b / a - 1) for a, b in pairs):.1%}"


def _index_dropin_rows() -> str:
    from experiments.claims.speedup import _dropin_pairs

    return f"rows a step within {max(abs(s['rows_per_step'] / 8 - 1) for _, s in _dropin_pairs()):.1%}"


def _index_cached() -> str:
    cached = [r["cached_s"] for r in _tokenization().values()]
    return f"a cached second run takes {min(cached):.2f}-{max(cached):.2f} s"


def _index_concat() -> str:
    from experiments.claims.loops import _concat_ms

    return f"pd.concat about {_concat_ms():.1f} ms a step on a CPU"


CLAIMS += [
    Claim("A head initialised at std 0.02 on hidden states of norm ~1,150 gives logits of std ~23: loss 70.4 at step 1", _index_seed),
    Claim("Memory model within 0.5% of measured peaks on 21 of the 22 full-depth runs of this experiment (-0.5% to +0.3%; "
          "call 7's eager packed 8k +2.9%)", _index_memory),
    Claim("Memory model within 1.5% for SOLAR and Polyglot, up to 3.6% low for Llama", _index_saturation),
    Claim("losses on the same rows within 0.4%", _index_speedup_losses),
    Claim("rows a step within 0.6%", _index_dropin_rows),
    Claim("a cached second run takes 0.02-0.04 s", _index_cached),
    Claim("pd.concat about 0.5 ms a step on a CPU", _index_concat),
]


def _bva_builds() -> list[float]:
    from experiments.figures import _records

    return [r["timing_s"]["build"] for r in _records("batch_vs_accum/results/sweep_reports.jsonl")]


CLAIMS += [
    # experiments/batch_vs_accum: every job's model build (timing_s.build), out-of-memory ones included
    Claim("builds on\nthe GPU in 1.0-1.6 s across the 12 jobs",
          lambda: (lambda b: f"builds on\nthe GPU in {min(b):.1f}-{max(b):.1f} s across the {len(b)} jobs")(_bva_builds())),
]


def _dropin_sft_spread() -> str:
    """experiments/measurement: the attached runs' real tok/s intervals (measurement/dropin_sft), each end's distance
    from its rate, min-max over both runs' four ends."""
    import re

    d = []
    for run in ("A1", "A2"):
        rate, low, high = (float(x.replace(",", "")) for x in re.findall(r"[\d,]+", _row("measurement/dropin_sft", run)[3]))
        d += [1 - low / rate, high / rate - 1]
    return f"intervals of +-{min(d) * 100:.0f}-{max(d):.0%}"


CLAIMS += [Claim("intervals of +-12-17%", _dropin_sft_spread)]

CLAIMS += [
    # experiments/twelve_x_slowdown: the same loader job as the call's first and last process
    Claim("ran 1.20x (1.01-1.43) faster as the last process of the call than as the first",
          lambda: f"ran {times(LAST, FIRST).removesuffix(': a tie')} faster as the last process of the call than as the first"),
]
