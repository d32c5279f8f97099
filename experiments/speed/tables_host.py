"""The tables of experiments/speed/README.md on the host's share of a step: CUDA graphs, copies that don't wait,
the host's top ops, and the fused LoRA linear over QLoRA."""
from __future__ import annotations

from experiments.figures import HERE, Fig, markdown, ms, pct, rate, ratio

S = "speed/results/"


def speed_graphs() -> str:
    """Issue 33 G4 on 4 layers: what cuts the host's launch time at 2k tokens a step (one call, no anchor)."""
    path = S + "h100_graphs_4layer_call.jsonl"
    base = Fig(path, "g2k_regional")
    runs = [("regional compile (each layer)", "", "g2k_regional"),
            ("whole-model compile", "`trainer.compile_scope=model`", "g2k_model"),
            ("whole-model CUDA graphs", "`+ trainer.compile_mode=reduce-overhead`", "g2k_model_graphs"),
            ("regional + fused LoRA", "`peft.fused=true`", "g2k_regional_fused"),
            ("whole-model CUDA graphs + fused LoRA", "`+ peft.fused=true`", "g2k_model_graphs_fused"),
            ("regional, inductor's C++ wrapper", "`TORCHINDUCTOR_CPP_WRAPPER=1`", "g2k_regional_cpp_wrapper")]
    rows = []
    for what, overrides, label in runs:
        f = Fig(path, label)
        if f.get("status") != "ok":
            rows.append([what, overrides, f"failed: {f.get('error').splitlines()[0]}", "", "", "", ""])
            continue
        rows.append([what, overrides, rate(f, bold=label == "g2k_model_graphs_fused"), ratio(f, base) if label != "g2k_regional" else "1.00",
                     pct(f.get("flops.mfu")), f"{f.get('gpu_busy_fraction'):.0%}", f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x regional", "MFU", "GPU busy", "to first step"], rows)


def speed_graphs_full() -> str:
    """Issue 33 G4 at full depth: the plain-Trainer bs 8 anchor and the 4-layer call's winner, one call."""
    path = S + "h100_graphs_full_call.jsonl"
    anchor, base = Fig(S + "h100_graphs_full_call_anchors.jsonl", "bf16_sdpa_b8"), Fig(path, "f2k_regional")
    rows = [["plain Trainer bf16 sdpa bs 8", "", rate(anchor), "1.00", "", "", "", "", "", ""]]
    for what, overrides, label in [("packed 2k, regional compile", "`padding=packed batch.tokens=2048 trainer.torch_compile=true`", "f2k_regional"),
                                   ("+ whole-model CUDA graphs + fused LoRA", "`trainer.compile_scope=model trainer.compile_mode=reduce-overhead peft.fused=true`", "f2k_model_graphs_fused")]:
        f = Fig(path, label)
        ceiling = f.get("flops.ceiling_tokens_per_s")
        rows.append([what, overrides, rate(f, bold=label != "f2k_regional"), ratio(f, anchor), ratio(f, base) if label != "f2k_regional" else "",
                     pct(f.get("flops.mfu")), f"{f.get('flops.of_ceiling'):.0%} of {ceiling / 1000:.1f}k", f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('compile.to_first_step_s'):.0f} s",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x plain bs 8", "x regional", "MFU", "% of ceiling", "GPU busy",
                     "to first step", "peak / predicted GB"], rows)

def speed_overlap_full() -> str:
    """Issue 33 G4: batch copies that don't wait for the GPU, at full depth; each pair compared inside its own call."""
    calls = [(S + "h100_overlap_full_call.jsonl", [
                 ("2k packs, whole-model CUDA graphs + fused LoRA, copies wait", "`padding=packed batch.tokens=2048 trainer.torch_compile=true "
                  "trainer.compile_scope=model trainer.compile_mode=reduce-overhead peft.fused=true dataloader.non_blocking=false`", "f2k_graphs_fused_wait"),
                 ("the same, non-blocking copies (the default)", "`dataloader.non_blocking=true`", "f2k_graphs_fused")]),
             (S + "h100_overlap_fp8_call.jsonl", [
                 ("8k packs, FP8 + fused LoRA (`experiment=fastest`), copies wait", "`experiment=fastest dataloader.non_blocking=false`", "f8k_fastest_wait"),
                 ("the same, non-blocking copies (the default)", "`experiment=fastest`", "f8k_fastest")]),
             (S + "h100_overlap_bf16_call.jsonl", [
                 ("8k packs, bf16, regional compile, copies wait", "`padding=packed_8k trainer.torch_compile=true dataloader.non_blocking=false`", "f8k_bf16_wait"),
                 ("the same, non-blocking copies (the default)", "`padding=packed_8k trainer.torch_compile=true`", "f8k_bf16")])]
    anchor = Fig(S + "h100_overlap_full_call_anchors.jsonl", "bf16_sdpa_b8")
    rows = [["plain Trainer bf16 sdpa bs 8 (call 6a)", "", rate(anchor), "", "", "", "", "", "", ""]]
    for path, runs in calls:
        wait = Fig(path, runs[0][2])
        for what, overrides, label in runs:
            f = Fig(path, label)
            first = label == wait.label
            versus = "" if first else ratio(f, wait)
            plain = ratio(f, anchor) if path == calls[0][0] else ""
            rows.append([what, overrides, rate(f, bold=not first), plain, versus, pct(f.get("flops.mfu")),
                         f"{f.get('gpu_busy_fraction'):.0%}", ms(f.get("host_s.data")), ms(f.get("host_s.launch")),
                         f"{f.get('compile.to_first_step_s'):.0f} s"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x plain bs 8", "x copies that wait", "MFU", "GPU busy",
                     "host waits for data, ms", "host in the step, ms", "to first step"], rows)


def speed_overlap_4layer() -> str:
    """The same question on 4 layers of real width at 2k tokens a step, one call, in the order the runs ran."""
    path = S + "h100_overlap_4layer_call.jsonl"
    base = Fig(path, "o2k_regional_wait")
    graphs = Fig(path, "o2k_graphs_wait")
    runs = [("regional compile, copies wait", "o2k_regional_wait", None), ("regional compile, non-blocking", "o2k_regional", base),
            ("whole-model CUDA graphs + fused, copies wait", "o2k_graphs_wait", None),
            ("whole-model CUDA graphs + fused, non-blocking", "o2k_graphs", graphs),
            ("whole-model CUDA graphs + fused, copies wait, again", "o2k_graphs_wait_again", graphs),
            ("whole-model CUDA graphs + fused, non-blocking, again", "o2k_graphs_again", graphs)]
    rows = []
    for what, label, against in runs:
        f = Fig(path, label)
        rows.append([what, rate(f), ratio(f, against) if against else "", f"{f.get('gpu_busy_fraction'):.0%}",
                     ms(f.get("host_s.data")), ms(f.get("host_s.launch")), ms(f.get("step_time_s.mean"))])
    return markdown(["run", "real tok/s (95%)", "x the first run of its kind", "GPU busy", "host waits for data, ms",
                     "host in the step, ms", "step, ms"], rows)


def speed_host_ops() -> str:
    """measure.host_ops on 4 layers at 2k tokens: the host's costliest ops a step, whole-model CUDA graphs vs regional."""
    path = S + "h100_hostops_4layer_call.jsonl"
    out = []
    for what, label in [("whole-model CUDA graphs + fused", "h2k_graphs_hostops"), ("regional compile", "h2k_regional_hostops")]:
        ops = Fig(path, label).get("host_ops")[:8]
        out.append([what, "; ".join(f"{o['op'][:40]} x{o['calls']:g} {o['self_ms']:.2f} ms" for o in ops)])
    return markdown(["run", "the host's top ops a step (self time): name x calls, ms"], out)


def speed_qlora_fused() -> str:
    """Issue 33 G5: the fused LoRA linear over a 4-bit base against peft's LoRA on it, full depth, one call."""
    path = S + "h100_qlora_fused_call.jsonl"
    base = Fig(path, "qlora_packed8k_compile")
    rows = []
    for what, overrides, label in [("QLoRA packed 8k compiled, peft's LoRA", "`peft=qlora padding=packed_8k trainer.torch_compile=true`", "qlora_packed8k_compile"),
                                   ("+ fused LoRA linear", "`+ peft.fused=true`", "qlora_packed8k_compile_fused")]:
        f = Fig(path, label)
        rows.append([what, overrides, rate(f), ratio(f, base) if label != "qlora_packed8k_compile" else "", pct(f.get("flops.mfu")),
                     f"{f.get('gpu_busy_fraction'):.0%}",
                     f"{f.get('memory_gb.peak_allocated'):.2f} / {f.get('memory_predicted_gb.peak_allocated'):.2f}"])
    return markdown(["run", "overrides", "real tok/s (95%)", "x peft's LoRA", "MFU", "GPU busy", "peak / predicted GB"], rows)


TABLES = {"speed/graphs": (HERE / "speed/README.md", speed_graphs),
          "speed/graphs_full": (HERE / "speed/README.md", speed_graphs_full),
          "speed/qlora_fused": (HERE / "speed/README.md", speed_qlora_fused),
          "speed/overlap_full": (HERE / "speed/README.md", speed_overlap_full),
          "speed/overlap_4layer": (HERE / "speed/README.md", speed_overlap_4layer),
          "speed/host_ops": (HERE / "speed/README.md", speed_host_ops)}
