"""One run's report: `Report` holds the sections (src/report/sections.py) and the records other stages own,
and prints as the summary that ends every run (and report.md). Reading and writing the files is
src/report/files.py."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from ..checks.results import summary as checks_summary
from .sections import (SECTIONS, UNSET, CpuMemory, Flops, GpuMemory, HostTime, Loss, Saved, Section, Shapes, StepTime,
                       Throughput, Tokens, Verdict, Flags, Breakdown, Compile, _fmt, memory_section)


@dataclass
class Report:
    """report.json, field by field in its order. Records other modules own stay dicts: resolved (env.describe),
    env (env.info), data (data.prepare), params, memory_predicted_gb (memory_model), diagnostics, eval."""
    status: str = "ok"  # ok | oom | diverged | error | config_error | failed_checks
    error: Optional[str] = None
    overrides: list = field(default_factory=list)
    config: dict = field(default_factory=dict)
    config_hash: Optional[str] = UNSET  # the config and code version a rerun must match to skip it (src/report/files.py)
    data_fingerprint: Optional[str] = UNSET  # the data files' content hash (data=files), which a rerun must match too
    resolved: dict = UNSET
    env: dict = UNSET
    data: dict = UNSET
    params: dict = UNSET
    speed_paths: dict = UNSET  # precision.fp8 and peft.fused: layers converted, and those left alone with why
    speedup: dict = UNSET  # trainsweep.speedup on a user's Trainer: each lever on or off with why, and its A/B
    turned_off: dict = UNSET  # trainsweep.attach: its parts that turned themselves off rather than raise, with why
    memory_predicted_gb: Optional[dict] = UNSET
    flops: Flops = UNSET
    compiled_layers: int = UNSET
    timing_s: dict = UNSET
    diagnostics: list = UNSET
    resumed_from: Optional[str] = UNSET
    retried: Optional[str] = UNSET  # the drop-in: auto_find_batch_size's earlier tries in this train() call
    memory_gb: GpuMemory | CpuMemory = UNSET
    eval: Optional[dict] = UNSET
    loss: Loss = UNSET
    distributed: dict = UNSET
    throughput: Throughput = UNSET
    step_time_s: StepTime = UNSET
    breakdown_s: Breakdown = UNSET
    host_s: HostTime = UNSET
    gpu_busy_fraction: Optional[float] = UNSET  # share of the step some kernel ran (profiled after the window)
    gpu_kernels: Optional[dict] = UNSET  # share of the profiled time each kind of kernel ran (gemm, attention, ...)
    attention_kernels: Optional[dict] = UNSET  # share of the profiled time each attention implementation ran
    top_kernels: Optional[list] = UNSET  # the costliest kernels per profiled step: name, kind, ms, calls
    host_ops: Optional[list] = UNSET  # measure.host_ops: the host's costliest ops per profiled step
    tokens: Optional[Tokens] = UNSET
    shapes: Shapes = UNSET
    stopped_when_stable: bool = UNSET
    stopped_early: Optional[dict] = UNSET  # training ended before max_steps, not by trainsweep: {step, max_steps}
    compile: Compile = UNSET
    verdict: Verdict = UNSET
    flags: Flags = UNSET
    # each figure a check could not give, by its report key: "could not check: <reason>" or "not measured: <why>"
    # (a failed NVML read, profiler read or memory prediction is said here, never only absent)
    not_measured: dict = UNSET
    saved: Saved = UNSET  # trainer.save_final: where the trained adapter or model is

    def get(self, name: str):
        """A field, or None where the run never reached it."""
        value = getattr(self, name)
        return None if value is UNSET else value

    @property
    def real_tokens_per_s(self) -> float | None:
        return self.throughput.real_tokens_per_s if self.get("throughput") else None

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not UNSET:
                out[f.name] = value.to_dict() if isinstance(value, Section) else value
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        kwargs = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            value = d[f.name]
            if f.name in SECTIONS:
                value = SECTIONS[f.name].from_dict(value)
            elif f.name == "memory_gb":
                value = memory_section(value)
            kwargs[f.name] = value
        return cls(**kwargs)

    def sections(self) -> dict[str, Section]:
        return {f.name: v for f in fields(self) if isinstance(v := getattr(self, f.name), Section)}

    def flat(self) -> dict:
        """Every measured number as `section.field` (the step times' list left out): a sweep table's columns."""
        return {f"{name}.{k}": v for name, s in self.sections().items() for k, v in s.numbers().items()}

    def wandb_summary(self) -> dict:
        out = {"status": self.status}
        for s in self.sections().values():
            out.update(s.wandb_summary())
        out["perf/gpu_busy_fraction"] = self.get("gpu_busy_fraction")
        for check in self.get("diagnostics") or []:
            out[f"diag/{check['check']}"] = check["status"]
        return {k: v for k, v in out.items() if v is not None}


# -- the printed summary and report.md -------------------------------------------------------------------
def batch_as_run(config: dict, resolved: dict) -> dict:
    """The config's batch section as the run trained it: batch.tokens=auto replaced by the budget and grad_accum
    the probe chose (none without a GPU: batch.size rows)."""
    b = dict(config.get("batch") or {})
    if b.get("tokens") == "auto":
        chosen = resolved.get("budget") or {}
        b.update(tokens=chosen.get("tokens"), grad_accum=chosen.get("grad_accum", b.get("grad_accum")))
    return b


def summary_rows(r: Report) -> list[tuple[str, str]]:
    c, res = r.config, r.get("resolved") or {}
    rows = [("status", r.status + (f": {r.error}" if r.error else ""))]
    peft = c["peft"]["method"]
    if r.get("params"):
        # a model of the script's own names no task: its class stands for both (BiEncoder), said once
        task = "" if c["task"]["name"] == c["model"]["name"] else f" {c['task']['name']}"
        rows.append(("model", f"{c['model']['name']}{task}, peft {peft}"
                     # no rank: a full fine-tune, IA3, prompt tuning
                     + (f" r={c['peft']['r']}" if peft != "none" and c["peft"].get("r") is not None else "")
                     + f", {_fmt(r.params['trainable_fraction'], '.2%')} trainable"))
    env = r.get("env") or {}
    if env:
        rows.append(("device", f"{env['device_name']}" + (f", {env['capacity_gb']:.1f} GB" if env.get("capacity_gb") else "")))
    b, world, chosen = batch_as_run(c, res), res.get("world_size", 1), res.get("budget")
    nodes = env.get("nodes") or 1  # several hosts: the world as nodes x processes each (torchrun --nnodes, SLURM)
    hosts = f", {nodes} nodes x {world // nodes}" if nodes > 1 else ""
    ranks = f" x {world} ranks ({res['distributed']}{hosts})" if world > 1 else ""
    micro = f"{b['tokens']} tokens (padding-free)" if b.get("tokens") else b["size"]
    per_step = f"{b['tokens'] * b['grad_accum'] * world} tokens" if b.get("tokens") else b["size"] * b["grad_accum"] * world
    pairs = (r.get("data") or {}).get("sequences_per_sample", 1)  # TRL's preference rows: chosen and rejected
    per_step = f"{per_step} (rows of {pairs} sequences: samples count rows)" if pairs > 1 else per_step
    # checkpointing trades a forward's recompute for memory: TRL turns it on by default, unseen in a script
    checkpointing = ", gradient checkpointing on" if (c.get("trainer") or {}).get("gradient_checkpointing") else ""
    rows.append(("batch", f"{micro} x grad_accum {b['grad_accum']}{ranks} = {per_step} per step; "
                 f"padding {c['padding']['strategy']}{_note(c['padding'])}, amp {res.get('amp', '-')}, "
                 f"attention {res.get('attention', '-')}{checkpointing}"))
    if chosen and chosen.get("line"):
        rows.append(("budget", chosen["line"]))
    sped = r.get("speedup")
    if sped:
        on = [name for name, lever in sped["levers"].items() if lever["on"]]
        rows.append(("speedup", (sped.get("verified") or {}).get("line") or
                     (f"levers on: {', '.join(on)} (not verified)" if on else "levers on: none")))
    early = r.get("stopped_early")
    if early:
        rows.append(("stopped", f"at step {early['step']:,} of {early['max_steps']:,}: a callback or a signal ended "
                                "training early (early stopping, a SIGTERM's checkpoint); every figure here covers "
                                "the steps that ran"))
    off = r.get("turned_off")
    if off:  # the drop-in's parts that stopped rather than raise into the user's training
        rows.append(("turned off", "; ".join(f"{part} ({why})" for part, why in off.items())))
    paths = r.get("speed_paths")
    if paths:
        rows.append(("speed paths", "; ".join(_path_line(name, p) for name, p in paths.items())))
        if "fp8" in paths:
            from ..model.speed import FP8_NUMERICS

            rows.append(("numerics", FP8_NUMERICS))
    st = r.get("step_time_s")
    if st and st.mean is not None:
        rows += [("step time", st.line()), ("throughput", r.throughput.line()),
                 *([("flops", r.flops.line())] if r.get("flops") is not None else []),
                 ("breakdown", r.breakdown_s.line(st.mean, r.get("gpu_busy_fraction")))]
    kinds = r.get("gpu_kernels")
    if kinds:
        rows.append(("GPU time", ", ".join(f"{k} {v:.0%}" for k, v in kinds.items() if v >= 0.005)
                     + f"; idle {1 - (r.get('gpu_busy_fraction') or 0):.0%}" + _ceiling_share(r)))
    ran = r.get("attention_kernels")
    if ran:
        rows.append(("attention ran", ", ".join(f"{fam} {v:.0%}" for fam, v in ran.items())))
    if r.get("compile") and r.compile.graphs:
        rows.append(("compile", r.compile.line(r.get("compiled_layers"))))
    pred = r.get("memory_predicted_gb")
    pred = pred if pred and "peak_allocated" in pred else None  # one that failed says so under "not measured"
    if r.get("memory_gb"):
        # predicted for the widest micro-batch the data can make: a short run may never draw it
        widest, drawn = (pred or {}).get("widest_tokens"), r.get("shapes") and r.shapes.widest_tokens
        rows.append(("memory", r.memory_gb.line(pred) + (f"; predicted for {widest:,}-token micro-batches, the "
                     f"widest this run drew: {drawn:,}" if widest and drawn and drawn < widest else "")))
    elif pred:
        rows.append(("memory", f"predicted peak {pred['peak_allocated']:.2f} GB allocated"))
    if pred and pred.get("warning"):
        rows.append(("memory plan", pred["warning"]))
    if pred and pred.get("trace_from"):  # the copies were not built this time (src/model/memory_cache.py)
        rows.append(("memory trace", f"reused from an earlier run of these shapes: {pred['trace_from']}"))
    if r.get("flags") and r.flags.reasons:  # before the verdict: a busy host or a wide interval qualifies it
        rows.append(("flags", r.flags.line()))
    if r.get("not_measured"):
        rows.append(("not measured", "; ".join(f"{key}: {why}" for key, why in r.not_measured.items())))
    if r.get("verdict"):
        rows.append(("verdict", r.verdict.line()))
    ev = (r.get("eval") or {}).get("final")
    if ev:
        shown = ", ".join(f"{k} {v:.4g}" for k, v in ev.items() if not k.endswith(("runtime", "per_second", "preparation_time")) and isinstance(v, (int, float)))
        then = f"; {r.eval['then']}" if r.eval.get("then") else ""
        rows.append(("eval", f"{shown} ({r.eval.get('weights') or 'step ' + str(r.eval['step'])}){then}"))
    if r.get("resumed_from"):
        rows.append(("resumed", f"from {r.resumed_from}"))
    if r.get("retried"):
        rows.append(("retried", r.retried))
    if r.get("loss") and (r.loss.initial is not None or r.loss.mean_over_run is not None):
        rows.append(("loss", r.loss.line()))
    if r.get("saved"):
        rows.append(("saved", r.saved.line()))
    checks = r.get("diagnostics")
    if checks:
        rows.append(("diagnostics", checks_summary(checks)))
        rows += [(f"  {ch['status']}", f"{ch['check']}: {ch['value']} (expected {ch['expected']})"
                  + (f". {ch['hint']}" if ch["hint"] else "")) for ch in checks if ch["status"] not in ("pass", "not_run")]
        unchecked: dict[str, list[str]] = {}  # one line a reason: the drop-in's groups often share theirs
        for ch in checks:
            if ch["status"] == "not_run":
                unchecked.setdefault(str(ch["value"]), []).append(ch["check"])
        rows += [("  not_run", f"{', '.join(names)}: {why}") for why, names in unchecked.items()]
    timing = r.get("timing_s") or {}
    # the total starts after the imports (the run's own clock starts then): said, so the parts don't read as its sum
    names = {"total": "total after imports"} if "imports" in timing else {}
    rows.append(("wall time", ", ".join(f"{names.get(k, k)} {v:.1f}s" for k, v in timing.items() if not isinstance(v, dict))))
    if timing.get("build_parts"):  # most of the time to step 1 on a warm compile cache
        rows.append(("build", ", ".join(f"{k} {v:.1f}s" for k, v in timing["build_parts"].items())))
    return rows


def _note(padding: dict) -> str:
    """What the strategy alone doesn't say: the drop-in's images have no padding at all, its audio pads samples."""
    return f" ({padding['note']})" if padding.get("note") else ""


def _ceiling_share(r: Report) -> str:
    """The share of the step the base GEMMs alone would take at this card's measured ceiling."""
    fl, th = r.get("flops"), r.get("throughput")
    if not (fl and th and fl.ceiling_tokens_per_s and th.tokens_per_s):
        return ""
    return f" (the base GEMMs alone at this card's ceiling: {th.tokens_per_s / th.world_size / fl.ceiling_tokens_per_s:.0%})"


def _path_line(name: str, done: dict) -> str:
    n = done.get("converted", done.get("fused", 0))
    left = ", ".join(f"{why}: {count}" for why, count in (done.get("skipped") or {}).items())
    what = {"fp8": f"FP8 base matmuls ({done.get('scaling')})", "fused_lora": "fused LoRA",
            "layers_compiled_once": "nested compile regions marked",
            "adapters_on_device": "LoRA adapters created on the GPU (A's values from its random stream)"}.get(name, name)
    return f"{what} in {n} layers" + (f" (left as they were: {left})" if left else "")


def format_summary(r: Report) -> str:
    rows = summary_rows(r)
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)
