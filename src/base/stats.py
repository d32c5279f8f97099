"""How sure a measured figure is, and whether two of them differ.

Step times are autocorrelated (a slow step is followed by slow ones while the host is busy, a clock ramps, a
cache warms), so stdev/sqrt(n) claims far more certainty than the run has. Batch means: cut the timed steps
into b consecutive batches, average each, and treat the b batch means as the independent samples; their
spread carries the correlation within a batch. That holds only where a batch is long next to the correlation:
with the usual b = floor(sqrt(n)) the "95%" interval held the true mean in 77.5% of simulated runs of 100 steps
at step-time autocorrelation 0.9 (issue 54). So the batches are sized from the steps' own integrated
autocorrelation time tau (Geyer's initial positive sequence): at least BATCH_TAUS * tau steps each, down to
MIN_BATCHES batches, never more than sqrt(n). What few long batches still miss is the mean they share: their
spread, taken about the run's own mean, comes out short by about (b + 1) tau / 2n of the variance (adjacent
batch means still overlap in their correlation), so the variance is divided by 1 - BIAS_MARGIN times that. A
Student t quantile with b - 1 degrees of freedom makes the interval. Over 1,000 simulated AR(1) runs each of 100
and 1,000 steps it held the true mean in 93-97% at autocorrelation 0, 0.5, 0.8 and 0.9 (tests/test_stats.py),
where stdev/sqrt(n) held it in under 75%.

Comparing two jobs: throughputs are ratios of means, so the comparison is on the log scale, where the two
relative standard errors add in quadrature. "A beats B" needs the whole interval of A/B above 1 + MIN_EFFECT:
separate runs of one config drift apart by more than their within-run intervals say (on an H100, the same
packed 8k compiled Qwen3-4B job ran 25,064 and 25,869 real tokens/s in two calls, 3.2% apart, with intervals of
+-2% or less). Anything less is a tie, said with its interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist, fmean, median, stdev

import numpy as np

CONFIDENCE = 0.95
MIN_BATCHES = 3  # fewer batch means than this give no interval worth printing (2 degrees of freedom: t = 4.3)
BATCH_TAUS = 5  # a batch spans this many autocorrelation times: 3 held 91% at rho 0.9 and n=100, 5 held 94%
BIAS_MARGIN = 1.5  # the first-order bias term, taken 1.5x: tau is itself estimated short on a short run
BIAS_FLOOR = 0.25  # the correction at most quadruples the variance (a run of a few tau steps: t_2 already wide)
MIN_EFFECT = 0.03  # ratios within 3% are a tie even when the intervals are tight: between-run drift
WIDE = 0.10  # a half-width above 10% of the mean flags the job: its figure can't settle a close call
NOISY = 2.0  # a ratio's interval spanning more than a factor 2 sizes nothing: only its lower end is claimed


def t_quantile(dof: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student t quantile: exact for 1 and 2 degrees of freedom, else Abramowitz & Stegun 26.7.5
    (within 0.2% of the exact value from 3 up)."""
    p = 0.5 + confidence / 2
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    v = dof
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4))


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% interval, from `batches` batch means (or repeats) of the values."""
    mean: float
    low: float
    high: float
    batches: int

    @property
    def half_width(self) -> float:
        """Relative: (high - low) / 2 / mean."""
        return (self.high - self.low) / 2 / self.mean if self.mean else math.inf

    @property
    def rel_se(self) -> float:
        """The mean's relative standard error (the half-width over the t quantile)."""
        return self.half_width / t_quantile(self.batches - 1)

    def inverse(self, scale: float = 1.0) -> "Interval":
        """The interval of scale / x: a step time's interval carried to a throughput."""
        return Interval(scale / self.mean, scale / self.high, scale / self.low if self.low > 0 else math.inf,
                        self.batches)


def autocorrelation_time(values) -> float:
    """The integrated autocorrelation time tau = 1 + 2 sum_k rho_k of a series (in order of time): how many
    steps count as one independent step. Geyer's initial positive sequence: the sample autocorrelations summed in
    adjacent pairs while a pair stays positive (past there they are noise). 1 for a constant series."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2 or np.all(x == x[0]):  # (about its mean a constant's rounding would read as a perfect correlation)
        return 1.0
    x = x - x.mean()
    spectrum = np.fft.rfft(x, 2 * n)  # zero-padded: the circular sum is the linear one
    acf = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    acf = acf / acf[0]
    pairs = acf[0:n - 1:2][: (n - 1) // 2] + acf[1:n:2][: (n - 1) // 2]
    stop = np.flatnonzero(pairs <= 0)
    kept = pairs[: stop[0] if stop.size else len(pairs)]
    return max(1.0, 2 * float(kept.sum()) - 1)


def batch_means(values, batches: int | None = None) -> Interval | None:
    """The mean of `values` (in order of time) with its 95% batch-means interval, batches sized from the
    autocorrelation time (the module's docstring); None when there are fewer than MIN_BATCHES batches to be had (a
    short run states no interval rather than a false one). `batches` fixes their count."""
    n = len(values)
    tau = autocorrelation_time(values) if n >= MIN_BATCHES**2 else 1.0
    b = batches or min(math.isqrt(n), max(MIN_BATCHES, n // math.ceil(BATCH_TAUS * tau)))
    if b < MIN_BATCHES or n < b:
        return None
    x, size = np.asarray(values, dtype=float), n // b
    means = x[:b * size].reshape(b, size).mean(axis=1)  # the last n % b steps only in the mean
    m = float(x.mean())
    spread = float(means.std(ddof=1)) / math.sqrt(b)
    spread /= math.sqrt(max(BIAS_FLOOR, 1 - BIAS_MARGIN * (b + 1) * tau / (2 * n)))
    half = t_quantile(b - 1) * spread
    return Interval(m, m - half, m + half, b)


def of_samples(samples: list[float], mean: float | None = None) -> Interval | None:
    """A 95% t interval from independent samples (batch means, or one figure per repeat of a job)."""
    b = len(samples)
    if b < 2:
        return None
    m = fmean(samples) if mean is None else mean
    half = t_quantile(b - 1) * stdev(samples) / math.sqrt(b)
    return Interval(m, m - half, m + half, b)


def of_repeats(samples: list[float]) -> Interval | None:
    """A 95% interval from one throughput per repeat of a job, on the log scale where jobs are compared: a
    throughput is positive, and a linear t interval from 2 repeats (t = 12.7) reached below zero (an H200 sweep:
    -2,505 to 15,448 real tokens/s). The mean stays the repeats' mean."""
    if len(samples) < 2 or min(samples) <= 0:
        return of_samples(samples)
    logs = [math.log(x) for x in samples]
    half = t_quantile(len(logs) - 1) * stdev(logs) / math.sqrt(len(logs))
    return Interval(fmean(samples), math.exp(fmean(logs) - half), math.exp(fmean(logs) + half), len(logs))


def of_median(samples: list[float]) -> Interval | None:
    """The median of some timings and the interval between two order statistics, the j-th smallest and the j-th
    largest, that holds the median with probability at least 1 - 1/16 whatever the noise (the binomial's tails:
    j = 1, the smallest and largest, at 5 samples; the 23rd of 60): a host's hiccup moves one end, not the
    middle, where a mean and a t interval move both. None below 2 samples."""
    n = len(samples)
    if n < 2:
        return None
    ranked, j = sorted(samples), 1
    while j < n // 2 and 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2**n <= 1 / 16:
        j += 1  # the interval between the (j+1)-th ranks still misses the median with at most 1/16
    return Interval(median(samples), ranked[j - 1], ranked[n - j], n)


def union_seconds(spans) -> float:
    """Length of the union of (start_ns, end_ns) intervals, in seconds: overlapping kernels count once."""
    busy, cur_start, cur_end = 0, None, None
    for start, end in sorted(spans):
        if cur_end is None or start > cur_end:
            busy += 0 if cur_end is None else cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += 0 if cur_end is None else cur_end - cur_start
    return busy / 1e9


@dataclass(frozen=True)
class Comparison:
    ratio: float  # a / b
    low: float
    high: float

    @property
    def tie(self) -> bool:
        """A win needs the whole interval beyond MIN_EFFECT: confident the gain outlasts between-run drift. Without
        an interval nothing is a win either, so such jobs share a rank (the text says they are not told apart)."""
        return self.low <= 1 + MIN_EFFECT and self.high >= 1 / (1 + MIN_EFFECT)

    def text(self, a: str, b: str) -> str:
        """'A beats B by 1.23x (x1.15-x1.31)', or the tie with the range the ratio may lie in."""
        if self.ratio < 1:  # said the other way round; no interval (low 0) stays none
            return Comparison(1 / self.ratio, 1 / self.high, 1 / self.low if self.low > 0 else math.inf).text(b, a)
        if not math.isfinite(self.high):  # not a tie: nothing says whether it is noise or 2.6x (seen: bf16 vs fp32)
            return f"{a} and {b} are not told apart ({self.ratio:.2f}x measured, no interval: too few timed steps)"
        span = f"x{_ratio(self.low)}-x{_ratio(self.high)}"
        if not self.tie and self.high / self.low > NOISY:
            return (f"{a} beats {b} by at least x{_ratio(self.low)} (measured {self.ratio:.2f}x; anywhere in {span}: "
                    "too noisy to say by how much)")
        if not self.tie:
            return f"{a} beats {b} by {self.ratio:.2f}x ({span})"
        if self.low <= 1 <= self.high:
            return f"{a} and {b} tie: measured {self.ratio:.2f}x, but anywhere in {span} (within noise)"
        return f"{a} and {b} tie: {self.ratio:.2f}x ({span}), which could be under the {MIN_EFFECT:.0%} runs drift apart"


def _ratio(x: float) -> str:
    """A ratio's end as people read it: x0.64, x1.15, x13 (no 12.92 where the interval is that wide)."""
    return f"{x:.2f}" if x < 10 else f"{x:.0f}"


def compare(a: Interval | None, b: Interval | None, a_mean: float, b_mean: float) -> Comparison:
    """A/B with a 95% interval on the log scale; without an interval on either side the ratio has none
    (and counts as a tie: nothing says it isn't noise)."""
    ratio = a_mean / b_mean
    if a is None or b is None:
        return Comparison(ratio, 0.0, math.inf)
    se = math.hypot(a.rel_se, b.rel_se)
    dof = min(a.batches, b.batches) - 1
    if se > 0:  # Welch-Satterthwaite, floored: never below the smaller side's (2 repeats alone give t = 12.7)
        dof = max(dof, math.floor(se**4 / (a.rel_se**4 / (a.batches - 1) + b.rel_se**4 / (b.batches - 1))))
    k = math.exp(min(t_quantile(dof) * se, 700.0))  # a repeat's interval spanning orders of magnitude: a tie, not
    return Comparison(ratio, ratio / k, ratio * k)  # an OverflowError that ended the sweep's summary
