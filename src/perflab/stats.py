"""Statistics: summaries with confidence intervals, A/B comparisons with verdicts, and control of
false discoveries across a whole result set.

Choices (see docs/statistics.md):
- The median is the centre (robust to the long right tail of timings).  Its 95% CI comes from
  order statistics (scipy.stats.quantile_test): exact, distribution-free, and cheap enough to
  re-evaluate after every run for adaptive stopping.
- A comparison is the ratio of medians (candidate / baseline) with a 95% percentile-bootstrap CI
  (scipy.stats.bootstrap; resampling pairs jointly when the runs were interleaved in rounds).
- Its p-value: a t-test on log values (paired when interleaved, else Welch); see p_value().
- Verdict, per metric: "slower"/"faster" only when the adjusted p < alpha AND the whole CI lies
  outside the +-threshold band (criterion.rs's rule); "equivalent" when the whole CI lies inside
  the band (an equivalence test, as BenchmarkDotNet's TOST); otherwise "inconclusive", with
  the number of runs that would likely decide it at the observed noise.
- Deterministic metrics (valgrind instruction counts) are compared exactly: any difference is a
  verdict, and no p-value is given.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from perflab.model import ResultSet

ALPHA = 0.05
CONFIDENCE = 0.95
MIN_RUNS_FOR_CI = 6  # order-statistic 95% CI of a median needs n >= 6


@dataclass
class Summary:
    n: int
    median: float
    ci_low: float
    ci_high: float
    mean: float
    stdev: float
    cv: float  # stdev / mean
    min: float
    max: float
    mad: float
    outliers: int  # outside Tukey's fences (1.5 IQR)

    @property
    def rel_halfwidth(self) -> float:
        """Half the CI's width relative to the median (inf while the CI is unknown)."""
        if not self.median or math.isnan(self.ci_low) or math.isnan(self.ci_high):
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / abs(self.median)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_ci(x: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    if len(x) < MIN_RUNS_FOR_CI:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    ci = sps.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


def summarize(samples: Sequence[float], deterministic: bool = False) -> Summary:
    x = np.asarray(samples, dtype=float)
    if len(x) == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0)
    med = float(np.median(x))
    if deterministic and np.all(x == x[0]):
        lo = hi = med
    else:
        lo, hi = median_ci(x)
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    outliers = int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr))) if len(x) >= 4 else 0
    return Summary(
        n=len(x), median=med, ci_low=lo, ci_high=hi, mean=mean, stdev=sd,
        cv=sd / mean if mean else math.nan, min=float(x.min()), max=float(x.max()),
        mad=float(sps.median_abs_deviation(x)), outliers=outliers)


@dataclass
class Comparison:
    metric: str
    baseline: str
    candidate: str
    ratio: float  # median(candidate) / median(baseline)
    ci_low: float
    ci_high: float
    p_value: float | None  # adjusted across the result set once compare_result has run
    verdict: str  # faster | slower | equivalent | inconclusive
    runs_needed: int | None = None  # for inconclusive: runs per configuration likely to decide
    n_baseline: int = 0
    n_candidate: int = 0
    deterministic: bool = False
    paired: bool = False
    cell: str = "{}"
    raw_p_value: float | None = None
    base_median: float = math.nan
    cand_median: float = math.nan
    threshold: float = 0.01

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["change_pct"] = self.change_pct
        return d


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    # Counts can be zero (no migrations in most runs): 0/0 is "no change", x/0 is unbounded.
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.median(b, axis=axis) / np.median(a, axis=axis)
    return np.where(np.isnan(r), 1.0, r)


def ratio_ci(base: np.ndarray, cand: np.ndarray, paired: bool,
             n_resamples: int = 2000, seed: int = 12345) -> tuple[float, float]:
    """95% percentile-bootstrap CI of median(cand)/median(base)."""
    if np.all(base == base[0]) and np.all(cand == cand[0]):
        r = float(_ratio_of_medians(base[:1], cand[:1]))
        return r, r
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # scipy warns on degenerate (all-equal) resamples
        res = sps.bootstrap((base, cand), _ratio_of_medians, paired=paired, vectorized=True,
                            n_resamples=n_resamples, confidence_level=CONFIDENCE,
                            method="percentile", rng=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    # A zero median in some resamples makes the ratio unbounded: say so rather than NaN.
    return (0.0 if math.isnan(lo) else lo), (math.inf if math.isnan(hi) else hi)


def p_value(base: np.ndarray, cand: np.ndarray, paired: bool) -> float:
    """Two-sided p-value for "the two configurations differ".

    Timings are positive and skewed, so the test runs on their logarithms: a paired t-test of
    the log-ratios when runs were interleaved in rounds, else Welch's t-test.  Rank tests have a
    floor on small samples (Wilcoxon with 8 pairs cannot go below 0.008), which would make any
    multiple-comparison correction hopeless; the CI of the ratio of medians, which the verdict
    also requires, keeps outliers from deciding alone.  Counts that can be zero fall back to
    rank tests on the raw values.
    """
    if np.all(base == base[0]) and np.all(cand == cand[0]):
        return 1.0 if base[0] == cand[0] else 0.0
    with np.errstate(all="ignore"):
        if min(base.min(), cand.min()) > 0:
            la, lb = np.log(base), np.log(cand)
            if paired:
                p = sps.ttest_rel(lb, la).pvalue
            else:
                p = sps.ttest_ind(lb, la, equal_var=False).pvalue
        elif paired:
            d = cand - base
            p = 1.0 if np.all(d == 0) else sps.wilcoxon(d).pvalue
        else:
            p = sps.mannwhitneyu(cand, base, alternative="two-sided").pvalue
    return 1.0 if math.isnan(p) else float(p)


def decide(ratio: float, lo: float, hi: float, p: float | None, threshold: float,
           higher_is_better: bool, deterministic: bool) -> str:
    if deterministic:
        if ratio == 1.0:
            return "equivalent"
        worse = ratio > 1.0
    else:
        if lo >= 1.0 - threshold and hi <= 1.0 + threshold:
            return "equivalent"
        if p is None or p >= ALPHA:
            return "inconclusive"
        if lo > 1.0 + threshold:
            worse = True
        elif hi < 1.0 - threshold:
            worse = False
        else:
            return "inconclusive"
    if higher_is_better:
        worse = not worse
    return "slower" if worse else "faster"


def runs_needed(n: int, ratio: float, lo: float, hi: float, threshold: float,
                cap: int = 100_000) -> int | None:
    """Runs per configuration that would likely decide an inconclusive comparison.

    The CI's half-width shrinks as 1/sqrt(n); the verdict needs it below the distance between
    the observed ratio and the nearer edge of the +-threshold band.
    """
    half = (hi - lo) / 2
    margin = abs(abs(ratio - 1.0) - threshold)
    if n <= 0 or half <= 0 or not math.isfinite(half):
        return None
    if margin < 1e-12:
        return cap
    return min(cap, max(n + 1, math.ceil(n * (half / margin) ** 2)))


def compare_samples(base: Sequence[float], cand: Sequence[float], *, threshold: float = 0.01,
                    deterministic: bool = False, higher_is_better: bool = False,
                    paired: bool = False, metric: str = "", baseline: str = "A",
                    candidate: str = "B") -> Comparison:
    a, b = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return Comparison(metric, baseline, candidate, math.nan, math.nan, math.nan, None,
                          "inconclusive", None, len(a), len(b), threshold=threshold)
    paired = paired and len(a) == len(b) and len(a) >= 2
    med_a, med_b = float(np.median(a)), float(np.median(b))
    # Samples that never vary (a deterministic metric, or a count the workload reports) are
    # compared exactly.
    exact = bool(np.all(a == a[0]) and np.all(b == b[0]) and (deterministic or len(a) >= 3))
    if med_a == 0:
        ratio = 1.0 if med_b == 0 else math.inf
    else:
        ratio = med_b / med_a
    if exact:
        lo = hi = ratio
        p = None
    elif len(a) < 2 or len(b) < 2 or min(a.min(), b.min()) < 0:
        lo = hi = math.nan
        p = None
    else:
        lo, hi = ratio_ci(a, b, paired)
        p = p_value(a, b, paired)
    verdict = decide(ratio, lo, hi, p, threshold, higher_is_better, bool(exact))
    if not exact and math.isnan(lo):
        verdict = "inconclusive"
    need = (runs_needed(min(len(a), len(b)), ratio, lo, hi, threshold)
            if verdict == "inconclusive" and not math.isnan(lo) else None)
    return Comparison(metric, baseline, candidate, ratio, lo, hi, p, verdict, need, len(a),
                      len(b), bool(exact), paired, raw_p_value=p, base_median=med_a,
                      cand_median=med_b, threshold=threshold)


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment (scipy has only BH/BY; this is four lines)."""
    arr = np.asarray(p, dtype=float)
    order = np.argsort(arr)
    m = len(arr)
    adj = np.maximum.accumulate((m - np.arange(m)) * arr[order]).clip(max=1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def adjust(p: Sequence[float], correction: str) -> np.ndarray:
    if len(p) == 0:
        return np.asarray([], dtype=float)
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        return sps.false_discovery_control(np.asarray(p, dtype=float), method="bh")
    if correction == "none":
        return np.asarray(p, dtype=float)
    raise ValueError(f"unknown correction {correction!r} (holm, bh, none)")


CORRECTION_NAMES = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (FDR)",
                    "none": "none"}


def is_paired(rs: ResultSet, cell: str) -> bool:
    """Runs were interleaved in rounds within a cell when its configurations alternate."""
    return rs.settings.get("interleaved", False) and len(rs.configurations_in(cell)) > 1


def compare_result(rs: ResultSet, metrics: list[str] | None = None, *, threshold: float = 0.01,
                   correction: str = "holm") -> list[Comparison]:
    """Every configuration against its cell's baseline, per metric, with adjusted p-values."""
    out: list[Comparison] = []
    for cell in rs.cells():
        base = rs.baseline_in(cell)
        if base is None:
            continue
        paired = is_paired(rs, cell)
        for cfg in rs.configurations_in(cell):
            if cfg is base:
                continue
            for m in metrics if metrics is not None else list(rs.metrics):
                info = rs.metrics.get(m)
                a, b = base.samples(m), cfg.samples(m)
                if not a or not b:
                    continue
                c = compare_samples(
                    a, b, threshold=threshold, paired=paired, metric=m, baseline=base.name,
                    candidate=cfg.name, deterministic=bool(info and info.deterministic),
                    higher_is_better=bool(info and info.higher_is_better))
                c.cell = cell
                out.append(c)
    tested = [c for c in out if c.raw_p_value is not None]
    if tested:
        adjusted = adjust([c.raw_p_value for c in tested if c.raw_p_value is not None],
                          correction)
        info_of = rs.metrics
        for c, p in zip(tested, adjusted, strict=True):
            c.p_value = float(p)
            c.verdict = decide(c.ratio, c.ci_low, c.ci_high, c.p_value, threshold,
                               bool(info_of.get(c.metric) and info_of[c.metric].higher_is_better),
                               False)
            c.runs_needed = (runs_needed(min(c.n_baseline, c.n_candidate), c.ratio, c.ci_low,
                                         c.ci_high, threshold)
                             if c.verdict == "inconclusive" else None)
    return out
