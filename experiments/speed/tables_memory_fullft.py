"""Issue 53 G4 on full fine-tunes (`peft=none`, Qwen3-4B width, no anchor: memory only): the memory model's
prediction against the run's peak.

- speed/memory_fullft: the calls before the copies' fix (two H200 calls, experiments/scaling's full-depth run, a
  held-out H100 call), with the rule of their day on their stored parts (earlier_fullft_rule);
- speed/memory_fullft_now: today's rule (memory_model.peak_parts, the copies subtracting only the gradients made by
  the moment they read) as each run reported it: `gpu.sh fullft_probe` (dynamic padding, new shapes and every
  earlier one, commit 76aab2c) and `gpu.sh fullft_fixed` (one width, padding=max_length, the rule unchanged). The
  widest micro-batch each dynamic run drew is replayed on the CPU (drawn_widths.py); "at the drawn width" scales
  the activations to it (an estimate: the copies ran at the widest), the rest of the prediction unchanged."""
from __future__ import annotations

from experiments.figures import HERE, Fig, _records, gb, markdown

S = "speed/results/"
PROBE, DRAWN, FIXED = S + "h100_fullft_probe_call1.jsonl", S + "cpu_fullft_probe_drawn.jsonl", \
    S + "h100_fullft_fixed_call1.jsonl"
# after the probe's fix (commit 9d9cbaf): the controls, fullft_fixed's lowest row and LoRA row, graphs at 2k full depth
G4FIX = S + "h100_g4fix_call1.jsonl"
# fullft_fixed's rows call 1 did not reach (one H100 machine: call 1 FROM a list, call 2 the rest), beside the
# LoRA, QLoRA and FP8 controls (gpu.sh memory_controls)
REST = (S + "h100_g4rest_call1.jsonl", S + "h100_g4rest_call2.jsonl")


def earlier_fullft_rule(parts: dict, grad_accum: int, largest: float) -> float:
    """The full fine-tune rule before the copies' fix (GB), on a run's stored parts: at grad_accum 1 the activations
    with the largest gradient, or every gradient where those are larger; at > 1 all three summed. Its activations were
    copies' figures less every gradient the copies had made, so today's rule (memory_model.peak_parts) does not apply
    to those rows' stored parts; this keeps what the earlier calls showed."""
    acts, grads = parts["activations"], parts["grads"]
    at_peak = grads + acts + largest if grad_accum > 1 else max(acts + largest, grads)
    return parts["weights"] + parts["optimizer"] + parts["workspace"] + at_peak


def speed_memory_fullft() -> str:
    """Issue 53 G4: the memory model on full fine-tunes (Qwen3-4B width, two H200 calls and a held-out H100 call, no
    anchor: memory only): the prediction as each run made it, the earlier rule (earlier_fullft_rule) on the parts it
    stored, the peak."""
    runs = [(S + "h200_fullft_memory_call1.jsonl", label) for label in ("fp32_ga1", "fp32_ga2", "bf16_ga1", "bf16_ga2")] + \
           [(S + "h200_fullft_check_call3.jsonl", label) for label in
            ("ft4_fp32_bs4_ga1", "ft4_fp32_bs4_ga2", "ft12_bf16_ga1", "ft12_bf16_ga4", "ft12_fp32_ga1", "ft12_fp32_ga3",
             "ft16_bf16_bs16_ga1", "ft16_bf16_bs16_ga2")] + \
           [("scaling/results/h200x2/scaling_reports.jsonl", "one_gpu_full_ft_fp32")] + \
           [(S + "h100_fullft_heldout_call1.jsonl", label) for label in
            ("ft6_fp32_ga1", "ft6_bf16_bs4_ga3", "ft10_bf16_bs32_ga1", "ft10_fp32_bs2_ga1", "ft20_bf16_ga2",
             "ft20_bf16_bs16_ga1", "ft24_fp32_bs4_ga1", "ft24_fp32_bs4_ga2")]
    rows = []
    for path, label in runs:
        f = Fig(path, label)
        parts, measured, cfg = f.get("memory_predicted_gb.parts"), f.get("memory_gb.peak_allocated"), f.get("config")
        arch = cfg["model"]["arch"]
        largest = arch["vocab_size"] * arch["hidden_size"] * (4 if cfg["precision"]["weights_dtype"] == "float32" else 2)
        today = earlier_fullft_rule(parts, cfg["batch"]["grad_accum"], largest / 2**30)
        then = f.get("memory_predicted_gb.peak_allocated")
        call = "held out (H100)" if "heldout" in path else path.rsplit("_call", 1)[1].split(".")[0] if "_call" in path \
            else "scaling"
        rows.append([call, str(arch["num_hidden_layers"]),
                     f"`{' '.join(o.replace(chr(39), '') for o in f.get('overrides') if o.startswith(('precision', 'batch')))}`",
                     *(gb(parts[k]) for k in ("weights", "grads", "optimizer", "activations")),
                     f"{measured:.2f}", f"{then / measured - 1:+.1%}", f"{today:.2f}", f"{today / measured - 1:+.1%}"])
    return markdown(["call", "layers", "run (`peft=none`)", "weights", "grads", "AdamW", "activations", "measured peak",
                     "as predicted then", "the earlier rule", "error"], rows)


def _run(f: Fig) -> str:
    keep = ("precision", "batch", "task")
    return f"`{' '.join(o.replace(chr(39), '') for o in f.get('overrides') if o.startswith(keep))}`"


def rule_on(record: dict, tokens: int | None = None, forward_end: bool = True) -> float:
    """Today's rule (memory_model.peak_parts) on a run's stored figures, in GB, its activations scaled from the widest
    micro-batch to `tokens` (default: the widest): what the rule says for the batch the run drew, the copies'
    gradient figures unchanged. `forward_end=False`: the rule before grad_accum > 1 weighed the forward's end (the
    copies' kept line), which gives the prediction every run before call g4fix made."""
    from src.model.memory_model import copy_gradients, peak_parts

    p = record["memory_predicted_gb"]
    one, two = ({k: v * 2**30 for k, v in p["copies_gb"][n].items()} for n in ("1", "2"))
    fixed = {k: p["parts"][k] * 2**30 for k in ("weights", "grads", "optimizer")}
    scale = (tokens or p["widest_tokens"]) / p["widest_tokens"]
    grads = copy_gradients(one, two, p["largest_grad_gb"] * 2**30, record["config"]["model"]["arch"]["num_hidden_layers"])
    grads["kept"] = grads["kept"] * scale if forward_end else 0
    return sum(peak_parts(fixed, p["parts"]["activations"] * scale * 2**30, p["parts"]["workspace"] * 2**30,
                          record["config"]["batch"]["grad_accum"], **grads).values())


def at_width(f: Fig, tokens: int, forward_end: bool = False) -> float:
    """The rule the run was predicted by (default; its table's), or today's, at another width."""
    return rule_on(f.record, tokens, forward_end)


def now_rows() -> list[dict]:
    """Every row of today's calls: label, call, figure, the widest drawn and predicted for, measured, predicted."""
    drawn = {r["label"]: r["widest_drawn"] for r in _records(DRAWN)}
    out = []
    for path, call in ((PROBE, "fullft_probe (dynamic)"), (FIXED, "fullft_fixed (one width)"),
                       *((p, f"fullft_fixed (one width), g4rest call {i}") for i, p in enumerate(REST, 1))):
        if not (HERE / path).exists():
            continue
        for r in _records(path):
            if r["config"]["peft"]["method"] != "none":  # fullft_fixed's LoRA control: speed/memory's kind of row
                continue
            f = Fig(path, r["label"])
            p = f.get("memory_predicted_gb")
            width = drawn.get(r["label"]) if path == PROBE else f.get("shapes.widest_tokens")
            out.append({"label": r["label"], "call": call, "fig": f, "drawn": width, "widest": p["widest_tokens"],
                        "measured": f.get("memory_gb.peak_allocated"), "predicted": p["peak_allocated"]})
    return out


def speed_memory_fullft_now() -> str:
    rows = []
    for r in now_rows():
        f, parts = r["fig"], r["fig"].get("memory_predicted_gb.parts")
        arch = f.get("config.model.arch")
        at = "" if r["drawn"] is None or r["drawn"] == r["widest"] else \
            f"{at_width(f, r['drawn']):.2f} ({at_width(f, r['drawn']) / r['measured'] - 1:+.1%})"
        rows.append([r["call"], str(arch["num_hidden_layers"]), _run(f),
                     *(gb(parts[k]) for k in ("weights", "grads", "optimizer", "activations")),
                     f"{r['widest']:,} / {'-' if r['drawn'] is None else format(r['drawn'], ',')}",
                     f"{r['measured']:.2f}", f"{r['predicted']:.2f}", f"{r['predicted'] / r['measured'] - 1:+.1%}", at])
    return markdown(["call", "layers", "run (`peft=none`)", "weights", "grads", "AdamW", "activations",
                     "tokens predicted for / drawn", "measured peak", "predicted", "error", "at the drawn width"], rows)


TABLES = {"speed/memory_fullft": (HERE / "speed/README.md", speed_memory_fullft),
          "speed/memory_fullft_now": (HERE / "speed/README.md", speed_memory_fullft_now)}


def hooked_input_excess(f: Fig) -> float:
    """GB the probe's kept layer input added to an eager LoRA prediction (src/model/memory_model.py,
    _watch_layer_inputs): one [tokens, hidden] tensor of the compute dtype per layer past the first, in the 2-layer
    copy only. Compiled copies had no such hook."""
    cfg = f.get("config")
    if cfg["trainer"]["torch_compile"] or cfg["peft"]["method"] == "none":
        return 0.0
    arch, tokens = cfg["model"]["arch"], f.get("memory_predicted_gb.widest_tokens")
    return tokens * arch["hidden_size"] * 2 * (arch["num_hidden_layers"] - 1) / 2**30


CONTROLS = [(REST[0], "fx_lora36_bs32", "LoRA, bf16, fixed 320 bs 32, eager"),
            (REST[1], "fx_lora36_bs32", "the same, call 2"),
            (REST[0], "mc_qlora_packed8k", "QLoRA, packed 8k, eager"),
            (REST[0], "mc_fp8_fused_8k", "FP8 + fused, packed 8k, compiled"),
            (S + "h100_levers_call7/reports_a.jsonl", "+lever=eager,logger=none,model=qwen3",
             "earlier: call 7's eager packed 8k (`sweep=levers`)")]


def speed_memory_controls() -> str:
    """The adapters' predictions under the copies' fix (one H100, full depth): as the runs made them, and less the
    probe's kept layer input (the fix after these calls; an estimate from the stored figures)."""
    rows = []
    for path, label, what in CONTROLS:
        f = Fig(path, label)
        measured, predicted = f.get("memory_gb.peak_allocated"), f.get("memory_predicted_gb.peak_allocated")
        fixed = predicted - hooked_input_excess(f)
        rows.append([what, f"{measured:.2f}", f"{predicted:.2f}", f"{predicted / measured - 1:+.1%}",
                     f"{fixed:.2f} ({fixed / measured - 1:+.1%})" if fixed != predicted else "(no hook: compiled)"])
    return markdown(["run (full depth, Qwen3-4B width)", "measured peak GB", "predicted GB", "error",
                     "less the kept input (estimate)"], rows)


TABLES["speed/memory_controls"] = (HERE / "speed/README.md", speed_memory_controls)


def forward_end_rows() -> list[dict]:
    """Every full fine-tune at grad_accum > 1 of today's calls and the g4fix call (the rows the forward's end can
    move; at grad_accum 1 the rule is unchanged): as each run predicted, and today's rule on its stored figures."""
    rows = [r for r in now_rows() if r["fig"].get("config.batch.grad_accum") > 1]
    for r in _records(G4FIX):
        if r["config"]["peft"]["method"] == "none":
            f = Fig(G4FIX, r["label"])
            rows.append({"label": r["label"], "call": "g4fix (one width, after the probe's fix)", "fig": f,
                         "drawn": f.get("shapes.widest_tokens"), "widest": f.get("memory_predicted_gb.widest_tokens"),
                         "measured": f.get("memory_gb.peak_allocated"), "predicted": f.get("memory_predicted_gb.peak_allocated")})
    for r in rows:
        r["today"] = rule_on(r["fig"].record)
        r["today_drawn"] = rule_on(r["fig"].record, r["drawn"]) if r["drawn"] and r["drawn"] != r["widest"] else None
    return rows


def speed_memory_forward_end() -> str:
    """Issue 53 G4: the full fine-tunes at grad_accum > 1 under the rule that weighs the forward's end (memory_model.
    peak_parts' `kept`), from the figures each run stored."""
    rows = []
    for r in forward_end_rows():
        f = r["fig"]
        drawn = "" if r["today_drawn"] is None else \
            f"{r['today_drawn']:.2f} ({r['today_drawn'] / r['measured'] - 1:+.1%}) at {r['drawn']:,} tokens"
        rows.append([r["call"], str(f.get("config.model.arch.num_hidden_layers")), _run(f), f"{r['measured']:.2f}",
                     f"{r['predicted']:.2f} ({r['predicted'] / r['measured'] - 1:+.1%})",
                     f"{r['today']:.2f} ({r['today'] / r['measured'] - 1:+.1%})", drawn])
    return markdown(["call", "layers", "run (`peft=none`)", "measured peak GB", "as the run predicted",
                     "the forward's end weighed (today)", "the same at the width the run drew"], rows)


TABLES["speed/memory_forward_end"] = (HERE / "speed/README.md", speed_memory_forward_end)


def speed_memory_g4fix() -> str:
    """Issue 53 G4 after the probe's fix (one H100, commit 9d9cbaf, memory only): each run as it predicted."""
    rows = []
    for r in _records(G4FIX):
        f = Fig(G4FIX, r["label"])
        measured, predicted = f.get("memory_gb.peak_allocated"), f.get("memory_predicted_gb.peak_allocated")
        rows.append([f"`{r['label']}`", _run(f) if r["config"]["peft"]["method"] == "none" else
                     f"`{' '.join(o.replace(chr(39), '') for o in f.get('overrides') if not o.startswith(('logger', 'trainer', 'measure', 'diagnostics', 'model=')))}`",
                     f"{measured:.2f}", f"{predicted:.2f}", f"{predicted / measured - 1:+.2%}"])
    return markdown(["run", "overrides", "measured peak GB", "predicted GB", "error"], rows)


TABLES["speed/memory_g4fix"] = (HERE / "speed/README.md", speed_memory_g4fix)
