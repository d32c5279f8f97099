"""Claims on issue 53's whole-model graphs calls in experiments/speed (each layer one nested compile region, the
fused linear under graphs): kept apart from speed53.py so each module stays short."""
from __future__ import annotations

from experiments.claims import Claim, times
from experiments.figures import Fig

CLAIMS: list = []
ONCE = "speed/results/h100_graphs_once_call1.jsonl"  # gpu.sh graphs_once, on an H100


def _once(state: str, once: bool) -> Fig:
    return Fig(ONCE, f"graphs_{state}_once_{str(once).lower()}")


def _once_step() -> str:
    """The step's rate with each layer one region against inlined layers, warm and cold (each pair one call)."""
    return (f"{times(_once('warm1', True), _once('warm1', False))} warm and "
            f"{times(_once('cold', True), _once('cold', False))} cold").replace(": a tie", "")  # the prose says tie after


def _once_memory() -> str:
    """What the regions keep at the peak beyond inlined layers (both warm runs), at the one depth measured."""
    a, b = _once("warm1", True), _once("warm1", False)
    layers = a.get("config.model.arch.num_hidden_layers")
    return f"{a.get('memory_gb.peak_allocated') - b.get('memory_gb.peak_allocated'):.1f} GB more at {layers} layers"


def _once_warm_saved() -> str:
    """The warm start the regions saved, one run each."""
    saved = _once("warm1", False).get("compile.to_first_step_s") - _once("warm1", True).get("compile.to_first_step_s")
    return f"a warm job saved {saved:.1f} s"


def _once_break_even() -> str:
    """The cold compile the regions saved, the warm step time they cost, and the steps after which the saving is spent."""
    saved = _once("cold", False).get("compile.to_first_step_s") - _once("cold", True).get("compile.to_first_step_s")
    a, b = _once("warm1", True).get("step_time_s.mean"), _once("warm1", False).get("step_time_s.mean")
    return (f"it saved {saved:.1f} s of a cold compile, once, and costs every step its\n  {a - b:.4f} s more (warm: "
            f"{a / b - 1:.1%} of the step), so it breaks even after about {round(saved / (a - b), -2):,.0f} steps")


CLAIMS += [Claim("0.95x (0.92-0.97) warm and 0.95x (0.92-0.98) cold", _once_step),
           Claim("7.3 GB more at 36 layers", _once_memory),
           Claim("a warm job saved 1.2 s", _once_warm_saved),
           Claim("it saved 26.3 s of a cold compile, once, and costs every step its\n  0.0048 s more (warm: 5.6% of the "
                 "step), so it breaks even after about 5,500 steps", _once_break_even)]

REGION = "speed/results/cpu_region_saved_bytes.jsonl"  # experiments/speed/region_saved_bytes.py, on the CPU


def _region_third_layer() -> str:
    """What the region's second call (the third layer) keeps beyond every later call's share, once."""
    saved = [Fig(REGION, f"once_l{n}").get("saved_mb") for n in (2, 3, 4)]
    return f"with {(saved[1] - saved[0]) - (saved[2] - saved[1]):.2f} MB more once"


CLAIMS += [Claim("with 1.06 MB more once", _region_third_layer)]
