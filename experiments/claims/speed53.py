"""Claims on issue 53's calls in experiments/speed (FP8 at full depth, what bf16 past 50% MFU would take): kept
apart from speed.py, which is past its length."""
from __future__ import annotations

from experiments.claims import Claim
from experiments.figures import Fig

CLAIMS: list = []
CUE = "speed/results/h200_fp8cue_call3.jsonl"  # call 3: 32 classes cued by 8 ids each (speed/tables.speed_fp8_cue)


def _cue(dtype: str, seed: int) -> Fig:
    return Fig(CUE, f"cue_{dtype}_seed{seed}")


def _cue_end() -> str:
    """Where all four runs' train loss ended (one figure: they agree at its rounding)."""
    ends = {f"{_cue(d, s).get('loss.curve')[-1][1]:.3f}" for d in ("fp8", "bf16") for s in (0, 1)}
    assert len(ends) == 1, ends
    return f"a train loss of {ends.pop()}"


def _cue_eval() -> str:
    """Each run's final eval loss: FP8 seed 0 and 1 against bf16 seed 0 and 1."""
    ev = [f"{_cue(d, s).get('eval.final.loss'):.5f}" for d, s in (("fp8", 0), ("fp8", 1), ("bf16", 0), ("bf16", 1))]
    return f"eval loss\n  {ev[0]} and {ev[1]} against {ev[2]} and {ev[3]}"


def _cue_lag() -> str:
    """The logged steps up to 100 at which FP8's train loss is above bf16's of the same seed, over both seeds."""
    above = total = 0
    for seed in (0, 1):
        fp8, bf16 = (dict(map(tuple, _cue(d, seed).get("loss.curve"))) for d in ("fp8", "bf16"))
        steps = [s for s in fp8 if 10 <= s <= 100]
        above += sum(fp8[s] > bf16[s] for s in steps)
        total += len(steps)
    return f"above bf16's at {above} of the {total} logged steps from 10 to 100"


CLAIMS += [Claim("a train loss of 0.003", _cue_end),
           Claim("eval loss\n  0.00315 and 0.00316 against 0.00315 and 0.00314", _cue_eval),
           Claim("above bf16's at 20 of the 20 logged steps from 10 to 100", _cue_lag)]


def _g2_needs() -> str:
    """What 50% MFU asks of the bf16 reference at 16k (budget call 3, `ref_auto`: 45.1%): how much shorter its step
    must be, as a share of its elementwise kernels' time and of theirs and attention's together (gpu_kernels are
    shares of the step)."""
    f = Fig("speed/results/h200_budget_call3.jsonl", "ref_auto")
    cut = 1 - f.get("flops.mfu") / 0.50
    kinds = f.get("gpu_kernels")
    return (f"the step {cut:.1%} shorter: {cut / kinds['elementwise']:.0%} of its elementwise kernels' time, or "
            f"{cut / (kinds['elementwise'] + kinds['attention']):.0%} of theirs and attention's together")


CLAIMS += [Claim("the step 9.8% shorter: 54% of its elementwise kernels' time, or 34% of theirs and attention's together",
                 _g2_needs)]


def _g2_bandwidth() -> str:
    """What 50% MFU asks of a 36th of the bf16 reference's step (budget call 3: `ref` at 8k, `ref_auto` at 16k)
    against what one layer's memory-bound kernels could give back (bandwidth call 2, 8k tokens): inductor's kernels
    and LoRA's GEMMs at the card's copy bandwidth, and B's two products gone entirely. At 16k the layer's figures
    are doubled: these kernels' bytes grow with the tokens."""
    from experiments.speed.tables_bandwidth import B_ONLY, bandwidth_rows, headroom

    lora = bandwidth_rows("lora")
    above = sum(ms - at_copy for ms, _, at_copy in (headroom(bandwidth_rows("inductor")), headroom(lora)))
    back = above + headroom([r for r in lora if r["op"] in B_ONLY])[2]
    out = []
    for label, scale in (("ref", 1), ("ref_auto", 2)):
        f = Fig("speed/results/h200_budget_call3.jsonl", label)
        layer = f.get("step_time_s.mean") / f.get("config.model.arch.num_hidden_layers") * 1e3
        out.append(f"{(1 - f.get('flops.mfu') / 0.50) * layer:.2f} of its {layer:.2f} ms, against {back * scale:.2f} ms")
    return f"at 8k {out[0]}; at 16k {out[1]}"


CLAIMS += [Claim("at 8k 1.02 of its 7.94 ms, against 0.78 ms; at 16k 1.50 of its 15.37 ms, against 1.56 ms", _g2_bandwidth)]


def _silu_backward() -> str:
    """The layer's costliest inductor kernel (bandwidth call 2): its bytes, time alone and rate against the copy's."""
    from experiments.speed.tables_bandwidth import bandwidth_rows

    top = max(bandwidth_rows("inductor"), key=lambda r: r["ms"])
    assert top["name"].startswith("triton_poi_fused_add_mul_silu_silu_backward"), top["name"]
    return f"moves {top['gb']:.3f} GB\n  in {top['ms']:.3f} ms, which is {top['of_copy']:.0%} of the copy's rate"


CLAIMS += [Claim("moves 1.275 GB\n  in 0.306 ms, which is 98% of the copy's rate", _silu_backward)]
