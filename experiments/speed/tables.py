"""The tables of experiments/speed/README.md from its calls 1-4 and 7 (levers), the memory model, FP8's accuracy,
attention kernels and the token budget; the CUDA-graphs and copy-overlap tables are in tables_host.py."""
from __future__ import annotations

from experiments.figures import HERE, Fig, _records, gb, markdown, pct, rate, ratio


S = "speed/results/"


def speed_call1() -> str:
    anchor = Fig(S + "h100_table_call1_anchors.jsonl", "bf16_sdpa_b32_group")
    rows = [[f"plain Trainer, {what}", "", rate(f), ratio(f, anchor), "", "", ""]
            for what, f in [('seed "before" (fp32, eager, GC, pad 320, bs 8 x ga 2)', Fig(S + "h100_table_call1_anchors.jsonl", "seed_before")),
                            ("bf16 sdpa bs 8", Fig(S + "h100_table_call1_anchors.jsonl", "bf16_sdpa_b8")),
                            ("bf16 sdpa bs 32 grouped", anchor)]]
    runs = [("fixed 320, bs 32", "`batch=32 padding=max_length`", "fixed_bs32"),
            ("buckets, bs 32", "`batch=32 padding=buckets`", "buckets_bs32"),
            ("packed 8k", "`padding=packed_8k`", "packed8k"),
            ("fixed 320, bs 32, compiled", "`+ trainer.torch_compile=true`", "fixed_bs32_compile"),
            ("packed 8k, compiled", "`padding=packed_8k trainer.torch_compile=true`", "packed8k_compile"),
            ("packed 12k, compiled", "`padding=packed batch.tokens=12288 trainer.torch_compile=true`", "packed12k_compile"),
            ("packed 8k, compiled, second job (warm cache)", "same as packed 8k compiled", "packed8k_compile_again")]
    for what, overrides, label in runs:
        f = Fig(S + "h100_table_call1.jsonl", label)
        rows.append([what, overrides, rate(f), ratio(f, anchor), pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x best plain", "MFU", "GPU busy", "to first step"], rows)


def speed_call2() -> str:
    anchor = Fig(S + "h100_table_call2_anchors.jsonl", "bf16_sdpa_b8")
    runs = [("ours, `batch=8` defaults (dynamic padding, eager)", "bs8_default", True),
            ("packed 2k tokens (~bs 9), compiled", "packed2k_compile", True),
            ("causal LM, fixed 320 bs 16, compiled", "lm_fixed_bs16_compile", False),
            ("causal LM, packed 5k (= 16 x 320), compiled", "lm_packed5k_compile", False),
            ("causal LM, packed 8k, Liger (fused linear CE), eager", "lm_packed8k_liger", False),
            ("classification packed 8k, compiled, fp32 adapters", "packed8k_compile_fp32_adapters", False),
            ("classification packed 8k, Liger, eager", "packed8k_liger", False),
            ("classification packed 8k, Liger + compiled", "packed8k_compile_liger", False)]
    rows = [["plain Trainer, bf16 sdpa bs 8", rate(anchor), "1.00", "", "", ""]]
    for what, label, vs_anchor in runs:
        f = Fig(S + "h100_table_call2.jsonl", label)
        rows.append([what, rate(f), ratio(f, anchor) if vs_anchor else "", pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "real tok/s (95%)", "x plain bs 8", "MFU", "GPU busy", "to first step"], rows)


def speed_call4_kernels() -> str:
    """Where the GPU's time went in the profiled steps after each window: kernel kinds (report.json's gpu_kernels)."""
    share = lambda x: f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"  # noqa: E731
    rows = []
    for name, label in [("bf16", "packed8k_compile"), ("fused", "packed8k_compile_fused"), ("FP8", "packed8k_compile_fp8"),
                        ("FP8 + fused", "packed8k_compile_fp8_fused")]:
        f = Fig(S + "h100_fp8_fused_call.jsonl", label)
        k = f.get("gpu_kernels")
        rows.append([name] + [share(k[kind]) for kind in ("gemm", "elementwise", "attention", "copy", "optimizer")]
                    + [share(1 - f.get("gpu_busy_fraction"))])
    return markdown(["run", "GEMMs", "norms, activations, other elementwise", "attention", "copies", "optimizer", "idle"], rows)


def speed_call4() -> str:
    path = S + "h100_fp8_fused_call.jsonl"
    anchor, bf16 = Fig(S + "h100_fp8_fused_call_anchors.jsonl", "bf16_sdpa_b32_group"), Fig(path, "packed8k_compile")
    rows = [["plain Trainer bf16 sdpa bs 32 grouped", "", rate(anchor), "1.00", "", "", "", "", ""]]
    runs = [("packed 8k compiled (bf16)", "", "packed8k_compile"),
            ("+ fused LoRA", "`peft.fused=true`", "packed8k_compile_fused"),
            ("+ FP8 base", "`precision=fp8`", "packed8k_compile_fp8"),
            ("+ FP8 base + fused LoRA", "`experiment=fastest`", "packed8k_compile_fp8_fused"),
            ("packed 8k compiled again (warm cache)", "", "packed8k_compile_again")]
    for what, overrides, label in runs:
        f = Fig(path, label)
        ceiling = f.get("flops.ceiling_tokens_per_s")
        rows.append([what, overrides, rate(f, bold=label.endswith("fp8_fused")), ratio(f, anchor),
                     ratio(f, bf16) if label not in ("packed8k_compile", "packed8k_compile_again") else "",
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {ceiling / 1000:.1f}k",
                     f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x best plain", "x bf16", "MFU (bf16-equivalent)",
                     "% of ceiling", "GPU busy", "peak / predicted GB"], rows)


SWEEP = S + "h100_levers_sweep/"


def lever(padding: str, compiled: bool) -> Fig:
    """One job of call 3's `sweep=levers` (its reports and its anchor are one call: figures.LEGACY_CALLS)."""
    return Fig(SWEEP + "reports.jsonl", f"logger=none,model=qwen3,padding={padding},trainer.torch_compile={compiled}")


def speed_call3() -> str:
    anchor, base = Fig(SWEEP + "anchors.jsonl", "bf16_sdpa_b32_group"), lever("max_length", False)
    rows = []
    for compiled in (False, True):
        for padding in ("max_length", "buckets", "packed_8k"):
            f = lever(padding, compiled)
            first = f"{f.get('compile.to_first_step_s'):.0f} s" + (" (cache warm)" if compiled and padding == "buckets" else "")
            rows.append([f"`padding={padding}` {'compiled' if compiled else 'eager'}", rate(f, bold=compiled and padding == "packed_8k"),
                         "1.00" if f == base else ratio(f, base), ratio(f, anchor), pct(f.get("flops.mfu")),
                         f"{gb(f.get('memory_gb.peak_allocated'))} ({gb(f.get('memory_predicted_gb.peak_allocated'))})", first])
    return markdown(["job", "real tok/s (95%)", "x max_length eager", f"x best plain ({anchor.rate:,.0f})", "MFU",
                     "peak GB (predicted)", "to first step"], rows)


LEVERS7 = S + "h100_levers_call7/"
# (job, what it changes in the reference, its overrides); fp8_fused ran in a second call on the same warm machine
LEVER_ROWS = [("packed_8k", "the reference: packed 8k, regional compile, varlen flash, non-blocking copies, bf16", ""),
              ("fixed_320", "padding-free off: 32 rows padded to 320", "`padding=max_length batch=32`"),
              ("fixed_320_cudnn", "fixed_320 with cuDNN attention first", "`padding=max_length batch=32 attention=cudnn`"),
              ("eager", "compile off", "`trainer.torch_compile=false`"),
              ("blocking_copies", "batch copies wait for the GPU", "`dataloader.non_blocking=false`"),
              ("fused", "fused LoRA linear", "`peft.fused=true`"),
              ("fp8", "FP8 base matmuls", "`precision=fp8`"),
              ("fp8_fused", "FP8 + fused (`experiment=fastest`)", "`precision=fp8 peft.fused=true`")]


def lever7(name: str) -> Fig:
    part = "b" if name == "fp8_fused" else "a"
    return Fig(LEVERS7 + f"reports_{part}.jsonl", f"+lever={name},logger=none,model=qwen3")


def speed_call7() -> str:
    """Issue 33 item 6: sweep=levers at full depth, every lever against the reference, the anchor in call 7a."""
    anchor, ref = Fig(LEVERS7 + "anchors.jsonl", "bf16_sdpa_b32_group"), lever7("packed_8k")
    rows = [["plain Trainer bf16 sdpa bs 32 grouped", "", "", rate(anchor), "", "1.00", "", "", "", "", ""]]
    for name, what, overrides in LEVER_ROWS:
        f = lever7(name)
        across = f.call_id != ref.call_id
        ran = ", ".join(f"{fam} {v:.0%}" for fam, v in (f.get("attention_kernels") or {}).items() if v >= 0.005)
        rows.append([f"`+lever={name}`", what, overrides, rate(f, bold=name == "fp8_fused"),
                     "1.00" if f == ref else ratio(f, ref, across_calls=across), ratio(f, anchor, across_calls=across),
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {f.get('flops.ceiling_tokens_per_s') / 1000:.1f}k",
                     f"{f.get('gpu_busy_fraction'):.0%}", ran,
                     f"{f.get('memory_gb.peak_allocated'):.1f} / {f.get('memory_predicted_gb.peak_allocated'):.1f}"])
    return markdown(["job", "what changes", "overrides", "real tok/s (95%)", "x reference", "x best plain", "MFU",
                     "% of ceiling", "GPU busy", "attention ran (share of the step)", "peak / predicted GB"], rows)


def speed_attention() -> str:
    """benchmarks/attention_bench.py on the H100: one layer's attention, fwd+bwd, at Qwen3-4B's heads."""
    rows = []
    for r in _records(S + "h100_attention_bench.jsonl"):
        shape = f"{r['tokens']:,} tokens packed" if r["layout"] == "packed" else f"{r['rows']} x {r['length']} padded"
        if "skipped" in r:
            rows.append([shape, r["kernel"], "", "", r["skipped"]])
        else:
            rows.append([shape, r["kernel"], f"{r['ms']:.3f} ({r['p10']:.3f}-{r['p90']:.3f})", f"{r['rel_diff']:.0e}",
                         f"`{r['ran'].split('<')[0][:60]}`"])
    return markdown(["shape", "kernel", "fwd+bwd ms, median (p10-p90)", "output vs first row", "longest kernel / why not run"], rows)


def span(figs: list, key: str) -> str:
    return f"{min(f.get(key) for f in figs):.1f}-{max(f.get(key) for f in figs):.1f}"


def memory_error(f: Fig) -> float:
    return f.get("memory_predicted_gb.peak_allocated") / f.get("memory_gb.peak_allocated") - 1


def speed_memory() -> str:
    h200, h100 = S + "h200_memory_call.jsonl", S + "h100_memory_call2.jsonl"
    runs = [("classification, fixed 320, eager", Fig(h200, "mem_fixed_bs32")),
            ("classification, packed 8k, compiled", Fig(h200, "mem_packed8k_compile")),
            ("causal LM, fixed 320 bs 16, compiled", Fig(h200, "mem_lm_fixed_bs16_compile")),
            ("causal LM, packed 8k, Liger", Fig(h200, "mem_lm_packed8k_liger")),
            ("classification, fixed 320, full checkpointing", Fig(h200, "mem_gc_all_bs32")),
            ("QLoRA, packed 8k, eager", Fig(h100, "mem_qlora_packed8k")),  # the H200 call's QLoRA prediction predates fix 3
            ("classification, packed 8k, eager", Fig(h100, "mem_packed8k")),
            ("classification, buckets, eager", Fig(h100, "mem_buckets_bs32"))]
    card = lambda f: f.get("env.device_name").split()[1]  # "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    rows = [[what, card(f), f"{f.get('memory_gb.peak_allocated'):.2f}", f"{f.get('memory_predicted_gb.peak_allocated'):.2f}",
             pct(memory_error(f))] for what, f in runs]
    sweep = [lever(p, c) for p in ("max_length", "buckets", "packed_8k") for c in (False, True)]
    errors = [memory_error(f) for f in sweep]
    rows.append(["the six jobs of call 3's padding x compile sweep", card(sweep[0]), span(sweep, "memory_gb.peak_allocated"),
                 span(sweep, "memory_predicted_gb.peak_allocated"), f"{pct(min(errors))} to {pct(max(errors))}"])
    eager = lever7("eager")
    rows.append(["classification, packed 8k, eager (call 7)", card(eager), f"{eager.get('memory_gb.peak_allocated'):.2f}",
                 f"{eager.get('memory_predicted_gb.peak_allocated'):.2f}", pct(memory_error(eager))])
    rest = [lever7(name) for name, _, _ in LEVER_ROWS if name != "eager"]
    errors = [memory_error(f) for f in rest]
    rows.append(["the other seven jobs of `sweep=levers` (call 7: compiled, FP8, fused)", card(rest[0]),
                 span(rest, "memory_gb.peak_allocated"), span(rest, "memory_predicted_gb.peak_allocated"),
                 f"{pct(min(errors))} to {pct(max(errors))}"])
    return markdown(["run (full depth, bs 32 at 320 or 8k-token packs)", "card", "measured peak GB", "predicted GB", "error"], rows)


def fp8_curves(path: str, prefix: str, steps=(100, 200, 300), eval_digits: int = 3) -> str:
    """FP8 against bf16 seeds in one call: the loss curve's points, the final eval, the curves' gaps."""
    acc = {(d, s): Fig(path, f"{prefix}_{d}_seed{s}") for d in ("bf16", "fp8") for s in (0, 1)}

    def gap(a: Fig, b: Fig) -> str:
        (steps_a, la), (steps_b, lb) = zip(*a.get("loss.curve")), zip(*b.get("loss.curve"))
        assert steps_a == steps_b, "curves logged at different steps"
        d = [abs(x - y) for x, y in zip(la, lb)]
        return f"{sum(d) / len(d):.4f} / {max(d):.3f}"

    rows = []
    for (dtype, seed), f in acc.items():
        curve = dict(map(tuple, f.get("loss.curve")))
        vs = ("bf16 seed 0 vs 1: " + gap(acc["bf16", 0], acc["bf16", 1]) if seed else "") if dtype == "bf16" else gap(f, acc["bf16", seed])
        rows.append([f"{'FP8' if dtype == 'fp8' else dtype} seed {seed}", " / ".join(f"{curve[s]:.3f}" for s in steps),
                     f"{f.get('eval.final.loss'):.{eval_digits}f}", pct(f.get("eval.final.accuracy")), vs])
    return markdown(["", "train loss at " + " / ".join(map(str, steps)), "eval loss", "eval accuracy",
                     "curve vs bf16 same seed: mean / max abs gap"], rows)


def speed_fp8_accuracy() -> str:
    """FP8 against bf16 seeds on 4 layers (call 4, an H100)."""
    return fp8_curves(S + "h100_fp8_accuracy_call.jsonl", "acc")


def speed_fp8_full() -> str:
    """Issue 53 G5: the same at full depth on an H200, 280 classes on 4,096 rows (2.8 epochs: memorised)."""
    return fp8_curves(S + "h200_fp8full_call1.jsonl", "full")


def speed_fp8_learn() -> str:
    """Issue 53 G5: full depth, 32 classes on 16k rows (each row seen at most once), an eval set of 1,024 rows."""
    return fp8_curves(S + "h200_fp8learn_call2.jsonl", "learn")


def speed_fp8_cue() -> str:
    """Issue 53 G5: full depth, 32 classes each cued by 8 token ids (data.cue_ids=8), which LoRA on random weights
    learns; 16k rows seen at most once, an eval set of 1,024 rows (call 3). The loss falls fastest over steps 30-70."""
    return fp8_curves(S + "h200_fp8cue_call3.jsonl", "cue", steps=(30, 60, 90, 300), eval_digits=5)


def speed_budget() -> str:
    """Issue 53 item 1: batch.tokens=auto against hand-set budgets, full depth, each call with its plain-Trainer
    anchor; ratios only inside a call. Call 1 ran the first, one-point probe (since replaced); calls 2-3 the two-point one."""
    calls = [("h200_budget_call1", "1", [("FP8 + fused, 8k (`experiment=fastest`)", "fastest", None),
                                         ("the same, auto (one-point probe)", "fastest_auto", "fastest")]),
             ("h200_budget_call2", "2", [("FP8 + fused, 8k (`experiment=fastest`)", "fastest", None),
                                         ("the same, 16k", "fastest16k", "fastest"),
                                         ("the same, `batch.tokens=auto`", "fastest_auto", "fastest"),
                                         ("causal LM, FP8 + fused, 8k", "lm_fastest", None),
                                         ("the same, `batch.tokens=auto`", "lm_fastest_auto", "lm_fastest")]),
             ("h200_budget_call3", "3", [("bf16 reference, 8k (`+lever=packed_8k`)", "ref", None),
                                         ("the same, 16k", "ref16k", "ref"),
                                         ("the same, `batch.tokens=auto`", "ref_auto", "ref"),
                                         ("the same, auto again (warm caches)", "ref_auto_again", "ref")])]
    rows = []
    for call, n, runs in calls:
        anchor = Fig(S + call + "_anchors.jsonl", "bf16_sdpa_b32_group")
        rows.append([n, "plain Trainer bf16 sdpa bs 32 grouped", rate(anchor), "1.00", "", "", "", "", "", ""])
        for what, label, versus in runs:
            f = Fig(S + call + ".jsonl", label)
            chosen = (f.get("resolved.budget") or {}).get("tokens")
            rows.append([n, what, rate(f, bold=chosen is not None), ratio(f, anchor),
                         ratio(f, Fig(S + call + ".jsonl", versus)) if versus else "",
                         pct(f.get("flops.mfu")), f"{f.get('gpu_busy_fraction'):.0%}", f"{chosen:,}" if chosen else "",
                         f"{f.get('compile.to_first_step_s'):.0f} s",
                         f"{f.get('memory_gb.peak_allocated'):.1f} / {f.get('memory_predicted_gb.peak_allocated'):.1f}"])
    return markdown(["call", "run", "real tok/s (95%)", "x plain Trainer", "x 8k of its kind", "MFU", "GPU busy",
                     "auto chose", "to first step", "peak / predicted GB"], rows)


def speed_levers53() -> str:
    """Issue 53's lever in `sweep=levers` (gpu.sh levers53, one H100): the reference and auto_budget as the sweep ran
    them, the best plain-Trainer anchor in the same call."""
    call = S + "h100_levers53_call1/"
    anchor = Fig(call + "anchors.jsonl", "bf16_sdpa_b32_group")
    rows = [["plain Trainer bf16 sdpa bs 32 grouped", rate(anchor), "1.00", "", "", "", ""]]
    ref = Fig(call + "reports.jsonl", "+lever=packed_8k,logger=none,model=qwen3")
    for job in ("packed_8k", "auto_budget"):
        f = Fig(call + "reports.jsonl", f"+lever={job},logger=none,model=qwen3")
        chosen = (f.get("resolved.budget") or {}).get("tokens") or f.get("config.batch.tokens")
        rows.append([f"`+lever={job}`", rate(f), ratio(f, anchor), "" if job == "packed_8k" else ratio(f, ref),
                     pct(f.get("flops.mfu")), f"{chosen:,}", f"{f.get('compile.to_first_step_s'):.1f} s"])
    return markdown(["job", "real tok/s (95%)", "x plain Trainer", "x the reference", "MFU", "tokens a micro-batch",
                     "to first step"], rows)


TABLES = {"speed/call1": (HERE / "speed/README.md", speed_call1),
          "speed/call2": (HERE / "speed/README.md", speed_call2),
          "speed/call3": (HERE / "speed/README.md", speed_call3),
          "speed/call4": (HERE / "speed/README.md", speed_call4),
          "speed/call4_kernels": (HERE / "speed/README.md", speed_call4_kernels),
          "speed/call7": (HERE / "speed/README.md", speed_call7),
          "speed/attention": (HERE / "speed/README.md", speed_attention),
          "speed/budget": (HERE / "speed/README.md", speed_budget),
          "speed/levers53": (HERE / "speed/README.md", speed_levers53),
          "speed/memory": (HERE / "speed/README.md", speed_memory),
          "speed/fp8_accuracy": (HERE / "speed/README.md", speed_fp8_accuracy),
          "speed/fp8_full": (HERE / "speed/README.md", speed_fp8_full),
          "speed/fp8_learn": (HERE / "speed/README.md", speed_fp8_learn),
          "speed/fp8_cue": (HERE / "speed/README.md", speed_fp8_cue)}
