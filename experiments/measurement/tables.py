"""The tables of experiments/measurement/README.md: the runner against a bare loop, TRL's SFT script plain and attached."""
from __future__ import annotations

from experiments.figures import HERE, _records, markdown, quotient, row_call


def truth() -> str:
    """Call A: the runner against benchmarks/bare_loop.py on the same batches (one call, one machine): step time,
    real tok/s, and the runner's speed over the bare loop's cold and warm passes."""
    rows = _records("measurement/results/h100_A_truth.jsonl")
    runner = {r["label"]: r for r in rows if "label" in r}
    bare = dict(zip((8, 32), (r for r in rows if r.get("name") == "bare_loop")))  # bs 8's ran first, as gpu.sh runs them
    out = []
    for what, label, size in (("8 (before the fixes below)", "before_bs8", 8), ("8", "runner_bs8", 8), ("32", "runner_bs32", 32)):
        r, b = runner[label], bare[size]
        rate, calls = r["throughput"]["real_tokens_per_s"], (row_call(r), row_call(b))
        vs = [quotient(rate, b[f"real_tokens_per_s_{p}"], *calls) for p in ("cold", "warm")]
        if all(v < 1 for v in vs) and size == 32:  # a few percent: as a share
            said = f"{1 - vs[0]:.1%} / {1 - vs[1]:.1%} slower"
        elif all(v < 1 for v in vs):
            said = f"{1 / vs[0]:.2f}x / {1 / vs[1]:.2f}x slower"
        else:
            said = f"{vs[0]:.2f}x / {vs[1]:.2f}x faster"
        out.append([what, f"{r['step_time_s']['mean']:.4f}", f"{b['step_s_cold']:.4f} / {b['step_s_warm']:.4f}", f"{rate:,.0f}",
                    f"{b['real_tokens_per_s_cold']:,.0f} / {b['real_tokens_per_s_warm']:,.0f}", said])
    return markdown(["micro-batch", "runner s/step", "bare loop s/step, cold / warm", "runner real tok/s",
                     "bare loop real tok/s, cold / warm", "runner vs bare"], out)


def verdict() -> str:
    """The verdict on constructed cases: call B's three, and call A's two runner jobs (bs 8 and 32)."""
    a, b = "measurement/results/h100_A_truth.jsonl", "measurement/results/h100_B_verdict.jsonl"
    jobs = {r["label"]: r for path in (a, b) for r in _records(path) if "label" in r}
    out = []
    for case, config, label in (("tiny batch", "bs 1", "host_bs1"),
                                ("slow collator", "bs 8, `debug=slow_data` (200 ms sleep per batch), `dataloader=basic`", "data_slow_bs8"),
                                ("seeds' batch", "bs 8", "runner_bs8"), ("large batch", "bs 32", "runner_bs32"),
                                ("memory cap near the peak", "bs 16, `gpu.memory_cap_gb=40`", "memory_cap_bs16")):
        r = jobs[label]
        m, step, v = r["memory_gb"], r["step_time_s"]["mean"], r["verdict"]
        retries = next((int(x.split()[0]) for x in v["reasons"] if "allocator retries while timed" in x), 0)
        said = v["bottleneck"] + ((" (saturated)" if v["bottleneck"] == "memory"
                                   else f", memory-saturated ({m['peak_reserved'] / m['capacity']:.0%} reserved)") if v["saturated"] else "")
        out.append([case, config, f"{step:.4f}", f"{r['throughput']['real_tokens_per_s']:,.0f}", f"{r['flops']['mfu']:.1%}",
                    f"{r['breakdown_s']['data'] / step:.0%}", f"{r['gpu_busy_fraction']:.0%}",
                    f"{m['peak_allocated']:.1f} / {m['peak_reserved']:.1f} / {m['capacity']:.1f}", str(retries), said])
    return markdown(["case", "config", "step s", "real tok/s", "MFU", "data wait", "GPU busy",
                     "peak alloc / reserved / capacity GB", "retries in window", "verdict"], out)


def internals() -> str:
    """Call C: the host milliseconds of the Trainer's per-step work on the whole model (benchmarks/overhead.py
    internals), and the runner's garbage collection per step (host_s.gc)."""
    rows = _records("measurement/results/h100_C_overhead.jsonl")
    ms = next(r for r in rows if r.get("name") == "trainer_internals")
    gc = next(r for r in rows if r.get("label") == "runner_bs8_gc")["host_s"]["gc"] * 1000
    out = [["`Trainer.floating_point_ops` -> `model.num_parameters(exclude_embeddings=True)`, every micro-batch",
            f"{ms['num_parameters_excl_embeddings (removed) ms']:.2f}", "removed: counted once (`src/train/trainer.py`)"],
           ["`clip_grad_norm_` over every parameter", f"{ms['clip_grad_norm_over_all_parameters (removed) ms']:.2f}",
            f"replaced by clipping over the trainable ones: {ms['clip_grad_norm_over_trainable (kept) ms']:.2f}"],
           ["`model.train()` in every `training_step`", f"{ms['model.train (remains) ms']:.2f}", "remains: the Trainer's loop"],
           ["`model.zero_grad()` over every parameter", f"{ms['model.zero_grad (remains) ms']:.2f}", "remains: the Trainer's loop"],
           ["Python garbage collection (`host_s.gc`)", f"{gc:.2f}", "remains, negligible"]]
    return markdown(["per optimizer step", "host ms", ""], out)


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


TABLES = {"measurement/truth": (HERE / "measurement/README.md", truth),
          "measurement/verdict": (HERE / "measurement/README.md", verdict),
          "measurement/internals": (HERE / "measurement/README.md", internals),
          "measurement/dropin_sft": (HERE / "measurement/README.md", dropin_sft)}
