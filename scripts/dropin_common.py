"""What the drop-in's GPU scripts (dropin_gpu.py, dropin_sft_gpu.py) share: the two added lines, and the
attached report's figures for their JSON line."""
import json


def attach(trainer) -> None:
    """The user's two added lines: `import trainsweep; trainsweep.attach(trainer)`."""
    try:
        import trainsweep
    except ImportError:  # a checkout (the device machine's PYTHONPATH) has the package as `src`
        import src as trainsweep
    trainsweep.attach(trainer)


def report_fields(out: str) -> dict:
    """The attached run's report, as the P/A table reads it."""
    rep = json.load(open(f"{out}/trainsweep/report.json"))
    th = rep["throughput"]
    return {"status": rep["status"], "real_tok_s": th["real_tokens_per_s"],
            "real_tok_s_95": [th.get("real_tokens_per_s_low"), th.get("real_tokens_per_s_high")],
            "mfu": (rep.get("flops") or {}).get("mfu"), "step_s": rep["step_time_s"].get("mean"),
            "timed_steps": rep["step_time_s"]["n"], "loss_initial": rep["loss"]["initial"],
            "padding": rep["config"]["padding"]["strategy"], "bottleneck": rep["verdict"]["bottleneck"],
            "checks": {c["check"]: c["status"] for c in rep["diagnostics"]}}
