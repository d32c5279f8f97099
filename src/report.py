"""One run's report: report.json, report.md, and the printed summary."""
from __future__ import annotations

import json
import math
from pathlib import Path

DATA_BOUND_SHARE = 0.15  # the device waited this share of the step for batches
HOST_BOUND_BUSY = 0.80  # kernels ran less than this share of the step
RESERVED_SATURATED = 0.92  # reserved memory above this share of capacity: one new shape from a retry


def throughput(tokens: dict | None, steps: int, step_s: float | None) -> dict:
    """Per second = per step / seconds per step. Tokens come from every step of the window, times from the
    steps that were timed (a step with an evaluation inside is not), so a dropped step biases neither."""
    if not tokens or not steps or not step_s:
        return {k: None for k in ("samples_per_s", "tokens_per_s", "real_tokens_per_s", "loss_tokens_per_s", "pad_fraction")}
    rate = lambda key: tokens[key] / steps / step_s  # noqa: E731
    return {"samples_per_s": rate("samples"), "tokens_per_s": rate("all"), "real_tokens_per_s": rate("real"),
            "loss_tokens_per_s": rate("loss"), "pad_fraction": 1 - tokens["real"] / tokens["all"] if tokens["all"] else None}


def verdict(step: dict, breakdown: dict, gpu_busy: float | None, mem: dict, retries_in_window: int, mfu: float | None) -> dict:
    """What limits the step, with the numbers behind it."""
    reasons = []
    capacity = mem.get("capacity")
    reserved_share = mem["peak_reserved"] / capacity if capacity else None
    saturated = bool(retries_in_window) or (reserved_share is not None and reserved_share > RESERVED_SATURATED)
    if retries_in_window:
        reasons.append(f"{retries_in_window} allocator retries while timed: each one frees the cache and "
                       "waits for the GPU; a smaller micro-batch, gradient checkpointing or fixed shapes help")
    if reserved_share is not None:
        reasons.append(f"peak reserved {mem['peak_reserved']:.1f} of {capacity:.1f} GB ({reserved_share:.0%})")
    mean = step.get("mean")
    data_share = breakdown["data"] / mean if mean and breakdown.get("data") is not None else None
    if data_share is not None:
        reasons.append(f"device waited for data {data_share:.0%} of the step")
    if gpu_busy is not None:
        reasons.append(f"GPU busy {gpu_busy:.0%} of the step")
    if mfu is not None:
        reasons.append(f"MFU {mfu:.1%}")
        if mfu > 1:  # a bug in the peak or the FLOP count, never a fast run
            reasons.append("MFU above 100% is impossible: the peak used is below what the matmuls ran at "
                           "(TF32 or another card?) or the FLOP count is too high; set measure.peak_tflops")
    if retries_in_window:
        bottleneck = "memory"
    elif data_share is not None and data_share > DATA_BOUND_SHARE:
        bottleneck = "data"
        reasons.append("more dataloader workers, pinned memory and pre-tokenised data help")
    elif gpu_busy is not None and gpu_busy < HOST_BOUND_BUSY:
        bottleneck = "host"
        reasons.append("the GPU waits for Python to launch kernels: a larger micro-batch, fixed shapes, "
                       "torch.compile or CUDA graphs help")
    else:
        bottleneck = "compute"
        reasons.append("faster kernels (bf16, flash attention, fused ops) or less work (less padding) help")
    return {"bottleneck": bottleneck, "saturated": saturated, "reasons": reasons}


def loss_summary(log_history: list[dict], expected_initial: float | None) -> dict:
    losses = [e["loss"] for e in log_history if "loss" in e]
    return {"initial": losses[0] if losses else None, "final": losses[-1] if losses else None,
            "expected_initial": expected_initial, "curve": [(e["step"], e["loss"]) for e in log_history if "loss" in e]}


def expected_initial_loss(task: str, num_labels: int, vocab: int) -> float:
    """Cross-entropy of a uniform guess: where a well-initialised model starts."""
    return math.log(num_labels if task == "classification" else vocab)


def _fmt(x, spec=",.0f", none="-") -> str:
    return none if x is None else format(x, spec)


def summary_rows(r: dict) -> list[tuple[str, str]]:
    c, env, th, st = r["config"], r.get("env", {}), r.get("throughput", {}), r.get("step_time_s", {})
    rows = [("status", r["status"] + (f": {r['error']}" if r.get("error") else ""))]
    peft = c["peft"]["method"]
    rows.append(("model", f"{c['model']['name']} {c['task']['name']}, peft {peft}"
                 + (f" r={c['peft']['r']}" if peft != "none" else "")
                 + f", {_fmt(r['params']['trainable_fraction'], '.2%')} trainable" if r.get("params") else ""))
    if env:
        rows.append(("device", f"{env['device_name']}" + (f", {env['capacity_gb']:.1f} GB" if env.get("capacity_gb") else "")))
    b, res = c["batch"], r.get("resolved", {})
    world = res.get("world_size", 1)
    ranks = f" x {world} ranks ({res['distributed']})" if world > 1 else ""
    micro = f"{b['tokens']} tokens (padding-free)" if b.get("tokens") else b["size"]
    per_step = f"{b['tokens'] * b['grad_accum'] * world} tokens" if b.get("tokens") else b["size"] * b["grad_accum"] * world
    rows.append(("batch", f"{micro} x grad_accum {b['grad_accum']}{ranks} = {per_step} per step; "
                 f"padding {c['padding']['strategy']}, amp {res.get('amp', '-')}, attention {res.get('attention', '-')}"))
    if st.get("mean") is not None:
        rows.append(("step time", f"{st['mean']:.4f} s (p50 {st['p50']:.4f}, p90 {st['p90']:.4f}, "
                     f"stdev {st['stdev']:.4f}, n={st['n']} after {st['warmup_steps']} warm-up)"))
        rows.append(("throughput", f"{_fmt(th['samples_per_s'], ',.1f')} samples/s | {_fmt(th['real_tokens_per_s'])} real tok/s | "
                     f"{_fmt(th['tokens_per_s'])} all tok/s | pad {_fmt(th['pad_fraction'], '.1%')}"
                     + (f" | {th['world_size']} ranks: {_fmt(th['real_tokens_per_s_per_gpu'])} real tok/s each"
                        if th.get("world_size", 1) > 1 else "")))
        fl = r["flops"]
        rows.append(("flops", f"{fl['per_token'] / 1e9:.3g} GFLOP/token; MFU {_fmt(fl['mfu'], '.1%')} "
                     f"(peak {_fmt(fl['peak_tflops'], '.0f')} TFLOP/s), HFU {_fmt(fl['hfu'], '.1%')}"))
        bd = r["breakdown_s"]
        share = ", ".join(f"{k} {bd[k] / st['mean']:.0%}" for k in ("data", "compute", "optimizer", "other") if bd.get(k) is not None)
        if bd.get("host") is not None:
            share += f"; GPU busy {r['gpu_busy_fraction']:.0%}, idle waiting for the host {bd['host'] / st['mean']:.0%}"
        rows.append(("breakdown", share))
    comp = r.get("compile") or {}
    if comp.get("graphs"):
        rows.append(("compile", f"{comp['graphs']} graphs" + (f" ({r['compiled_layers']} layers, regional)" if r.get("compiled_layers") else "")
                     + f"; first step done {_fmt(comp.get('to_first_step_s'), '.1f')} s after the start; {comp.get('graphs_in_window')} compiled inside the timed window"))
    m = r.get("memory_gb", {})
    pred = r.get("memory_predicted_gb")
    if "peak_allocated" in m:
        rows.append(("memory", f"peak {m['peak_allocated']:.2f} GB allocated, {m['peak_reserved']:.2f} reserved of "
                     f"{m['capacity']:.1f}; {m['alloc_retries']} alloc retries"
                     + (f"; predicted {pred['peak_allocated']:.2f} ({pred['peak_allocated'] / m['peak_allocated'] - 1:+.1%} vs measured)"
                        if pred else "")))
    elif pred:
        rows.append(("memory", f"predicted peak {pred['peak_allocated']:.2f} GB allocated"))
    elif m:
        rows.append(("memory", f"peak RSS {m['peak_rss_gb']:.2f} GB (CPU process)"))
    if r.get("verdict"):
        v = r["verdict"]
        rows.append(("verdict", f"{v['bottleneck']}-bound{', memory-saturated' if v['saturated'] else ''}: " + "; ".join(v["reasons"])))
    ev = (r.get("eval") or {}).get("final")
    if ev:
        shown = ", ".join(f"{k} {v:.4g}" for k, v in ev.items() if not k.endswith(("runtime", "per_second")) and isinstance(v, (int, float)))
        rows.append(("eval", f"{shown} (step {r['eval']['step']})"))
    if r.get("resumed_from"):
        rows.append(("resumed", f"from {r['resumed_from']}"))
    lo = r.get("loss") or {}
    if lo.get("initial") is not None:
        rows.append(("loss", f"{lo['initial']:.3f} -> {lo['final']:.3f} (uniform guess: {_fmt(lo['expected_initial'], '.3f')})"))
    checks = r.get("diagnostics")
    if checks:
        from src.diagnose import summary

        rows.append(("diagnostics", summary(checks)))
        for c in checks:
            if c["status"] != "pass":
                rows.append((f"  {c['status']}", f"{c['check']}: {c['value']} (expected {c['expected']})"
                             + (f". {c['hint']}" if c["hint"] else "")))
    t = r.get("timing_s", {})
    rows.append(("wall time", ", ".join(f"{k} {v:.1f}s" for k, v in t.items())))
    return rows


def format_summary(r: dict) -> str:
    rows = summary_rows(r)
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


FINISHED = ("ok", "oom", "error", "config_error", "failed_checks")


def finished(out_dir: Path) -> dict | None:
    """The report of a run that already finished in this directory (ok or failed), else None."""
    path = Path(out_dir) / "report.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return report if report.get("status") in FINISHED else None


def record_failure(out_dir: Path, overrides: list[str], exc: BaseException, config: dict) -> dict:
    """A report for a job whose process died before writing its own."""
    report = {"status": "error", "error": f"the job's process failed: {type(exc).__name__}: {exc}"[:2000],
              "overrides": overrides, "config": config}
    write(Path(out_dir), report)
    return report


def write(out_dir: Path, report: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, default=str))
    md = ["# trainsweep run", "", f"`{out_dir}`", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v.replace('|', '/')} |" for k, v in summary_rows(report)]
    (out_dir / "report.md").write_text("\n".join(md) + "\n")


def worst_memory(per_rank: list[dict]) -> dict:
    """Rank 0's memory record with every peak and counter replaced by its maximum over the ranks: the
    rank closest to running out decides whether the job fits."""
    out = dict(per_rank[0])
    for key, value in out.items():
        values = [r.get(key) for r in per_rank if isinstance(r.get(key), (int, float))]
        if isinstance(value, (int, float)) and values and key not in ("capacity", "card_capacity", "memory_cap_gb"):
            out[key] = max(values)
    return out


def measured(cfg, rep: dict, meter, trainer, device: str) -> dict:
    """The measured sections of the report, read once after training (under torchrun, on every rank)."""
    from src import distributed
    from src.flops import peak_tflops
    from src.measure import memory

    conf = trainer.model.config
    vocab = getattr(conf, "vocab_size", 2)
    evals = [e for e in trainer.state.log_history if any(k.startswith("eval_") for k in e)]
    mem = memory(device, cfg.gpu.memory_cap_gb)
    m = meter.results() if cfg.measure.enabled else {}
    world = distributed.world_size()
    if world > 1:  # one gather after training: global tokens, every rank's peak
        ranks = distributed.combine(distributed.gather(
            {"tokens": m.get("tokens"), "step_mean": (m.get("step_time_s") or {}).get("mean"), "memory": mem}))
        m["tokens"] = ranks.pop("tokens")
        mem = worst_memory(ranks["memory_per_rank"])
    out = {"memory_gb": mem,
           "eval": {"final": {k[5:]: v for k, v in evals[-1].items() if k.startswith("eval_")}, "step": evals[-1]["step"],
                    "history": evals} if evals else None,
           "loss": loss_summary(trainer.state.log_history,
                                expected_initial_loss(cfg.task.name, cfg.task.num_labels, vocab))}
    if world > 1:
        out["distributed"] = {"world_size": world, "strategy": rep["resolved"].get("distributed"), **ranks}
    if not cfg.measure.enabled:
        return out
    th = throughput(m["tokens"], m["window_steps"], m["step_time_s"]["mean"])
    th["world_size"] = world  # tokens and samples above are summed over every rank: the job's throughput
    th["real_tokens_per_s_per_gpu"] = th["real_tokens_per_s"] / world if th["real_tokens_per_s"] else None
    fl = dict(rep["flops"])
    fl["peak_tflops"] = peak_tflops(rep["env"]["device_name"], rep["resolved"]["amp"], cfg.measure.peak_tflops,
                                    tf32=bool(rep["env"].get("tf32_matmul")))
    rate = th["real_tokens_per_s_per_gpu"]  # MFU is per GPU: each one's share against its own peak
    fl["mfu"] = rate * fl["per_token"] / (fl["peak_tflops"] * 1e12) if fl["peak_tflops"] and rate else None
    fl["hfu"] = rate * fl["per_token_hardware"] / (fl["peak_tflops"] * 1e12) if fl["peak_tflops"] and rate else None
    bd, busy, mean = dict(m["breakdown_s"]), m["gpu_busy_fraction"], m["step_time_s"]["mean"]
    # The GPU's idle time that the data wait doesn't explain: it waited for Python to launch kernels.
    # Overlaps compute/other (it happens inside them), so it is not part of their sum.
    bd["host"] = max(0.0, mean * (1 - busy) - (bd["data"] or 0.0)) if busy is not None and mean else None
    out.update(throughput=th, step_time_s=m["step_time_s"], breakdown_s=bd, host_s=m["host_s"],
               gpu_busy_fraction=m["gpu_busy_fraction"], tokens=m["tokens"], shapes=m["shapes"], flops=fl,
               stopped_when_stable=m["stopped_when_stable"], compile=m["compile"])
    rep["timing_s"].update({k: v for k, v in m["phases_s"].items() if v is not None})
    out["memory_gb"]["alloc_retries_in_window"] = m["alloc_retries_in_window"]
    out["verdict"] = verdict(m["step_time_s"], m["breakdown_s"], m["gpu_busy_fraction"], out["memory_gb"],
                             m["alloc_retries_in_window"], fl["mfu"])
    return out


if __name__ == "__main__":
    # python -m src.report DIR: a run directory's summary, or a sweep directory's ranked table and plots.
    import sys

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if target is None or not target.is_dir():
        print("usage: python -m src.report RUN_OR_SWEEP_DIR", file=sys.stderr)
        sys.exit(2)
    if (target / "report.json").exists():
        print(format_summary(json.loads((target / "report.json").read_text())))
    else:
        from src.summary import write as write_summary

        print(write_summary(target))
