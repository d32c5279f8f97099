"""The measured sections of a run's report, typed: each is a dataclass that owns its fields (report.json's keys,
in order), its line in the printed summary and its W&B names.

Adding a measured figure: a field on its section here, and the number in src/report/analysis.py. It then
reaches report.json, the sweep's summary.csv (as `section.field`) and W&B's run summary by itself.
It is one concern, kept whole at ~355 lines: report.json's sections in one place, the interface test_report_keys pins.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Optional

from ..measure import PHASES


class _Unset:
    """A field the run never reached (a config error has no throughput): left out of report.json."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def _fmt(x, spec=",.0f", none="-") -> str:
    return none if x is None else format(x, spec)


@dataclass
class Section:
    wandb: ClassVar[str | None] = None  # W&B namespace of its numbers (None: not logged as a group)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None):
        """Tolerant of reports written before a field existed: a missing key reads as None."""
        return None if d is None else cls(**{f.name: d.get(f.name) for f in fields(cls)})

    def numbers(self) -> dict:
        return {f.name: v for f in fields(self) if isinstance(v := getattr(self, f.name), (int, float))
                and not isinstance(v, bool)}

    def wandb_summary(self) -> dict:
        return {f"{self.wandb}/{k}": v for k, v in self.numbers().items()} if self.wandb else {}


@dataclass
class Throughput(Section):
    wandb: ClassVar[str] = "perf"
    samples_per_s: Optional[float] = None
    tokens_per_s: Optional[float] = None  # every position, padding included
    real_tokens_per_s: Optional[float] = None  # attention-mask tokens: the honest rate
    loss_tokens_per_s: Optional[float] = None
    pad_fraction: Optional[float] = None
    world_size: int = 1  # the counts above are summed over every rank: the job's throughput
    real_tokens_per_s_per_gpu: Optional[float] = None
    real_tokens_per_s_low: Optional[float] = None  # 95% interval (batch means of the step times: src/base/stats.py)
    real_tokens_per_s_high: Optional[float] = None

    def real_tok_text(self) -> str:
        """'22,339 (21,100-23,600)' or '22,339 (no interval)'."""
        if self.real_tokens_per_s is None:  # no tokens counted (images, audio): nothing to put an interval on
            return _fmt(None)
        if self.real_tokens_per_s_low is None:
            return f"{_fmt(self.real_tokens_per_s)} (no interval)"
        return f"{_fmt(self.real_tokens_per_s)} ({_fmt(self.real_tokens_per_s_low)}-{_fmt(self.real_tokens_per_s_high)})"

    def line(self) -> str:
        if self.samples_per_s is None:  # GRPO, RLOO, on-policy distillation: the batches are made inside the step
            return ("unknown: the batches the Trainer fetched held no rows to count (no input_ids, and no tensors "
                    "sharing a batch dimension; GRPO, RLOO and on-policy distillation make theirs inside the step)")
        return (f"{_fmt(self.samples_per_s, ',.1f')} samples/s | {self.real_tok_text()} real tok/s | "
                f"{_fmt(self.tokens_per_s)} all tok/s | {_fmt(self.loss_tokens_per_s)} loss tok/s | "
                f"pad {_fmt(self.pad_fraction, '.1%')}"
                + (f" | {self.world_size} ranks: {_fmt(self.real_tokens_per_s_per_gpu)} real tok/s each"
                   if (self.world_size or 1) > 1 else ""))


@dataclass
class StepTime(Section):
    mean: Optional[float] = None
    p50: Optional[float] = None
    p90: Optional[float] = None
    stdev: Optional[float] = None
    n: int = 0
    warmup_steps: Optional[int] = None
    wall_mean: Optional[float] = None  # the window's wall clock per step: checks the events' sum
    values: list = field(default_factory=list)
    ci_low: Optional[float] = None  # 95% interval of the mean from batch means (steps are autocorrelated)
    ci_high: Optional[float] = None
    ci_batches: Optional[int] = None  # batch means behind it; None: too few timed steps for an interval

    def wandb_summary(self) -> dict:
        return {f"perf/step_time_{k}_s": getattr(self, k) for k in ("mean", "p50", "p90", "stdev", "ci_low", "ci_high")}

    def line(self) -> str:
        ci = (f"95% {self.ci_low:.4f}-{self.ci_high:.4f} from {self.ci_batches} batch means"
              if self.ci_low is not None else "no interval: too few timed steps")
        return (f"{self.mean:.4f} s ({ci}; p50 {self.p50:.4f}, p90 {self.p90:.4f}, stdev {self.stdev:.4f}, "
                f"n={self.n} after {self.warmup_steps} warm-up)")


@dataclass
class Breakdown(Section):
    """Seconds per optimizer step on the device's timeline; host = GPU idle that the data wait doesn't explain."""
    data: Optional[float] = None
    compute: Optional[float] = None
    optimizer: Optional[float] = None
    other: Optional[float] = None
    host: Optional[float] = None

    def line(self, step_mean: float, gpu_busy: float | None) -> str:
        shares = ", ".join(f"{k} {getattr(self, k) / step_mean:.0%}" for k in PHASES if getattr(self, k) is not None)
        if self.host is not None:
            shares += f"; GPU busy {gpu_busy:.0%}, idle waiting for the host {self.host / step_mean:.0%}"
        return shares


@dataclass
class HostTime(Section):
    data: Optional[float] = None  # host seconds per step fetching batches
    launch: Optional[float] = None  # host seconds per step from step begin to end (launching kernels)
    gc: Optional[float] = None  # Python garbage collection per step
    gc_collections: int = 0


@dataclass
class Flops(Section):
    per_token: float = 0.0
    per_token_hardware: float = 0.0  # with recomputation under checkpointing: HFU's numerator
    matmul_params_frozen: int = 0
    matmul_params_trainable: int = 0
    seq: Optional[float] = None  # the token-weighted mean length the attention FLOPs are counted at
    peak_tflops: Optional[float] = None
    mfu: Optional[float] = None
    hfu: Optional[float] = None
    bf16_equivalent: bool = False  # FP8 base matmuls: MFU still against the bf16 peak, the model's FLOPs unchanged
    ceiling_tflops: Optional[float] = None  # this card's base GEMMs at the run's shapes, measured (src/machine/ceiling.py)
    ceiling_tokens_per_s: Optional[float] = None  # a step of nothing but those GEMMs, in tokens/s
    of_ceiling: Optional[float] = None  # real tokens/s (per GPU) / ceiling_tokens_per_s
    # training forwards of the model a micro-batch, where more than one (R-Drop): per_token counts them all
    forwards_per_micro_batch: Optional[float] = None
    forwards_by: Optional[str] = None  # what calls the model more than once: "your compute_loss"
    trainable_changed: Optional[str] = None  # "0.73% -> 100.00%": a script unfroze (or froze) weights mid-run
    # forwards without grad over the micro-batch's tokens a micro-batch, by who ran them: {"ref_model": 1.0} (DPO)
    scoring_passes: Optional[dict] = None

    def wandb_summary(self) -> dict:
        return {"perf/mfu": self.mfu, "perf/of_ceiling": self.of_ceiling}

    def scaled_by_forwards(self, per_micro_batch: float | None, by: str | None) -> None:
        """Count every forward (and its backward) a micro-batch runs, not one: two forwards, twice the FLOPs."""
        if not per_micro_batch or per_micro_batch <= 1:
            return
        self.per_token *= per_micro_batch
        self.per_token_hardware *= per_micro_batch
        self.forwards_per_micro_batch, self.forwards_by = per_micro_batch, by

    def count_forwards(self, counter, by: str | None) -> None:
        """What a ForwardCounter (src/measure/forwards.py) saw, if one counted: training forwards beyond one a
        micro-batch, and scoring passes."""
        if counter is not None:
            self.scaled_by_forwards(counter.per_micro_batch(), by)
            self.add_scoring(counter.scoring_flops(self.seq or 0.0))

    def add_scoring(self, passes: list[tuple[str, float, float]]) -> None:
        """Add the scoring passes (who, passes a micro-batch, forward FLOPs a token each): a reference model's
        log-probs are work DPO's loss needs, not spare time."""
        extra = sum(n * each for _, n, each in passes)
        if extra:
            self.per_token += extra
            self.per_token_hardware += extra
            self.scoring_passes = {who: n for who, n, _ in passes}

    def trainable_at_end(self, begin: float, end: float) -> None:
        """The share of weights that train, at train begin (what the FLOPs were counted with) and at its end."""
        if round(begin, 6) != round(end, 6):
            self.trainable_changed = f"{begin:.2%} -> {end:.2%}"

    def _forwards(self) -> str:
        changed = (f"; the weights that train changed during training ({self.trainable_changed} of them): FLOPs and "
                   "MFU count the start's" if self.trainable_changed else "")
        if self.scoring_passes:
            who = ", ".join(f"{n:.3g}x by {'the model itself' if name == 'model' else name}"
                            for name, n in self.scoring_passes.items())
            changed = (f", plus forwards without grad over the batches' tokens ({who}: a reference's or teacher's "
                       f"scoring, as DPO's) counted as forward FLOPs{changed}")
        n = self.forwards_per_micro_batch
        if not n:
            return changed
        times = "twice" if n == 2 else f"{n:.3g} times"
        return (f", {n:.3g} forwards a micro-batch ({self.forwards_by or 'the training step'} calls the model "
                f"{times}): FLOPs counted for {'both' if n == 2 else 'each'}{changed}")

    def line(self) -> str:
        ceiling = (f"; {_fmt(self.of_ceiling, '.0%')} of this card's GEMM ceiling for this model "
                   f"({_fmt(self.ceiling_tokens_per_s)} tok/s at {_fmt(self.ceiling_tflops, '.0f')} TFLOP/s measured)"
                   if self.ceiling_tokens_per_s else "")
        if self.peak_tflops is None:  # a CPU, or a card missing from the peak table: no figure rather than "-"
            return (f"{self.per_token / 1e9:.3g} GFLOP/token{self._forwards()}; MFU: no peak known for this device "
                    "(measure.peak_tflops=N gives one; in your script, attach(trainer, peak_tflops=N))")
        return (f"{self.per_token / 1e9:.3g} GFLOP/token{self._forwards()}; MFU {_fmt(self.mfu, '.1%')} "
                f"(peak {_fmt(self.peak_tflops, '.0f' if (self.peak_tflops or 0) >= 10 else '.2g')} TFLOP/s{', bf16-equivalent: FP8 base' if self.bf16_equivalent else ''}), "
                f"HFU {_fmt(self.hfu, '.1%')}{ceiling}")


@dataclass
class Tokens(Section):
    samples: int = 0
    all: Optional[int] = 0  # None: batches without input_ids (pixel_values, input_values), whose tokens are unknown
    real: Optional[int] = 0
    loss: Optional[int] = 0


@dataclass
class Shapes(Section):
    distinct_in_window: int = 0
    new_in_window: int = 0  # shapes first seen inside the timed window: each may have cost a compile or a retry
    widest_tokens: Optional[int] = None  # the run's widest micro-batch (any step): where its memory peaked


@dataclass
class Compile(Section):
    graphs: int = 0
    graphs_in_window: Optional[int] = None
    to_first_step_s: Optional[float] = None  # cold start: build, checks and step 1 (its compile included)
    work: Optional[dict] = None  # measure.compiled.compile_work since the run's start: seconds compiling, cache hits

    def line(self, layers: int | None) -> str:
        w, caches = self.work or {}, ""
        if w.get("compile_s"):
            bypassed = (f"; {w['autograd_cache_bypasses']} graphs bypassed the autograd cache: traced again by every job"
                        if w.get("autograd_cache_bypasses") else "")
            caches = (f"; torch compiled for {w['compile_s']:.1f} s over the run (graph cache {w['fx_graph_cache_hits']} "
                      f"hits, {w['fx_graph_cache_misses']} misses{bypassed})")
        return (f"{self.graphs} graphs" + (f" ({layers} layers, regional)" if layers else "")
                + f"; first step done {_fmt(self.to_first_step_s, '.1f')} s after the start{caches}; "
                f"{self.graphs_in_window} compiled inside the timed window")


BOUND_WORDS = {"upper": "at most ", "lower": "at least "}  # memory_model.predict's mark on its figure


@dataclass
class GpuMemory(Section):
    wandb: ClassVar[str] = "mem"
    peak_allocated: float = 0.0
    peak_reserved: float = 0.0
    capacity: float = 0.0  # the card's, or gpu.memory_cap_gb's when smaller: saturation is judged against it
    card_capacity: float = 0.0
    memory_cap_gb: Optional[float] = None
    alloc_retries: int = 0
    fragmentation: Optional[float] = None  # reserved / allocated
    device_used: Optional[float] = None  # NVML: the driver's view, CUDA context included
    alloc_retries_in_window: int = 0

    def line(self, predicted: dict | None) -> str:
        return (f"peak {self.peak_allocated:.2f} GB allocated, {self.peak_reserved:.2f} reserved of "
                f"{self.capacity:.1f}; {self.alloc_retries} alloc retries"
                + (f"; predicted {BOUND_WORDS.get(predicted.get('bound'), '')}{predicted['peak_allocated']:.2f} "
                   f"({predicted['peak_allocated'] / self.peak_allocated - 1:+.1%} vs measured)" if predicted else ""))


@dataclass
class CpuMemory(Section):
    wandb: ClassVar[str] = "mem"
    peak_rss_gb: float = 0.0
    alloc_retries_in_window: int = 0

    def line(self, predicted: dict | None) -> str:
        return f"peak RSS {self.peak_rss_gb:.2f} GB (CPU process)"


def memory_section(d: dict | None):
    return None if d is None else (CpuMemory if "peak_rss_gb" in d else GpuMemory).from_dict(d)


@dataclass
class Loss(Section):
    wandb: ClassVar[str] = "loss"
    initial: Optional[float] = None
    final: Optional[float] = None
    expected_initial: Optional[float] = None  # a uniform guess's cross-entropy: where a sound init starts
    curve: list = field(default_factory=list)  # (step, loss)
    mean_over_run: Optional[float] = None  # the Trainer's train_loss, when no step's loss or step 1's alone was logged
    datasets: list = field(default_factory=list)  # a trainer's dict of train datasets: its logged losses take turns

    def line(self) -> str:
        # none where the trainer's objective is its own (TRL's DPO, GRPO, ...): no uniform guess to start from
        guess = "" if self.expected_initial is None else f"uniform guess: {self.expected_initial:.3f}"
        if self.initial is None:
            return (f"mean over the run {_fmt(self.mean_over_run, '.3f')} (no step's loss logged: logging_steps is past "
                    f"the run's end{'; ' + guess if guess else ''})")
        said, first = f" ({guess})" if guess else "", _fmt(self.initial, ".3f", "nan")  # None: nan (strict JSON)
        if len(self.curve) == 1:  # one step logged: of several (with the Trainer's mean), or the run's only one
            why = " (trainer.logging_steps is past the run's end)" if self.curve[0][0] == 1 else ""
            return (f"{first} at step {self.curve[0][0]}, " + ("the run's only step" if self.mean_over_run is None else
                    f"the only step logged{why}; mean over the run {_fmt(self.mean_over_run, '.3f')}") + said)
        turns = f"; the logged losses take turns over {len(self.datasets)} train datasets ({', '.join(self.datasets)}), " \
            "each under its own loss where it has one: not one curve" if len(self.datasets) > 1 else ""
        return f"{first} -> {_fmt(self.final, '.3f', 'nan')}{said}{turns}"


@dataclass
class Saved(Section):
    """What the run kept after training (trainer.save_final): trainer.save_model's output and the tokenizer."""
    path: Optional[str] = None  # <run dir>/final
    kind: Optional[str] = None  # adapter (PEFT: adapter_model.safetensors + adapter_config.json) | model (the whole model)
    tokenizer: bool = False  # the tokenizer beside it (synthetic data has none: it is token ids)
    size_mb: Optional[float] = None  # on disk: what each job of a sweep costs
    # an adapter on random weights: where its base was written (final/base), or why not and a one-line rebuild
    base: Optional[str] = None

    def line(self) -> str:
        where = "" if not self.base or self.base.startswith("not saved") else " and its random base"
        return (f"{self.kind}{where}{' and tokenizer' if self.tokenizer else ''} in {self.path} "
                f"({_fmt(self.size_mb, ',.1f')} MB; trainsweep.load(run_dir) loads it"
                + (f"; base {self.base}" if self.base and not where else "") + ")")


@dataclass
class Verdict(Section):
    bottleneck: str = "compute"  # memory | data | host | compute
    saturated: bool = False
    reasons: list = field(default_factory=list)

    def wandb_summary(self) -> dict:
        return {"verdict/bottleneck": self.bottleneck, "verdict/saturated": self.saturated}

    def line(self) -> str:
        return f"{self.bottleneck}-bound{', memory-saturated' if self.saturated else ''}: " + "; ".join(self.reasons)


@dataclass
class Flags(Section):
    """Why this job's figure may not settle a comparison: each reason is one short clause."""
    reasons: list = field(default_factory=list)
    load_per_cpu: Optional[float] = None  # 1-minute load average over CPUs, the higher of the window's edges
    other_gpu_processes: Optional[int] = None  # NVML: compute processes on this GPU besides the run's own
    stalled_s: Optional[float] = None  # the timed step the process stood still in (analysis.stall): never ranked

    def wandb_summary(self) -> dict:
        return {"flags/count": len(self.reasons), "flags/reasons": "; ".join(self.reasons)}

    def line(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "none"


SECTIONS = {"flops": Flops, "loss": Loss, "throughput": Throughput, "step_time_s": StepTime, "breakdown_s": Breakdown,
            "host_s": HostTime, "tokens": Tokens, "shapes": Shapes, "compile": Compile, "verdict": Verdict,
            "flags": Flags, "saved": Saved}
