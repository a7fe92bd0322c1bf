"""Statistics: summaries with confidence intervals, A/B comparisons with verdicts, families of
comparisons, the adaptive stop rule's levels, and bisect's step rule.  They read samples and the
result sets that hold them (perflab.model) and write nothing: no store, no files, no printing.

Choices (see docs/statistics.md, where the simulations behind them are reported):

- **One estimand per comparison, one interval decides.**  When the runs were interleaved in
  rounds (the runner's default), the comparison is the location of the per-round log-ratios
  d_i = log(cand_i) - log(base_i); otherwise (``compare --from-db``: not interleaved) it is the
  difference of the locations of log(cand) and log(base).  The location is a trimmed mean
  (default 20% each side, but never below 6 runs kept), the mean, or the median
  (``--estimator``).  The reported ratio is
  exp(location); its CI is the interval of that same location, and the p-value is derived from
  the same statistic, so the test and the interval cannot disagree.
- **Intervals.**  Trimmed mean / mean: Tukey-McLaughlin trimmed t (one sample of log-ratios,
  winsorised variance, df = h - 1) or Yuen-Welch (two samples; the same test as
  ``scipy.stats.ttest_ind(trim=...)``), both widened for runs correlated in time: variance x
  the finite-n AR(1) factor of r, the lag-1 autocorrelation in run order: up to
  SERIAL_POOL_MAX_RUNS runs an upper bound of the one pooled over the comparison's family
  (its metric across the result's cells: pool_serial), beyond them in a family the larger of
  its own and that bound; otherwise its own (serial_correlation)
  from 20 runs, or 0.8 below them ("too few runs to rule out drift"): A/A at most 3% false
  under AR(1) lag-1 up to 0.8 at 6-40 runs, pooled or not.
  Asymmetric trimming (``trim:LOW:HIGH``) uses the
  same formulas with LOW and HIGH winsorised proportions.  Median, interleaved: the
  order-statistic interval of the median log-ratio (the sign test inverted: exact,
  distribution-free).  Median, not interleaved: a percentile bootstrap of the difference of
  median logs (10,000 resamples, fixed seed), its p-value read from the same bootstrap
  distribution.  By simulation (docs/statistics.md) the 20% trimmed mean keeps 94-95% coverage
  from n=6 and, with 5% outlier runs, detects +5% at n=10 in 81% of trials against 40% for the
  mean and 64% for the median: it is the default.  Where trimming leaves no spread but the
  runs differ (tied counts), the median's intervals above are used: never a zero-width one.
- **Verdict from one interval against a band.**  With band [1-T, 1+T] on the ratio: the whole
  CI above 1+T -> the metric went up (slower for times, larger for memory and counts); below
  1-T -> down; inside the band -> "equivalent"; otherwise "inconclusive".  The CI is computed
  at the comparison's adjusted level alpha_eff (below).  p_value is the smallest alpha at which
  that CI makes a claim (above, below or inside the band): claim <=> p_value < alpha.
- **At least 6 runs per configuration** for a statistical verdict (and at least 6 left after
  trimming); fewer gives "inconclusive" with note "too few runs".
- **Exact comparisons** only for metrics declared deterministic (valgrind counts): the
  difference is compared with the band too.  A baseline of 0 has no ratio: the absolute
  difference is reported and any non-zero change is beyond the band.  Data that cannot be
  logged (zeros, negatives) is compared on the difference scale with the band T x |baseline|.
- **Families.**  The primary metric is one family across the whole result (every cell and
  configuration), confirmatory (Holm by default, BH or none on request); all the other
  metrics' comparisons are one exploratory family (BH), so counters never dilute the primary
  and an A/A table holds a false exploratory claim in at most about 5% of tables.  For a
  comparison with raw p and adjusted p_adj, the CI is shown at level 1 - alpha_eff with
  alpha_eff = alpha_look * p / p_adj (Bonferroni: alpha/m; Holm: the step's level or
  stricter; BH: the FCR-adjusted level of Benjamini-Yekutieli), so the interval decides exactly
  when the adjusted p does.
- **Looks.**  Adaptive measuring looks at the data on a fixed geometric schedule
  (look_schedule); alpha is spent over the looks by one Hwang-Shih-DeCani function
  (spending_levels: strict early), the look where measuring ends getting what the looks
  before it left (look_level), so the looks taken spend alpha at most (the union bound: valid
  whatever the correlation between looks).  The result is judged at the level of the look it
  stopped at (Plan.level) ever after; a suite's cells split alpha evenly over the looks.
  bisect's rounds spend by the same function.
- **The stop rule** (stop_check) judges the primary family as compare_result will (the pooled
  lag-1 widening, the plan's correction, the look's level) and stops when every comparison
  is decided or the undecided ones cannot be decided within the budget (decidable: a
  conditional-power futility bound); futility leaves those inconclusive and claims nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab import notes as said
from perflab.format import fmt_count, fmt_fixed, fmt_share, fmt_value
from perflab.judging import (
    ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_ESTIMATOR,
    DEFAULT_THRESHOLD,
    MIN_RUNS,
    SERIAL_MIN_RUNS,
    SERIAL_POOL_MAX_RUNS,
    SERIAL_POOL_PAIRS,
    SERIAL_POOL_Z,
    SERIAL_RHO_MAX,
    Band,
    Estimator,
    Plan,
    parse_estimator,
    trim_counts,
)
from perflab.metrics import (
    BAND_KINDS,
    WORK_KEYS,
    MetricInfo,
    is_result_key,
    measures_elapsed,
    metric_family,
    metric_kind,
    verdict_word,
)
from perflab.model import Configuration, ResultSet, canonical_params

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


@functools.cache
def _special() -> Any:
    """scipy.special, imported on first use (0.2 s, of the 0.56 s perflab.stats would take
    with scipy.stats): `perflab stat -r 1` and a report that only reads figures compute no
    interval, so they do not load it.  Nothing here imports scipy.stats (0.35 s more): the
    binomial ranks of the median's CI are exact integers and Benjamini-Hochberg a few lines
    of numpy."""
    from scipy import special

    return special

CONFIDENCE = 0.95
MIN_RUNS_FOR_CI = 6  # order-statistic 95% CI of a median needs n >= 6
BOOT_RESAMPLES = 10_000
TOO_FEW = "too few runs"
# The mark of a claim on a metric other than the primary one (Comparison.label).
EXPLORATORY = "exploratory"
RUNS_CAP = 100_000  # runs_needed's ceiling: "more than 100,000 runs"


def runs_text(n: int) -> str:
    """Runs that would decide (runs_needed): "at least 148 runs"; its cap is no run count,
    "more than 100,000 runs"."""
    return (f"at least {fmt_count(n)} runs" if n < RUNS_CAP
            else f"more than {fmt_count(RUNS_CAP)} runs")


def trimmed_t(x: np.ndarray, est: Estimator) -> tuple[np.ndarray, np.ndarray, int]:
    """Trimmed mean, its standard error (winsorised variance) and df along the last axis.

    Vectorised over leading axes (the simulation test and the stop rule use it on many rows).
    Hand-written because scipy has the two-sample trimmed test (ttest_ind(trim=)) but not the
    one-sample one, nor asymmetric trimming.
    """
    n = x.shape[-1]
    kl, kh = trim_counts(n, est)
    h = n - kl - kh
    s = np.sort(x, axis=-1)
    tm = s[..., kl:n - kh].mean(axis=-1)
    w = np.clip(s, s[..., kl:kl + 1], s[..., n - kh - 1:n - kh])
    sw = w.std(axis=-1, ddof=1) if n > 1 else np.zeros(x.shape[:-1])
    se = sw * math.sqrt(n) / h
    return tm, se, h - 1


def _yuen_parts(x: np.ndarray, est: Estimator) -> tuple[float, float, int]:
    """Trimmed mean, Yuen's d_j = (n-1) s_w^2 / (h (h-1)), and h for one sample."""
    n = len(x)
    kl, kh = trim_counts(n, est)
    h = n - kl - kh
    s = np.sort(x)
    w = np.clip(s, s[kl], s[n - kh - 1])
    return float(s[kl:n - kh].mean()), float((n - 1) * w.var(ddof=1) / (h * (h - 1))), h


# Below SERIAL_MIN_RUNS runs (judging) an undecided comparison says so.
DRIFT_NOTE = "too few runs to rule out drift"


def serial_correlation(x: np.ndarray, est: Estimator, margin: bool = True) -> float:
    """The lag-1 autocorrelation of ``x`` in run order, as the interval widens for it: the
    series winsorised as the estimator's variance is (an outlying run does not make a
    correlation), the estimate's small-sample bias added back (E[r] ~ rho - (1 + 4 rho) / n,
    Marriott & Pope 1954), raised by half its standard error (about 1 / sqrt(n): too little
    widening costs more than too much, most in the tails the strict levels judge at; not with
    ``margin`` False, where a family's pooled bound is the margin: _rho_for), and kept
    within [0, SERIAL_RHO_MAX]: negative correlation never narrows an interval.  Below
    SERIAL_MIN_RUNS it cannot be estimated: SERIAL_RHO_MAX.  Noise correlated in time (a
    neighbour that comes and goes, a warming cache) makes successive runs alike, so n runs hold
    less information than n independent ones."""
    n = len(x)
    if n < SERIAL_MIN_RUNS:
        return SERIAL_RHO_MAX
    kl, kh = trim_counts(n, est)
    s = np.sort(x)
    w = np.clip(x, s[kl], s[n - kh - 1])
    w = w - w.mean()
    den = float(np.dot(w, w))
    if den <= 0:
        return 0.0
    r = float(np.dot(w[1:], w[:-1])) / den
    raised = 0.5 / math.sqrt(n) if margin else 0.0
    return float(min(SERIAL_RHO_MAX, max(0.0, r + (1 + 4 * r) / n + raised)))


def _lag1(x: np.ndarray, kl: int, kh: int) -> np.ndarray:
    """The lag-1 autocorrelation along the last axis of runs winsorised at ``kl``/``kh`` runs
    a side (as the estimator's variance is), each row about its own mean; 0 for a row without
    spread."""
    n = x.shape[-1]
    s = np.sort(x, axis=-1)
    w = np.clip(x, s[..., kl:kl + 1], s[..., n - kh - 1:n - kh])
    w = w - w.mean(axis=-1, keepdims=True)
    den = np.sum(w * w, axis=-1)
    num = np.sum(w[..., 1:] * w[..., :-1], axis=-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


# The lag-1 correlations the pooled estimate is calibrated over (stats.pool_serial), the
# simulated series per correlation and the seed of a length's simulation (plus the length).
_RHO_GRID = np.linspace(-0.5, 0.98, 75)
_CALIBRATION_SERIES = 3000
_CALIBRATION_SEED = 20261128
# The calibration of every (runs, trimmed low, trimmed high) pool_serial can ask for up to
# SERIAL_POOL_MAX_RUNS under the named estimators (mean, median, trim), precomputed by
# simulate_lag1_calibration (scripts/make_lag1_table.py writes it); a trim:LOW:HIGH of the
# user's own is simulated when first asked for.  Simulating one costs 0.10 s of CPU at 10
# runs and 0.24 s at 19 (0.27 s and 0.38 s as a process's first, its memory new), in every
# process that judges a family of short series (each `results show` of a compared result,
# each look of the stop rule); reading the table
# costs 3 ms once and a lookup 7 us.  Measured with perflab compare, 20 interleaved rounds:
# `results show` of a compare of 4 commands x 10 runs, task_clock 691 -> 602 ms (-13%
# [-17, -9]), page faults -40%; that `compare -r 10` itself, 772 -> 728 ms (-5.7% [-8.6, -2.8]).
LAG1_TABLE = "data/lag1_calibration.npz"


def simulate_lag1_calibration(n: int, trims: Sequence[tuple[int, int]]
                              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The mean and sd of _lag1 over ``n`` runs of Gaussian AR(1) noise, for each lag-1
    correlation of _RHO_GRID, winsorised at each (low, high) of ``trims``: a seeded
    simulation (3,000 series each, the same series for every trim), so the same every time.
    The mean lies well below the correlation at few runs (about -1/n for independent runs)."""
    rng = np.random.default_rng(_CALIBRATION_SEED + n)
    means = np.empty((len(trims), len(_RHO_GRID)))
    sds = np.empty((len(trims), len(_RHO_GRID)))
    # One lag-1 value at a time (the same draws, in the same order, as all at once): 3,000
    # series of n runs, 1 MB at SERIAL_POOL_MAX_RUNS.
    for i, rho in enumerate(_RHO_GRID):
        e = rng.standard_normal((_CALIBRATION_SERIES, n))
        x = np.empty_like(e)
        x[:, 0] = e[:, 0]
        for t in range(1, n):
            x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho ** 2) * e[:, t]
        for j, (kl, kh) in enumerate(trims):
            r = _lag1(x, kl, kh)
            means[j, i], sds[j, i] = r.mean(), r.std()
    return [(np.maximum.accumulate(means[j]), sds[j]) for j in range(len(trims))]


def read_lag1_table(source: Traversable) -> dict[tuple[int, int, int],
                                                  tuple[np.ndarray, np.ndarray]]:
    """The calibrations a table file holds by (runs, low, high); empty where the file is
    missing or unreadable, or was simulated over another grid, series count or seed than
    simulate_lag1_calibration's."""
    try:
        with source.open("rb") as f, np.load(f) as z:
            same = (np.array_equal(z["rho_grid"], _RHO_GRID)
                    and int(z["series"]) == _CALIBRATION_SERIES
                    and int(z["seed"]) == _CALIBRATION_SEED)
            keys, mean, sd = z["keys"], z["mean"], z["sd"]
    except (OSError, KeyError, ValueError):
        return {}
    if not same:
        return {}
    return {(int(n), int(kl), int(kh)): (mean[i], sd[i]) for i, (n, kl, kh) in enumerate(keys)}


@functools.cache
def _lag1_table() -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    """The package's table (LAG1_TABLE), read once."""
    from importlib import resources

    return read_lag1_table(resources.files("perflab").joinpath(LAG1_TABLE))


@functools.cache
def _lag1_calibration(n: int, kl: int, kh: int) -> tuple[np.ndarray, np.ndarray]:
    """simulate_lag1_calibration for ``n`` runs winsorised at ``kl``/``kh``: from the
    precomputed table (_lag1_table), else simulated."""
    found = _lag1_table().get((n, kl, kh))
    return found if found is not None else simulate_lag1_calibration(n, [(kl, kh)])[0]


@dataclass(frozen=True)
class SerialPool:
    """The lag-1 correlation pooled over a family's series: the calibrated estimate, and the
    upper bound the intervals are widened for (within [0, SERIAL_RHO_MAX]); ``longer``: the
    pool of all the family's series where some have more than SERIAL_POOL_MAX_RUNS runs, whose
    bound those are widened for at least (_rho_for)."""

    rho: float
    estimate: float
    series: int
    pairs: int
    longer: SerialPool | None = None


def pool_serial(series: Sequence[np.ndarray], est: Estimator) -> SerialPool | None:
    """The lag-1 correlation of a family of series measured the same way, pooled: each series
    winsorised as the estimator's variance is and centred on its own mean, its lag-1 r; the
    mean r of the series weighted by their lag pairs (n - 1); mapped back through the
    simulated E[r] of AR(1) runs of each series' length (_lag1_calibration: the short-series
    bias, about -(1 + 4 rho) / n, corrected exactly for Gaussian AR(1)); and raised to
    SERIAL_POOL_Z standard errors above it, the standard error the larger of the series'
    spread about the mean r (which grows where the correlation differs between series) and the
    sampling model's.  None below SERIAL_POOL_PAIRS lag pairs in all (series of 3 runs or
    more, with spread)."""
    xs = [np.asarray(x, dtype=float) for x in series]
    xs = [x for x in xs if len(x) >= 3 and np.ptp(x) > 0]
    w = np.asarray([len(x) - 1 for x in xs], dtype=float)
    if w.sum() < SERIAL_POOL_PAIRS:
        return None
    r = np.asarray([float(_lag1(x, *trim_counts(len(x), est))) for x in xs])
    mean_r = np.zeros(len(_RHO_GRID))
    var_r = np.zeros(len(_RHO_GRID))
    for x, wj in zip(xs, w, strict=True):
        m, sd = _lag1_calibration(len(x), *trim_counts(len(x), est))
        mean_r += wj * m
        var_r += wj ** 2 * sd ** 2
    total = float(w.sum())
    mean_r, sd_model = mean_r / total, np.sqrt(var_r) / total
    r_bar = float(np.dot(w, r) / total)
    estimate = float(np.interp(r_bar, mean_r, _RHO_GRID))
    k = len(xs)
    se_spread = (math.sqrt(float(np.dot(w ** 2, (r - r_bar) ** 2)) * k / (k - 1)) / total
                 if k > 1 else 0.0)
    se = max(se_spread, float(np.interp(estimate, _RHO_GRID, sd_model)))
    upper = float(np.interp(r_bar + SERIAL_POOL_Z * se, mean_r, _RHO_GRID))
    return SerialPool(min(SERIAL_RHO_MAX, max(0.0, upper)), estimate, k, int(total))


def serial_series(a: np.ndarray, b: np.ndarray, paired: bool) -> list[np.ndarray]:
    """The series in run order whose lag-1 correlation widens a comparison's interval, on the
    scale locate works on: the per-round differences when paired, else each sample."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return []
    if min(a.min(), b.min()) > 0:
        a, b = np.log(a), np.log(b)
    if paired and len(a) == len(b):
        return [b - a]
    return [a, b]


def family_pools(samples: Sequence[tuple[str, Sequence[float], Sequence[float], bool]],
                 est: Estimator) -> dict[tuple[str, bool], SerialPool]:
    """The pooled lag-1 correlation of each family of comparisons measured the same way, keyed
    by (family, paired): ``samples`` holds each comparison's family (its metric family), its
    baseline and candidate runs in run order, and whether they are paired by round.  A family
    without a pool (too few lag pairs) is left out: its comparisons keep the single-series
    rule, and so is a family of one comparison.  Where some series have more than
    SERIAL_POOL_MAX_RUNS runs, the pool of all the family's series is the pool's ``longer``
    (the pool itself where no series is shorter, or the shorter ones hold too few lag pairs):
    those are widened for at least its bound (_rho_for)."""
    series: dict[tuple[str, bool], list[np.ndarray]] = {}
    count: dict[tuple[str, bool], int] = {}
    for fam, a, b, paired in samples:
        count[(fam, paired)] = count.get((fam, paired), 0) + 1
        series.setdefault((fam, paired), []).extend(
            serial_series(np.asarray(a, dtype=float), np.asarray(b, dtype=float), paired))
    # One comparison is no family (its two unpaired samples included): the single-series rule.
    # The series of up to SERIAL_POOL_MAX_RUNS runs are widened for the bound pooled over
    # them; a longer one for the larger of its own estimate and the bound pooled over all the
    # family's series (its length's calibration simulated once a process: 0.2 s at 30 runs,
    # 0.45 s at 60, 1.4 s at 200).
    pools: dict[tuple[str, bool], SerialPool] = {}
    for key, xs in series.items():
        if count[key] < 2:
            continue
        short = [x for x in xs if len(x) <= SERIAL_POOL_MAX_RUNS]
        pool = pool_serial(short, est) if short else None
        longer = pool_serial(xs, est) if len(short) < len(xs) else None
        pool = pool or longer
        if pool is not None:
            pools[key] = replace(pool, longer=longer)
    return pools


def pooled_serial_notes(comps: Sequence[Comparison]) -> list[said.Note]:
    """What the comparisons widened for a pooled lag-1 correlation say: one note, each metric
    family's bound and the series it was pooled over ("lag-1 correlation pooled over 30
    series: 0.12")."""
    seen: dict[str, Location] = {}
    for c in comps:
        if c.loc is not None and c.loc.pooled and metric_family(c.metric) not in seen:
            seen[metric_family(c.metric)] = c.loc
    if not seen:
        return []
    return [said.serial_pooled({fam: (loc.pooled, fmt_fixed(loc.serial, 2))
                                for fam, loc in seen.items()})]


def _ar1_mean_factor(rho: float, n: int) -> float:
    """Var(mean of n runs) under AR(1) noise of lag-1 correlation ``rho``, in units of
    sigma^2 / n: 1 + 2 sum_k (1 - k/n) rho^k."""
    k = np.arange(1, n)
    return float(1 + 2 * np.sum((1 - k / n) * rho ** k))


def _inflation(rho: float, n: int) -> float:
    """How many times the variance of a mean of ``n`` runs under AR(1) noise of lag-1
    correlation ``rho`` exceeds its estimate s^2 / n from the same runs: the mean's variance is
    f sigma^2 / n, and the runs' spread about their own mean underestimates sigma^2 by
    (n - f) / (n - 1) (successive runs alike), so f (n - 1) / (n - f), exactly, for any n."""
    if rho <= 0 or n < 2:
        return 1.0
    f = _ar1_mean_factor(rho, n)
    return f * (n - 1) / max(n - f, 1e-9)


def _serial_df(df: float, rho: float, n: int, assumed: bool) -> float:
    """The widened interval's df: df / f (f the mean's AR(1) variance factor: the runs'
    effective number) for an estimated correlation (its own, or pooled: at least the df of the
    SERIAL_RHO_MAX rule below SERIAL_MIN_RUNS); df / sqrt(f) where
    SERIAL_RHO_MAX is assumed (fewer than SERIAL_MIN_RUNS, no family), which simulation shows
    conservative there (the widened t of AR(1) 0.8 runs needs df 3.75 at 6-10 runs, 5-7 at
    12-20; this gives 2.5-4)."""
    f = _ar1_mean_factor(rho, n)
    if assumed:
        return max(1.0, df / math.sqrt(f))
    if n < SERIAL_MIN_RUNS:
        # A family's pooled bound: never fewer df than the bound SERIAL_RHO_MAX assumed for
        # one series, so a family's interval is never wider than its series' alone.
        return max(1.0, df / f, df / math.sqrt(_ar1_mean_factor(SERIAL_RHO_MAX, n)))
    return max(1.0, df / f)


def _widened(se: float, df: float, rho: float, n: int, assumed: bool) -> tuple[float, float]:
    """A mean's standard error and df under AR(1) noise of lag-1 correlation ``rho``: the
    variance x _inflation, the df as _serial_df."""
    return se * math.sqrt(_inflation(rho, n)), _serial_df(df, rho, n, assumed)


# --- the location of a comparison and its interval at any level --------------------------------

# Student's t through scipy.special: the same functions scipy.stats.t calls, without its
# per-call overhead (a suite report computes thousands of intervals).
def _t_sf(x: float, df: float) -> float:
    return float(_special().stdtr(df, -x)) if math.isfinite(df) else float(_special().ndtr(-x))


def _t_cdf(x: float, df: float) -> float:
    return float(_special().stdtr(df, x)) if math.isfinite(df) else float(_special().ndtr(x))


def _t_isf(a: float, df: float) -> float:
    return float(-_special().stdtrit(df, a)) if math.isfinite(df) else float(-_special().ndtri(a))


_T_METHODS = ("trimmed-t", "yuen")  # a t interval: est +- q * se


@dataclass
class Location:
    """An estimate of the comparison's location on its working scale (log or difference), with
    what is needed to give its two-sided interval at any level and the matching p-values."""

    method: str  # trimmed-t | yuen | sign | bootstrap | exact
    est: float
    se: float = 0.0
    df: float = math.inf
    sorted_values: np.ndarray | None = None  # sign: sorted d; bootstrap: sorted distribution
    no_equivalence: bool = False  # ties: a zero-width interval of runs that differ (_tied)
    # Serial correlation the t interval was widened for (serial_correlation): the lag-1
    # correlation used (the larger of the two samples' when not interleaved), and the factor.
    serial: float = 0.0
    widened: float = 1.0
    # Too few runs to estimate the correlation: widened for SERIAL_RHO_MAX (DRIFT_NOTE).
    assumed_serial: bool = False
    # Widened for the correlation pooled over this many series of its family (pool_serial).
    pooled: int = 0

    @property
    def zero_width(self) -> bool:
        """Exact, or a t interval with no spread (every difference equal): one point."""
        return self.method == "exact" or (self.method in _T_METHODS and self.se == 0)

    def interval(self, alpha: float) -> tuple[float, float]:
        if self.zero_width:
            return self.est, self.est
        if self.method in _T_METHODS:
            q = _t_isf(alpha / 2, self.df)
            return self.est - q * self.se, self.est + q * self.se
        v = self.sorted_values
        assert v is not None
        n = len(v)
        if self.method == "sign":
            ks = np.arange(1, n // 2 + 1)
            ok = 2 * _special().bdtr(ks - 1, n, 0.5) < alpha
            if not ok.any():
                return -math.inf, math.inf
            k = int(ks[ok].max())
            return float(v[k - 1]), float(v[n - k])
        j = max(0, math.ceil(alpha / 2 * n) - 1)
        return float(v[j]), float(v[n - 1 - j])

    def p_above(self, delta: float) -> float:
        """One-sided p for H0: location <= delta (small when the location is above delta).

        Defined so that interval(alpha)[0] > delta  <=>  2 * p_above(delta) < alpha."""
        if self.zero_width:
            return 0.0 if self.est > delta else 1.0
        if self.method in _T_METHODS:
            return _t_sf((self.est - delta) / self.se, self.df)
        v = self.sorted_values
        assert v is not None
        if self.method == "sign":
            c = int(np.sum(v > delta))
            return float(_special().bdtrc(c - 1, len(v), 0.5))
        return float(np.sum(v <= delta) / len(v))

    def p_below(self, delta: float) -> float:
        """One-sided p for H0: location >= delta."""
        if self.zero_width:
            return 0.0 if self.est < delta else 1.0
        if self.method in _T_METHODS:
            return _t_cdf((self.est - delta) / self.se, self.df)
        v = self.sorted_values
        assert v is not None
        if self.method == "sign":
            c = int(np.sum(v < delta))
            return float(_special().bdtrc(c - 1, len(v), 0.5))
        return float(np.sum(v >= delta) / len(v))

    def claim_p(self, lo_edge: float, hi_edge: float) -> float:
        """The smallest alpha at which interval(alpha) lies wholly above hi_edge, below lo_edge
        or inside [lo_edge, hi_edge]; a claim is made at level alpha iff this is < alpha."""
        if self.zero_width:
            # A zero-width interval (every difference equal) makes its claim at any level:
            # beyond the band, or inside it, edges included, as _verdict_from reads it.
            return 0.0
        beyond = 2 * min(self.p_above(hi_edge), self.p_below(lo_edge))
        inside = 1.0 if self.no_equivalence else \
            2 * max(self.p_above(lo_edge), self.p_below(hi_edge))
        return float(min(1.0, beyond, inside))


def _rho_for(x: np.ndarray, est: Estimator, pool: SerialPool | None) -> tuple[float, int]:
    """The lag-1 correlation a sample's interval is widened for, and the series it was pooled
    over (0: its own estimate, or SERIAL_RHO_MAX assumed): its family's pooled bound up to
    SERIAL_POOL_MAX_RUNS runs; beyond them, in a family, the larger of its own estimate (its
    bias added back, not raised: the family's bound is the margin) and the bound pooled over
    all the family's series (pool.longer); else its own from SERIAL_MIN_RUNS runs."""
    if pool is not None and len(x) <= SERIAL_POOL_MAX_RUNS:
        return pool.rho, pool.series
    if pool is not None and pool.longer is not None:
        return max(serial_correlation(x, est, margin=False), pool.longer.rho), 0
    return serial_correlation(x, est), 0


def locate(a: np.ndarray, b: np.ndarray, paired: bool, est: Estimator,
           scale: str, pool: SerialPool | None = None) -> Location:
    """The comparison's location (cand vs base) on ``scale`` ('log' or 'diff'); ``pool``: the
    lag-1 correlation of its family (family_pools), as _rho_for reads it."""
    if scale == "log":
        la, lb = np.log(a), np.log(b)
    else:
        la, lb = a, b
    # Where trimming leaves no spread (tied runs: counts, or every round but a few outlying
    # ones equal) while the runs do differ, a t interval would have zero width and claim a
    # certainty the data do not give; the order statistics decide instead (sign test paired,
    # bootstrap of the medians unpaired).  Their estimate is the trimmed mean's here: the kept
    # runs tie, and the median is among them.  Runs that are all equal (every round the same
    # difference) are a zero-width interval of their own, whatever the estimator.
    if paired:
        d = lb - la
        if np.ptp(d) == 0:
            return Location("trimmed-t", float(d[0]), 0.0, math.inf)
        if est.kind != "median":
            tm, se, df = trimmed_t(d, est)
            if se > 0:
                rho, pooled = _rho_for(d, est, pool)
                assumed = len(d) < SERIAL_MIN_RUNS and not pooled
                wse, wdf = _widened(float(se), float(df), rho, len(d), assumed)
                return Location("trimmed-t", float(tm), wse, wdf, serial=rho,
                                widened=wse / float(se), assumed_serial=assumed,
                                pooled=pooled)
        return _tied(Location("sign", float(np.median(d)), sorted_values=np.sort(d)))
    if np.ptp(la) == 0 and np.ptp(lb) == 0:
        return Location("yuen", float(lb[0] - la[0]), 0.0, math.inf)
    if est.kind != "median":
        ma, da, ha = _yuen_parts(la, est)
        mb, db, hb = _yuen_parts(lb, est)
        se = math.sqrt(da + db)
        if se > 0:
            # Each sample widened for its own serial correlation (runs in run order).
            (ra, pa), (rb, pb) = _rho_for(la, est, pool), _rho_for(lb, est, pool)
            sa = len(la) < SERIAL_MIN_RUNS and not pa
            sb = len(lb) < SERIAL_MIN_RUNS and not pb
            fa, fb = _inflation(ra, len(la)), _inflation(rb, len(lb))
            da, db = da * fa, db * fb
            wse = math.sqrt(da + db)
            df = (da + db) ** 2 / (da ** 2 / _serial_df(ha - 1, ra, len(la), sa)
                                   + db ** 2 / _serial_df(hb - 1, rb, len(lb), sb))
            return Location("yuen", mb - ma, wse, df, serial=max(ra, rb), widened=wse / se,
                            assumed_serial=sa or sb, pooled=max(pa, pb))
    rng = np.random.default_rng(12345)
    ia = rng.integers(0, len(la), (BOOT_RESAMPLES, len(la)))
    ib = rng.integers(0, len(lb), (BOOT_RESAMPLES, len(lb)))
    boot = np.median(lb[ib], axis=1) - np.median(la[ia], axis=1)
    return _tied(Location("bootstrap", float(np.median(lb) - np.median(la)),
                          sorted_values=np.sort(boot)))


def _tied(loc: Location) -> Location:
    """Runs that differ, yet whose order-statistic interval has zero width at the nominal
    level (a count that is 0, or 1, in most rounds): it may still show a change beyond the
    band, but it cannot certify "equivalent" (a baseline of all 1s against 2 in 3 of 20
    rounds would read "equivalent CI [1.000, 1.000]"; a mostly-zero count's 5x drop, too).
    Intervals at a stricter level are wider, so the nominal one decides."""
    lo, hi = loc.interval(ALPHA)
    loc.no_equivalence = lo == hi
    return loc


def center(x: np.ndarray, est: Estimator) -> float:
    """The estimator applied to one configuration's runs."""
    if est.kind == "median":
        return float(np.median(x))
    n = len(x)
    kl, kh = trim_counts(n, est)
    return float(np.sort(x)[kl:n - kh].mean())


# --- summaries ----------------------------------------------------------------------------------

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
    estimator: str = "median"  # what `center` is; ci_low/ci_high are its 95% CI
    center: float = math.nan

    @property
    def rel_halfwidth(self) -> float:
        """Half the CI's width relative to the centre (inf while the CI is unknown)."""
        c = self.median if math.isnan(self.center) else self.center
        if not c or math.isnan(self.ci_low) or math.isnan(self.ci_high):
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / abs(c)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_ci(x: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    if len(x) < MIN_RUNS_FOR_CI:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    lo, hi = _median_ci_ranks(len(x), confidence)
    s = np.sort(x)
    return (float(s[lo]) if isinstance(lo, int) else lo,
            float(s[hi]) if isinstance(hi, int) else hi)


@functools.lru_cache(maxsize=1024)
def _median_ci_ranks(n: int, confidence: float) -> tuple[int | float, int | float]:
    """The order statistics (0-based ranks; nan where there is none) that bound the median's
    CI for n samples: scipy's quantile_test interval, which picks them from n alone, as
    Binomial(n, 1/2) quantiles: low = ppf(tail) - 1, high = isf(tail).

    Hand-written in exact integers (cdf(k) = sum of C(n, i), i <= k, over 2^n; the float tail
    is an exact fraction) rather than through scipy.stats.binom or scipy.special.bdtr, whose
    imports (0.35 s, 0.2 s) `perflab stat` would otherwise pay for this one pair of integers
    alone.  Equal to quantile_test's ranks for every n and level tested
    (tests/core/test_median_ci.py).  About 30 ms at n = 10,000, 1 s at 100,000 runs; cached,
    since detect summarises every point of every series."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not between 0 and 1")
    # The float tail is num / den exactly; counts are scaled by den to compare in integers.
    num, den = ((1 - confidence) / 2).as_integer_ratio()
    total = den << n  # 2^n equally likely signs
    tail = num << n
    low: int | None = None
    count, cdf = den, 0  # den x C(n, k), and den x the sum of C(n, i) for i <= k
    for k in range(n + 1):
        cdf += count
        if low is None and cdf >= tail:  # ppf: the first k with cdf(k) >= tail
            low = k - 1
        if total - cdf <= tail:  # isf: the first k with sf(k) <= tail (sf(n) = 0)
            break
        count = count * (n - k) // (k + 1)
    assert low is not None  # cdf(n) = 2^n >= tail
    return (low if low >= 0 else math.nan), (k if k < n else math.nan)


def summarize(samples: Sequence[float], deterministic: bool = False,
              estimator: Estimator | None = None) -> Summary:
    """Descriptive figures, and the centre with its 95% CI: the median (order statistics) by
    default, or the estimator's (trimmed t; a trimmed mean needs MIN_RUNS left after trimming)."""
    x = np.asarray(samples, dtype=float)
    est = estimator or Estimator("median", 0, 0)
    if len(x) == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0, str(est), nan)
    med = float(np.median(x))
    if est.kind == "median":
        c = med
        if deterministic and np.all(x == x[0]):
            lo = hi = med
        else:
            lo, hi = median_ci(x)
    else:
        c = center(x, est) if est.kept(len(x)) >= 1 else math.nan
        if est.kept(len(x)) < MIN_RUNS:
            lo = hi = math.nan
        else:
            tm, se, df = trimmed_t(x, est)
            q = _t_isf((1 - CONFIDENCE) / 2, df)
            lo, hi = float(tm - q * se), float(tm + q * se)
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    outliers = int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr))) if len(x) >= 4 else 0
    return Summary(
        n=len(x), median=med, ci_low=lo, ci_high=hi, mean=mean, stdev=sd,
        cv=sd / mean if mean else math.nan, min=float(x.min()), max=float(x.max()),
        mad=float(np.median(np.abs(x - np.median(x)))), outliers=outliers, estimator=str(est),
        center=c)


# --- metric words -------------------------------------------------------------------------------

MOVED = ("slower", "faster", "larger", "smaller", "different")


# --- bands (judging.Band: the band of one metric) ---------------------------------------------

@dataclass(frozen=True)
class BandUsed:
    """A band that decided some comparisons: for a whole kind of metric (``name`` = time,
    memory, count, other), or for the metrics of that kind judged against another band."""

    name: str  # a kind, or a metric
    kind: str
    band: Band
    unit: str  # of the absolute part
    metrics: tuple[str, ...]


def bands_used(comps: Sequence[Comparison]) -> list[BandUsed]:
    """The bands these comparisons were judged against (each carries its own: threshold,
    abs_band), by kind of metric: the band most of a kind's metrics had, then each metric of
    that kind that had another one.  What every view prints beside the verdicts."""
    by_kind: dict[str, dict[tuple[float, float, str], list[str]]] = {}
    for c in comps:
        kind = metric_kind(c.unit)
        unit = c.unit if c.abs_band else ""
        ms = by_kind.setdefault(kind, {}).setdefault((c.threshold, c.abs_band, unit), [])
        if c.metric not in ms:
            ms.append(c.metric)
    out: list[BandUsed] = []
    for kind in sorted(by_kind, key=lambda k: (BAND_KINDS + ("other",)).index(k)):
        groups = sorted(by_kind[kind].items(), key=lambda kv: -len(kv[1]))
        for i, ((rel, absolute, unit), ms) in enumerate(groups):
            if i == 0:
                out.append(BandUsed(kind, kind, Band(rel, absolute), unit, tuple(ms)))
            else:
                out += [BandUsed(m, kind, Band(rel, absolute), unit, (m,)) for m in ms]
    return out


# --- comparisons --------------------------------------------------------------------------------

@dataclass
class Comparison:
    metric: str
    baseline: str
    candidate: str
    ratio: float  # exp(location of the log-ratios); nan when the baseline is 0 (see diff)
    ci_low: float  # CI of the ratio at level ci_level
    ci_high: float
    # Once compare_result has run: adjusted within the metric's family and over the plan's
    # looks, so that a claim (up, down, equivalent) is made iff p_value < alpha (0.05).
    p_value: float | None
    verdict: str  # slower | faster | larger | smaller | different | equivalent | inconclusive
    runs_needed: int | None = None  # inconclusive: at least this many runs per configuration
    n_baseline: int = 0
    n_candidate: int = 0
    deterministic: bool = False
    paired: bool = False  # interleaved in rounds; False reads "not interleaved"
    cell: str = "{}"
    raw_p_value: float | None = None
    base_median: float = math.nan
    cand_median: float = math.nan
    threshold: float = DEFAULT_THRESHOLD  # the band's relative part
    abs_band: float = 0.0  # the band's absolute part, in the metric's unit (Band)
    unit: str = ""  # the metric's (MetricInfo.unit)
    estimator: str = str(DEFAULT_ESTIMATOR)
    scale: str = "log"  # log | diff (values that cannot be logged) | exact
    diff: float = math.nan  # absolute change in the metric's unit (candidate - baseline)
    diff_low: float = math.nan
    diff_high: float = math.nan
    ci_level: float = CONFIDENCE
    note: str = ""  # "too few runs", ...
    direction: str = "lower"  # of the metric: lower | higher | none
    family: str = ""  # the family this comparison is adjusted in: its metric, or EXPLORATORY
    correction: str = DEFAULT_CORRECTION
    loc: Location | None = field(default=None, repr=False, compare=False)
    # The values shown beside the change: the baseline's location by the estimator (the
    # band's reference) and the candidate's as the change makes it (base_center x ratio, or
    # + diff), so the two values and the change always agree.  The candidate's own centre
    # can disagree in sign with a paired estimate (runs of two modes: medians 12.93 -> 14.17
    # us beside -14.09%).  Medians where there is no estimate (too few runs, exact counts).
    base_center: float = math.nan
    cand_center: float = math.nan
    # Runs below the metric's resolution (MetricInfo.resolution) on both sides: not judged.
    coarse: bool = False
    # Not the result's primary metric: its family is the exploratory one (BH over every other
    # metric's comparisons, Plan.pool_exploratory), and its claims are marked so in every
    # table (label).
    exploratory: bool = False
    # Baseline and candidate are versions of one program (a command, or one workload at two
    # builds or settings); False between two workloads (eh/cpp vs eh/java), where an up or down
    # verdict is a difference, never a regression or an improvement.
    same_program: bool = True

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    @property
    def moved(self) -> bool:
        return self.verdict in MOVED

    @property
    def regression(self) -> bool:
        """Worse in the metric's direction (never for a metric with no direction)."""
        if not self.moved or self.direction == "none" or not self.same_program:
            return False
        up = self.diff > 0 if math.isnan(self.ratio) else self.ratio > 1
        return up if self.direction == "lower" else not up

    @property
    def improvement(self) -> bool:
        return (self.moved and self.direction != "none" and self.same_program
                and not self.regression)

    @property
    def label(self) -> str:
        """The verdict as printed: with its reason, and 'not interleaved' when unpaired."""
        v = self.verdict
        extra = []
        if self.note:
            extra.append(self.note)
        if v == "inconclusive" and self.runs_needed and not self.note:
            extra.append(runs_text(self.runs_needed))
        if self.moved and self.direction != "none" and self.same_program:
            extra.append("regression" if self.regression else "improvement")
        if self.exploratory and v != "inconclusive":
            extra.append(EXPLORATORY)
        if not self.paired and not self.deterministic and v != "inconclusive":
            extra.append("not interleaved")
        return f"{v} ({', '.join(extra)})" if extra else v

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("loc", None)
        d["change_pct"] = self.change_pct
        d["regression"] = self.regression
        return d


def _band(scale: str, threshold: float, base_loc: float,
          absolute: float = 0.0) -> tuple[float, float]:
    return Band(threshold, absolute).edges(scale, base_loc)


def _verdict_from(lo: float, hi: float, band: tuple[float, float], info: MetricInfo | None,
                  exact: bool = False) -> str:
    b_lo, b_hi = band
    if exact:
        est = lo
        if b_lo <= est <= b_hi:
            return "equivalent"
        return verdict_word(info, est > b_hi)
    if lo > b_hi:
        return verdict_word(info, True)
    if hi < b_lo:
        return verdict_word(info, False)
    if lo >= b_lo and hi <= b_hi:
        return "equivalent"
    return "inconclusive"


def _set_interval(c: Comparison, alpha_eff: float, info: MetricInfo | None) -> None:
    """Fill the CI at level 1 - alpha_eff and the verdict it gives."""
    loc = c.loc
    assert loc is not None
    lo, hi = loc.interval(alpha_eff)
    c.ci_level = 1 - alpha_eff
    band = _band(c.scale, c.threshold, c.base_center, c.abs_band)
    c.verdict = _verdict_from(lo, hi, band, info)
    if c.verdict == "equivalent" and loc.no_equivalence:
        c.verdict = "inconclusive"  # as claim_p reads it: ties certify no equivalence
    if c.scale == "log":
        c.ratio = math.exp(loc.est)
        c.ci_low, c.ci_high = math.exp(lo), math.exp(hi)
        c.cand_center = c.base_center * c.ratio
        c.diff = c.base_center * (c.ratio - 1)
        c.diff_low, c.diff_high = c.base_center * (c.ci_low - 1), c.base_center * (c.ci_high - 1)
    else:
        # Every metric is >= 0 (times, counts, rates): the candidate's centre cannot be below
        # 0, so the ratio's lower end stops at 0, -100% (it read -119.6% for a count).
        c.diff, c.diff_low, c.diff_high = loc.est, lo, hi
        c.cand_center = c.base_center + loc.est
        if c.base_center:
            c.ratio = 1 + loc.est / abs(c.base_center)
            c.ci_low = max(0.0, 1 + lo / abs(c.base_center))
            c.ci_high = 1 + hi / abs(c.base_center)
        else:
            c.ratio = c.ci_low = c.ci_high = math.nan
    if c.coarse:
        c.verdict = "inconclusive"
    if c.verdict == "inconclusive" and not c.coarse:
        c.runs_needed = runs_needed(min(c.n_baseline, c.n_candidate), loc, band, alpha_eff)
        if loc.assumed_serial and (not c.note or c.note.startswith(DRIFT_NOTE)):
            # The plan's runs are at least those that estimate the correlation.
            c.runs_needed = max(SERIAL_MIN_RUNS, c.runs_needed or 0)
            c.note = f"{DRIFT_NOTE}: at least {c.runs_needed} runs"
    else:
        c.runs_needed = None
        if c.note.startswith(DRIFT_NOTE):
            c.note = ""


def runs_needed(n: int, loc: Location, band: tuple[float, float], alpha: float,
                power: float = 0.8, cap: int = 100_000) -> int | None:  # cap = RUNS_CAP
    """At least how many runs per configuration give ~80% power to decide, at level ``alpha``
    (the adjusted level), if the true effect is the observed one shrunk toward the band.

    The observed distance to the nearer band edge is shrunk by half a standard error (at most
    halved): inconclusive cases are selected for small observed distances, and planning on the
    raw distance would aim at a coin flip.  The per-run spread is se * sqrt(n).  None when
    the noise is unknown."""
    if n <= 1 or loc.method == "exact":
        return None
    se = loc.se
    if loc.method in ("sign", "bootstrap"):
        # Read the spread off the 95% interval (normal approximation).
        lo, hi = loc.interval(0.05)
        se = (hi - lo) / (2 * 1.96) if math.isfinite(hi - lo) else math.nan
    if not math.isfinite(se) or se <= 0:
        return None
    b_lo, b_hi = band
    e = loc.est
    if b_lo <= e <= b_hi:
        margin = min(e - b_lo, b_hi - e)
    else:
        margin = e - b_hi if e > b_hi else b_lo - e
    margin = max(margin - 0.5 * se, margin / 2)
    if margin <= 0:
        return cap
    sd = se * math.sqrt(n)
    z = float(-_special().ndtri(alpha / 2) + _special().ndtri(power))
    need = math.ceil((z * sd / margin) ** 2)
    return int(min(cap, max(n + 1, MIN_RUNS, need)))


def compare_samples(base: Sequence[float], cand: Sequence[float], *,
                    threshold: float = DEFAULT_THRESHOLD, abs_band: float = 0.0,
                    deterministic: bool = False,
                    higher_is_better: bool = False, paired: bool = False, metric: str = "",
                    baseline: str = "A", candidate: str = "B",
                    estimator: Estimator | None = None, alpha: float = ALPHA,
                    info: MetricInfo | None = None,
                    pool: SerialPool | None = None) -> Comparison:
    """One comparison, judged alone at level ``alpha`` (compare_result adjusts families).
    Without ``info`` the samples are read as times (slower/faster).  ``pool``: the lag-1
    correlation pooled over the comparison's family (family_pools), which widens it up to
    SERIAL_POOL_MAX_RUNS runs instead of SERIAL_RHO_MAX (or its own estimate), and at least
    as much beyond them (_rho_for)."""
    est = estimator or DEFAULT_ESTIMATOR
    if info is None:
        info = MetricInfo(metric, "s", "", deterministic=deterministic,
                          direction="higher" if higher_is_better else "lower")
    a, b = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    c = Comparison(metric, baseline, candidate, math.nan, math.nan, math.nan, None,
                   "inconclusive", None, len(a), len(b), threshold=threshold,
                   abs_band=abs_band, unit=info.unit, estimator=str(est),
                   direction=info.direction, family=metric)
    if len(a) == 0 or len(b) == 0:
        c.note = TOO_FEW
        return c
    c.paired = paired = bool(paired and len(a) == len(b))
    c.base_median, c.cand_median = float(np.median(a)), float(np.median(b))
    if deterministic or info.deterministic:
        c.deterministic = True
        c.scale = "exact"
        c.base_center = ma = c.base_median
        c.cand_center = mb = c.cand_median
        c.diff = c.diff_low = c.diff_high = mb - ma
        c.ratio = c.ci_low = c.ci_high = (mb / ma if ma else (1.0 if mb == 0 else math.nan))
        c.loc = Location("exact", mb - ma)
        c.ci_level = 1.0
        c.verdict = _verdict_from(mb - ma, mb - ma, _band("diff", threshold, ma, abs_band),
                                  info, exact=True)
        return c
    n_min = min(len(a), len(b))
    if n_min < MIN_RUNS or est.kept(n_min) < MIN_RUNS:
        c.note = TOO_FEW
        c.base_center, c.cand_center = c.base_median, c.cand_median
        c.ratio = c.cand_median / c.base_median if c.base_median else math.nan
        c.diff = c.cand_median - c.base_median
        return c
    c.scale = "log" if min(a.min(), b.min()) > 0 else "diff"
    c.base_center = center(a, est)
    c.loc = locate(a, b, paired, est, c.scale, pool)
    band = _band(c.scale, threshold, c.base_center, abs_band)
    if max(abs(c.base_center), abs(center(b, est))) < info.resolution:
        # Not judged (no p: outside its family), but the change is still shown.
        c.coarse = True
        c.note = coarse_note(info)
    else:
        c.raw_p_value = c.p_value = c.loc.claim_p(*band)
    _set_interval(c, alpha, info)
    return c


def coarse_note(info: MetricInfo) -> str:
    """Why a comparison of runs below the metric's resolution is not judged."""
    return f"coarse: runs below the {fmt_value(info.resolution, info.unit)} tick"


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment (scipy has only BH/BY; this is four lines)."""
    arr = np.asarray(p, dtype=float)
    order = np.argsort(arr)
    m = len(arr)
    adj = np.maximum.accumulate((m - np.arange(m)) * arr[order]).clip(max=1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def benjamini_hochberg(p: Sequence[float]) -> np.ndarray:
    """scipy.stats.false_discovery_control(p, method="bh"), step for step (so equal to the
    last bit; tests/core/test_median_ci.py), without importing scipy.stats (0.35 s) for
    these few lines of numpy."""
    arr = np.asarray(p, dtype=float)
    if not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError("p-values must be between 0 and 1")
    m = len(arr)
    if m <= 1:
        return arr
    order = np.argsort(arr)
    ps = arr[order] * (m / np.arange(1, m + 1, dtype=float))
    np.minimum.accumulate(ps[::-1], out=ps[::-1])
    out = np.empty(m)
    out[order] = ps
    return out.clip(0.0, 1.0)


def adjust(p: Sequence[float], correction: str) -> np.ndarray:
    if len(p) == 0:
        return np.asarray([], dtype=float)
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        return benjamini_hochberg(p)
    if correction == "none":
        return np.asarray(p, dtype=float)
    raise ValueError(f"unknown correction {correction!r} (holm, bh, none)")


CORRECTION_NAMES = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (FDR)",
                    "none": "none"}


def adjust_family(comps: Sequence[Comparison], correction: str, alpha: float = ALPHA,
                  info: MetricInfo | None = None,
                  infos: dict[str, MetricInfo] | None = None) -> None:
    """Adjust one family's p-values and put each CI at its adjusted level (in place); each
    comparison's metric read as ``info``, or as its own in ``infos`` (a family of several)."""
    tested = [c for c in comps if c.raw_p_value is not None and c.loc is not None]
    if not tested:
        return
    raw = np.asarray([c.raw_p_value for c in tested], dtype=float)
    adj = adjust(raw, correction)
    for c, p, q in zip(tested, raw, adj, strict=True):
        c.p_value = float(q)
        c.correction = correction
        # Level at which this comparison is tested: p < alpha_eff <=> q < alpha.
        alpha_eff = alpha * float(p) / float(q) if q > 0 else alpha / len(tested)
        _set_interval(c, min(alpha, alpha_eff), infos.get(c.metric) if infos else info)


def is_paired(rs: ResultSet, cell: str) -> bool:
    """Runs were interleaved in rounds within a cell when its configurations alternate."""
    return bool(rs.settings.interleaved) and len(rs.configurations_in(cell)) > 1


def round_pairs(base: Configuration, cfg: Configuration,
                metric: str) -> tuple[list[float], list[float]]:
    """Two interleaved configurations' values of ``metric`` paired by round: every round runs
    each configuration once, so their i-th measured runs share round i.  A round in which
    either run failed (--ignore-failure) or lacks the metric is left out whole, so a failure
    never shifts the pairs after it."""
    a: list[float] = []
    b: list[float] = []
    for x, y in zip((r for r in base.runs if not r.warmup),
                    (r for r in cfg.runs if not r.warmup), strict=False):
        if x.status == y.status == "ok" and metric in x.values and metric in y.values:
            a.append(x.values[metric])
            b.append(y.values[metric])
    return a, b


def compare_result(rs: ResultSet, metrics: list[str] | None = None, *,
                   threshold: float | None = None, correction: str | None = None,
                   estimator: str | Estimator | None = None, bands: dict[str, str] | None = None,
                   plan: Plan | None = None) -> list[Comparison]:
    """Every configuration against its cell's baseline, per metric; each metric one family
    across the result (the primary: ``correction``; others: BH).  Defaults: the stored plan."""
    if plan is None:
        plan = Plan.of(rs, threshold=threshold, correction=correction, bands=bands,
                       estimator=None if estimator is None else str(estimator))
    est = parse_estimator(plan.estimator) if isinstance(plan.estimator, str) else plan.estimator
    primary = rs.settings.primary_metric
    jobs: list[tuple[str, Configuration, Configuration, str, list[float], list[float], bool]] = []
    for cell in rs.cells():
        base = rs.baseline_in(cell)
        if base is None:
            continue
        paired = is_paired(rs, cell)
        for cfg in rs.configurations_in(cell):
            if cfg is base:
                continue
            for m in metrics if metrics is not None else list(rs.metrics):
                a, b = round_pairs(base, cfg, m) if paired else (base.samples(m),
                                                                 cfg.samples(m))
                if a and b and _comparable(base, cfg, m):
                    jobs.append((cell, base, cfg, m, a, b, paired))
    pools = family_pools([(metric_family(m), a, b, p) for _, _, _, m, a, b, p in jobs], est)
    out: list[Comparison] = []
    for cell, base, cfg, m, a, b, paired in jobs:
        info = rs.metrics.get(m)
        band = plan.band_for(m, info)
        c = compare_samples(a, b, threshold=band.rel, abs_band=band.absolute,
                            paired=paired, metric=m,
                            baseline=base.name, candidate=cfg.name, estimator=est,
                            alpha=plan.alpha_look, info=info or MetricInfo(m, "", ""),
                            pool=pools.get((metric_family(m), paired)))
        c.cell = cell
        c.same_program = not _two_workloads(base, cfg)
        out.append(c)
    for m, fam in _families(out, primary, plan).items():
        corr = plan.correction if m == primary or primary is None else plan.secondary
        adjust_family(fam, corr, plan.alpha_look, infos=rs.metrics)
        for c in fam:
            c.family = m
            c.correction = corr
            c.exploratory = primary is not None and metric_family(c.metric) != primary
            if c.p_value is not None:
                # On the verdict's scale: a claim is made iff p < alpha (the adjusted p was
                # judged against the look's level, Plan.alpha_look; it read "p=0.0063 ...
                # inconclusive").
                c.p_value = min(1.0, c.p_value * plan.alpha / plan.alpha_look)
    _kernel_blind(rs, out)
    return out


def _families(comps: list[Comparison], primary: str | None,
              plan: Plan) -> dict[str, list[Comparison]]:
    """The families a result's comparisons are adjusted in, by metric family (a harness run's
    per-benchmark metrics, Sum-8 ns_per_op and Hash-8 ns_per_op, are one: metric_family): the
    primary's; every other family's together (EXPLORATORY) when the plan pools them, else one
    per metric family."""
    out: dict[str, list[Comparison]] = {}
    for c in comps:
        fam = metric_family(c.metric)
        pooled = plan.pool_exploratory and primary is not None and fam != primary
        out.setdefault(EXPLORATORY if pooled else fam, []).append(c)
    return out


# A user-space count (callgrind) certifies nothing about a command that spends this much of
# its CPU time in the kernel: an ext4 -> tmpfs mmap change moved CPU time -19.9% and read
# "29,280 / 29,280 +0.00% (exact) equivalent".
KERNEL_INVISIBLE_SHARE = 0.5


def kernel_share(cfgs: Sequence[Configuration]) -> float | None:
    """System time's share of the CPU time of these configurations' timed runs (rusage, summed:
    one run's times are counted in scheduler ticks); None when no run has both times."""
    user = sys_t = 0.0
    for cfg in cfgs:
        for r in cfg.measured_runs():
            if "user_time" in r.values and "sys_time" in r.values:
                user += r.values["user_time"]
                sys_t += r.values["sys_time"]
    return sys_t / (user + sys_t) if user + sys_t > 0 else None


def kernel_blind_note(rs: ResultSet, metric: str, cfgs: Sequence[Configuration],
                      ) -> said.Note | None:
    """Beside a callgrind count of ``metric`` for ``cfgs``: the kernel's share of their CPU
    time where it is at least KERNEL_INVISIBLE_SHARE (none otherwise)."""
    info = rs.metrics.get(metric)
    if info is None or "callgrind" not in info.source:
        return None
    share = kernel_share(cfgs)
    if share is None or share < KERNEL_INVISIBLE_SHARE:
        return None
    return said.kernel_share(fmt_share(share, 0))


def _kernel_blind(rs: ResultSet, comps: list[Comparison]) -> None:
    """Every callgrind count of a kernel-heavy workload says so; none reads "equivalent"."""
    for c in comps:
        note = kernel_blind_note(rs, c.metric, [x for x in rs.configurations_in(c.cell)
                                                if x.name in (c.baseline, c.candidate)])
        if note is None:
            continue
        if c.verdict == "equivalent":
            c.verdict = "inconclusive"
            c.note = note
        elif not c.note:
            c.note = note


# A pair a study compares beyond the result's own comparisons: its cell (or the other
# parameters), the baseline's label, the candidate's name, their runs, and whether paired.
Pair = tuple[str, str, str, list[float], list[float], bool]


@dataclass(frozen=True)
class Slope:
    """A least-squares slope and its interval, widened for the runs' lag-1 correlation
    (``serial``; ``pooled``: the series it was pooled over, 0 for each series' own)."""

    est: float
    low: float
    high: float
    serial: float
    pooled: int


def slope_pool(groups: Sequence[Sequence[tuple[float, Sequence[float]]]],
               est: Estimator) -> SerialPool | None:
    """The lag-1 correlation pooled over every series of a family of fits (pool_serial): each
    group one configuration's cells as (x, runs in run order).  As in family_pools, only the
    series of up to SERIAL_POOL_MAX_RUNS runs are pooled: a longer one has its own estimate."""
    return pool_serial([np.asarray(y, dtype=float) for g in groups for _, y in g
                        if len(y) <= SERIAL_POOL_MAX_RUNS], est)


def fit_slope(cells: Sequence[tuple[float, Sequence[float]]], est: Estimator,
              pool: SerialPool | None = None, confidence: float = CONFIDENCE) -> Slope | None:
    """The least-squares slope of the runs over x (each cell one x, its runs in run order) with
    its t interval, widened as a comparison's is: the slope is a sum of the cells' means, each
    mean's variance (the residual variance over its runs) times _inflation for its lag-1
    correlation (``pool`` up to SERIAL_POOL_MAX_RUNS runs, else its own; SERIAL_RHO_MAX where
    neither is known), the residual df reduced by _serial_df.  Drift between cells measured in
    different rounds is in the interval only as far as it scatters the cells about the line.
    None below 2 values of x or 4 runs."""
    data = [(float(x), np.asarray(y, dtype=float)) for x, y in cells if len(y)]
    n = sum(len(y) for _, y in data)
    if len({x for x, _ in data}) < 2 or n < 4:
        return None
    xs = np.concatenate([np.full(len(y), x) for x, y in data])
    ys = np.concatenate([y for _, y in data])
    xbar, sxx = float(xs.mean()), float(np.sum((xs - xs.mean()) ** 2))
    b = float(np.dot(xs - xbar, ys - ys.mean())) / sxx
    resid = ys - (ys.mean() + b * (xs - xbar))
    s2 = float(np.dot(resid, resid)) / (n - 2)
    var, df, top, pooled = 0.0, float(n - 2), 0.0, 0
    for x, y in data:
        rho, pooled_c = _rho_for(y, est, pool)
        assumed = len(y) < SERIAL_MIN_RUNS and not pooled_c
        # Var(n_c (x_c - xbar) mean_c) = n_c (x_c - xbar)^2 s2 f_c
        var += len(y) * (x - xbar) ** 2 * s2 * _inflation(rho, len(y))
        df = min(df, _serial_df(n - 2, rho, len(y), assumed))
        top, pooled = max(top, rho), max(pooled, pooled_c)
    half = _t_isf((1 - confidence) / 2, df) * math.sqrt(var) / sxx
    return Slope(b, b - half, b + half, top, pooled)


def judge_pairs(rs: ResultSet, metric: str, pairs: Sequence[Pair], plan: Plan) -> list[Comparison]:
    """One family of a study's comparisons of ``metric`` (an axis, a variant against its
    sibling), judged as the result's own are: each widened for the lag-1 correlation pooled
    over the family's series (family_pools, as _rho_for reads it), the family adjusted
    by the plan's correction (adjust_family), at the plan's alpha (the stop rule did not look
    at these)."""
    est = parse_estimator(plan.estimator)
    info = rs.metrics.get(metric)
    band = plan.band_for(metric, info)
    pools = family_pools([(metric, xs, ys, p) for *_, xs, ys, p in pairs], est)
    out: list[Comparison] = []
    for cell, base, name, xs, ys, paired in pairs:
        c = compare_samples(xs, ys, threshold=band.rel, abs_band=band.absolute,
                            paired=paired, metric=metric, baseline=base, candidate=name,
                            estimator=est, alpha=plan.alpha,
                            info=info or MetricInfo(metric, "", ""),
                            pool=pools.get((metric, paired)))
        c.cell = cell
        out.append(c)
    adjust_family(out, plan.correction, plan.alpha, info)
    for c in out:
        c.correction = plan.correction
    return out


def sibling_comparisons(rs: ResultSet, metric: str, *, plan: Plan | None = None,
                        judged: Sequence[Comparison] = ()) -> dict[str, list[Comparison]]:
    """Configurations named NAME-SUFFIX beside a configuration NAME (cpp-async and cpp): the
    variant against its sibling in each cell, paired by round where the cell was interleaved;
    one family per suffix, judged by judge_pairs.  A pair the result judged already (``judged``:
    its comparisons against the cell's baseline, where the sibling is the baseline) is that
    comparison, judged once: the answer and the result's table say the same of it."""
    plan = plan or Plan.of(rs)
    names = list(dict.fromkeys(c.name for c in rs.configurations))
    done = {(c.cell, c.baseline, c.candidate): c for c in judged if c.metric == metric}
    by_key = {(c.cell, c.name): c for c in rs.configurations}
    found: dict[str, list[Comparison]] = {}
    pairs: dict[str, list[Pair]] = {}
    for name in names:
        base_name, _, suffix = name.rpartition("-")
        if not base_name or base_name not in names:
            continue
        for (cell, n), cand in by_key.items():
            base = by_key.get((cell, base_name))
            if n != name or base is None:
                continue
            if (cell, base_name, name) in done:
                found.setdefault(suffix, []).append(done[(cell, base_name, name)])
                continue
            paired = is_paired(rs, cell)
            xs, ys = (round_pairs(base, cand, metric) if paired
                      else (base.samples(metric), cand.samples(metric)))
            if xs and ys:
                pairs.setdefault(suffix, []).append((cell, base_name, name, xs, ys, paired))
    for suffix, ps in pairs.items():
        for c in judge_pairs(rs, metric, ps, plan):
            c.same_program = not _two_workloads(by_key[(c.cell, c.baseline)],
                                                by_key[(c.cell, c.candidate)])
            found.setdefault(suffix, []).append(c)
    order = {cell: i for i, cell in enumerate(rs.cells())}
    return {suffix: sorted(cs, key=lambda c: (names.index(c.candidate), order.get(c.cell, 0)))
            for suffix, cs in found.items()}


def axis_comparisons(rs: ResultSet, metric: str, param: str, a: Any, b: Any, *,
                     plan: Plan | None = None) -> list[Comparison]:
    """What a study's plots divide: each configuration at ``param`` = a against itself at
    ``param`` = b, the other parameters equal (a suite's [report] kinds, its thread scaling).

    Paired by round where the two cells were measured in the same rounds (the suite's
    ``groups``, suites.execute); otherwise two samples measured apart, labelled "not
    interleaved".  Each comparison's ``cell`` is the other parameters, ``candidate`` the
    configuration's name and ``baseline`` "NAME at PARAM=b".  One family per call: the plan's
    correction (Holm), at the plan's alpha (these are not what the stop rule looked at)."""
    plan = plan or Plan.of(rs)
    together = [set(g) for g in (rs.settings.suite.groups or [])]
    by_key = {(c.cell, c.name): c for c in rs.configurations}
    params = {c.cell: c.params for c in rs.configurations}

    def rest(p: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in p.items() if k != param}

    jobs: list[tuple[str, str, list[float], list[float], bool]] = []
    for cell_a, pa in params.items():
        if str(pa.get(param)) != str(a):
            continue
        cell_b = next((c for c, pb in params.items()
                       if str(pb.get(param)) == str(b) and rest(pb) == rest(pa)), None)
        if cell_b is None:
            continue
        paired = bool(rs.settings.interleaved) and any(
            cell_a in g and cell_b in g for g in together)
        for (cell, name), cand in by_key.items():
            base = by_key.get((cell_b, name))
            if cell != cell_a or base is None:
                continue
            xs, ys = (round_pairs(base, cand, metric) if paired
                      else (base.samples(metric), cand.samples(metric)))
            if xs and ys:
                jobs.append((canonical_params(rest(pa)), name, xs, ys, paired))
    out = judge_pairs(rs, metric, [(cell, f"{name} at {param}={b}", name, xs, ys, paired)
                                   for cell, name, xs, ys, paired in jobs], plan)
    share = cpu_share_caveat(rs, metric, param, a, b)
    for c in out:
        if share is not None and c.verdict != "inconclusive":
            # Wall time over threads that cannot each have a CPU: up or down is the CPU share
            # the threads got, never a regression or an improvement of the code.
            c.same_program = False
            c.note = c.note or said.CPU_SHARE_LABEL
    return out


def busy_load(rs: ResultSet) -> float | None:
    """The highest load average during the runs when the machine was more than half busy
    (above 1 and above half its CPUs); None otherwise."""
    cpus = rs.fingerprint.cpu_count or 1
    loads = [r.load1 for c in rs.configurations for r in c.runs if r.load1 is not None]
    return max(loads) if loads and max(loads) > max(1.0, 0.5 * cpus) else None


def cpu_share_caveat(rs: ResultSet, metric: str, param: str, a: Any, b: Any,
                     ) -> said.Note | None:
    """What a ratio of ``metric`` at ``param`` = a over ``param`` = b measures when it is wall
    time across thread counts that cannot each have a CPU of their own: more threads than the
    machine has CPUs, or several threads on a busy machine.  None when it measures the code."""
    info = rs.metrics.get(metric)
    cpus = rs.fingerprint.cpu_count
    if info is None or not cpus or not measures_elapsed(info):
        return None
    ends = [{c.threads for c in rs.configurations if str(c.params.get(param)) == str(v)}
            for v in (a, b)]
    if any(len(t) != 1 or None in t for t in ends) or ends[0] == ends[1]:
        return None  # the axis does not change the thread count
    most = max(t for e in ends for t in e if t is not None)
    busy = busy_load(rs) is not None
    if most > cpus or (busy and most > 1):
        return said.cpu_share(metric, param, most, cpus, busy)
    return None


def _comparable(base: Configuration, cfg: Configuration, metric: str) -> bool:
    """The size of the work (ops, iterations: model.WORK_KEYS) and what was computed (a
    checksum) are compared only between configurations that declared the same work: calibrated
    separately, they differ by design, and would read "ops +567.83% different"."""
    if metric not in WORK_KEYS and not is_result_key(metric):
        return True
    return bool(_results_by_work(base, metric).keys() & _results_by_work(cfg, metric).keys())


def _two_workloads(a: Configuration, b: Configuration) -> bool:
    """Two different workloads (their names: family/runtime), not two versions of one."""
    def workload(c: Configuration) -> bool:
        return "/" in c.benchmark and " " not in c.benchmark and not c.benchmark.startswith(
            ("/", "."))
    return workload(a) and workload(b) and a.benchmark != b.benchmark


def differing_results(rs: ResultSet, cell: str | None = None) -> list[str]:
    """Result keys with no direction (checksums, results: model.is_result_key) whose value
    differs between configurations of one cell (of ``cell`` only, when given) for the same
    declared work: they computed different results.  Runs are compared only where their work
    keys (model.WORK_KEYS: ops, iterations, depth, ...) are equal: configurations calibrated
    separately run different iteration counts, so their checksums differ by design (165 false
    warnings in `make demo`).  A runtime's diagnostics are not checked either."""
    out: list[str] = []
    cells = rs.cells() if cell is None else [cell]
    for m, info in rs.metrics.items():
        if info.direction != "none" or not is_result_key(m):
            continue
        for cell in cells:
            base = rs.baseline_in(cell)
            if base is None:
                continue
            bv = _results_by_work(base, m)
            for cfg in rs.configurations_in(cell):
                if cfg is base or not bv:
                    continue
                cv = _results_by_work(cfg, m)
                for work in sorted(bv.keys() & cv.keys()):
                    if cv[work] != bv[work]:
                        out.append(f"{base.name} and {cfg.name} computed different results: "
                                   f"{m} {_vals(bv[work])} vs {_vals(cv[work])}"
                                   + (f" (same {_work_text(work)})" if work else ""))
                        break
    return out


def _results_by_work(cfg: Configuration, metric: str) -> dict[tuple[tuple[str, float], ...],
                                                                set[float]]:
    """``metric``'s values of ``cfg``'s measured runs, by the work each run declared."""
    out: dict[tuple[tuple[str, float], ...], set[float]] = {}
    for r in cfg.measured_runs():
        if metric in r.values:
            work = tuple(sorted((k, r.values[k]) for k in WORK_KEYS if k in r.values))
            out.setdefault(work, set()).add(r.values[metric])
    return out


def _work_text(work: tuple[tuple[str, float], ...]) -> str:
    from perflab.format import fmt_count

    return ", ".join(f"{k} {fmt_count(v)}" for k, v in work)


def _vals(v: set[float]) -> str:
    from perflab.format import fmt_count

    s = sorted(v)
    txt = ", ".join(fmt_count(x) for x in s[:3])
    return txt + (", ..." if len(s) > 3 else "")


# --- the stop rule's looks and bisect's steps ---------------------------------------------------

def look_schedule(min_runs: int, max_runs: int, growth: float = 1.5) -> list[int]:
    """Runs per configuration at which adaptive measuring looks at the comparison: min_runs,
    then growing by ``growth`` (6, 9, 14, 21, 32, 48, ...), and max_runs itself.  The budget can
    end measuring between looks: that final look is counted too (planned_looks)."""
    out: list[int] = []
    n = max(MIN_RUNS, min_runs)
    while n < max_runs:
        out.append(n)
        n = max(n + 1, math.ceil(n * growth))
    out.append(max_runs)
    return out


def planned_looks(min_runs: int, max_runs: int) -> int:
    """Looks to split alpha over: the schedule, plus one for a budget ending between looks."""
    return len(look_schedule(min_runs, max_runs)) + 1


# The futility bound of the stop rule: an undecided comparison "cannot be decided within the
# budget" when even the location most favourable to a decision within its 95% interval would
# decide it at the budget's end with less than FUTILITY_POWER (conditional power).
FUTILITY_POWER = 0.1
FUTILITY_Z = 1.96


@dataclass(frozen=True)
class StopLook:
    """What a look of adaptive measuring found in the primary family: comparisons decided
    (as the final table will judge them), undecided ones that cannot be decided within the
    budget at their noise (futile: stats.decidable), and undecided ones that still can
    (``open``).  Measuring stops when none is open and at least one was judged."""

    decided: int
    futile: int
    open: int

    @property
    def stop(self) -> bool:
        return self.open == 0 and self.decided + self.futile > 0

    @property
    def reason(self) -> str:
        """Why measuring stops ("" when it goes on)."""
        if not self.stop:
            return ""
        if not self.futile:
            return "every primary comparison was decided"
        why = "within the budget at this noise"
        if self.decided:
            return f"{self.decided} decided, {self.futile} cannot be decided {why}"
        if self.futile == 1:
            return f"the primary comparison cannot be decided {why}"
        return f"none of the {self.futile} primary comparisons can be decided {why}"


def decidable(loc: Location, n: int, runs: int, band: tuple[float, float],
              alpha: float) -> bool:
    """Whether ``runs`` runs per configuration (the budget) could still decide a comparison
    that ``n`` runs left undecided, at level ``alpha`` (the most generous its verdict could
    get there): the probability that the interval at ``runs`` lies beyond a band edge or
    inside the band, given the estimate so far and a true location theta, at the current
    per-run spread (conditional power: the estimate at ``runs`` is normal about
    (n est + (runs - n) theta) / runs with sd s sqrt(runs - n) / runs), is at least
    FUTILITY_POWER for some theta within the current 95% interval.  Unknown spread: True."""
    if runs <= n:
        return False
    se = loc.se
    if loc.method in ("sign", "bootstrap"):
        lo95, hi95 = loc.interval(ALPHA)
        se = (hi95 - lo95) / (2 * 1.96) if math.isfinite(hi95 - lo95) else math.nan
    if not math.isfinite(se) or se <= 0:
        return True
    s = se * math.sqrt(n)
    df = loc.df * runs / n if math.isfinite(loc.df) else math.inf
    h = _t_isf(alpha / 2, df) * s / math.sqrt(runs)  # the interval's half-width at ``runs``
    lo, hi = loc.est - FUTILITY_Z * se, loc.est + FUTILITY_Z * se
    b_lo, b_hi = band
    theta = np.append(np.linspace(lo, hi, 65), min(hi, max(lo, (b_lo + b_hi) / 2)))
    mu = (n * loc.est + (runs - n) * theta) / runs
    tau = s * math.sqrt(runs - n) / runs
    cdf = _special().ndtr
    p = cdf((mu - b_hi - h) / tau) + cdf((b_lo - h - mu) / tau)
    if b_hi - h > b_lo + h:
        p = p + cdf((b_hi - h - mu) / tau) - cdf((b_lo + h - mu) / tau)
    return bool(np.max(p) >= FUTILITY_POWER)


def _generous_level(correction: str, alpha: float, m: int, decided: int) -> float:
    """The most generous level the family's correction could judge an undecided comparison at,
    ``decided`` of its ``m`` being decided: the next step of Holm, of Benjamini-Hochberg, or
    alpha itself without a correction."""
    if correction == "holm":
        return alpha / max(1, m - decided)
    if correction == "bh":
        return alpha * (decided + 1) / max(1, m)
    return alpha


def stop_check(samples: Sequence[tuple[Sequence[float], Sequence[float], MetricInfo | None]], *,
               paired: bool, plan: Plan, family_size: int | None = None,
               budget_runs: int | None = None, final_level: float | None = None) -> StopLook:
    """The stop rule at one look: the primary family's (base, cand, metric) samples judged as
    the final table will judge them at this look's level (plan.alpha_look): widened for the
    lag-1 correlation pooled over the family (family_pools, as compare_result does), adjusted
    by the plan's correction over the family; comparisons of the family not among ``samples``
    (``family_size`` more than them: a suite's other cells) count as p = 1, which Holm and BH
    never undercut.  An undecided comparison is futile when ``budget_runs`` runs per
    configuration could not decide it (decidable) at ``final_level`` (the level measuring would
    end at; default the plan's): futility only ever leaves a comparison inconclusive, the
    claims made are those of the look's level, so the looks' levels still bound the error.
    Without ``budget_runs`` nothing is futile: every comparison must be decided."""
    est = parse_estimator(plan.estimator)
    fams = [(metric_family(info.name) if info is not None else "", a, b, paired)
            for a, b, info in samples]
    pools = family_pools(fams, est)
    alpha = plan.alpha_look
    comps: list[Comparison] = []
    for (fam, a, b, _), (_, _, info) in zip(fams, samples, strict=True):
        band = plan.band_for(info.name if info is not None else "", info)
        comps.append(compare_samples(a, b, threshold=band.rel, abs_band=band.absolute,
                                     paired=paired, estimator=est, alpha=alpha, info=info,
                                     pool=pools.get((fam, paired))))
    tested = [c for c in comps if c.raw_p_value is not None]
    m = max(family_size or 0, len(tested))
    adj = adjust([c.raw_p_value or 1.0 for c in tested] + [1.0] * (m - len(tested)),
                 plan.correction)
    claims = {id(c) for c, q in zip(tested, adj, strict=False) if q < alpha}
    decided = {id(c) for c in comps if id(c) in claims
               or (c.deterministic and c.verdict != "inconclusive")}
    level = _generous_level(plan.correction, final_level or alpha, m, len(decided))
    futile = 0
    for c in comps:
        if id(c) in decided:
            continue
        if c.coarse:  # runs below the metric's resolution are never judged
            futile += 1
        elif budget_runs is not None and not min(c.n_baseline, c.n_candidate):
            futile += 1  # a side without the metric (a benchmark one build lacks)
        elif budget_runs is not None and c.loc is not None and not decidable(
                c.loc, min(c.n_baseline, c.n_candidate), budget_runs,
                _band(c.scale, c.threshold, c.base_center, c.abs_band), level):
            futile += 1
    return StopLook(len(decided), futile, len(comps) - len(decided) - futile)


def bisect_band(step_ratio: float) -> float:
    """bisect's band when none is given: the geometric midpoint of the step the check measured
    (good -> bad, its point estimate, as a ratio above 1 in the metric's worse direction), at
    least DEFAULT_THRESHOLD, so each commit is judged by which end it resembles: at the
    midpoint, a commit is as far from "unchanged" as from the measured step (+8% gives
    +/-3.9%)."""
    if not math.isfinite(step_ratio) or step_ratio <= 1:
        return DEFAULT_THRESHOLD
    return max(DEFAULT_THRESHOLD, math.sqrt(step_ratio) - 1.0)


# The spending function's shape (Hwang-Shih-DeCani) for adaptive measuring's looks and for
# bisect's rounds: negative spends little at early looks, keeping most of alpha for the last
# ones.  The looks' -6 decides +5% at CV 5% within 60 runs in 92% (-4: 90%, by simulation,
# docs/statistics.md); bisect's rounds keep -4.
LOOK_GAMMA = -6.0
BISECT_GAMMA = -4.0


def spending_levels(looks: int, alpha: float, gamma: float) -> list[float]:
    """alpha spent over ``looks`` looks by the Hwang-Shih-DeCani function
    alpha * (1 - exp(-g t)) / (1 - exp(-g)) at t = k / looks, each look getting its increment
    (8 looks, alpha 0.1, gamma -4: 0.0006, 0.001, ..., 0.02).  They add up to alpha, so over
    all looks a claim is wrong with probability at most alpha, whatever the correlation
    between looks (the union bound).  Early looks are strict: a comparison decided on its
    first runs is a clear one, and most of alpha is kept for the end, where one that needed
    many runs is decided instead of left inconclusive.  Adaptive measuring's looks
    (look_level) and bisect's rounds (bisect_levels) both spend by it."""
    k = np.arange(looks + 1) / max(1, looks)
    spent = alpha * -np.expm1(-gamma * k) / -math.expm1(-gamma)
    return [float(x) for x in np.diff(spent)]


def look_level(min_runs: int, max_runs: int, rounds: int, final: bool,
               alpha: float = ALPHA) -> float:
    """The level of adaptive measuring's look at ``rounds`` runs per configuration: the
    schedule's looks (look_schedule) spend alpha by spending_levels (LOOK_GAMMA); a look where
    measuring ends (``final``: --max-runs reached, the budget spent, between looks or at one)
    gets what the looks before it left.  So the levels of the looks a measurement takes add up
    to alpha at most, wherever it stops."""
    sched = look_schedule(min_runs, max_runs)
    inc = spending_levels(len(sched), alpha, LOOK_GAMMA)
    if not final and rounds in sched:
        return inc[sched.index(rounds)]
    return max(0.0, alpha - sum(x for n, x in zip(sched, inc, strict=True) if n < rounds))


# One-sided, per direction, spent over a step's rounds: the steps after the check ask which end
# a commit resembles, and at either end the error is far below this (the edge is midway);
# the check, which claims that bad is slower at all, is held to compare's 2.5% a direction.
BISECT_ALPHA = 0.1
BISECT_CHECK_ALPHA = ALPHA / 2
BISECT_ROUNDS = 8  # the default run budget of a step: --max-rounds of --runs each


def bisect_levels(rounds: int, alpha: float = BISECT_ALPHA) -> list[float]:
    """The one-sided level of each round's look at a bisect step: alpha spent over the rounds
    (spending_levels: 8 rounds: 0.0006, 0.001, ..., 0.02), so over all rounds a step is wrong
    about its side of the band's edge with probability at most alpha."""
    return spending_levels(rounds, alpha, BISECT_GAMMA)


def bisect_step(base: Sequence[float], cand: Sequence[float], *, threshold: float, level: float,
                info: MetricInfo, paired: bool,
                estimator: Estimator | None = None) -> tuple[str, Comparison]:
    """bisect's rule for one look at a step: one question, "which side of the band's edge
    toward worse (1 + T for times) is this commit on?", answered by one-sided bounds at the
    same ``level`` for both answers: 'bad' when the bound on the good side (the CI's lower end
    for times) lies beyond the edge, 'good' when the bound on the bad side (its upper end) lies
    short of it, 'inconclusive' otherwise.  The Comparison returned holds the two-sided
    interval at 1 - 2 level, whose ends are those two bounds.  Exact counts: beyond the edge is
    'bad', anything else 'good'.  Ties that give a zero-width interval of runs that differ
    certify nothing on the good side (as for equivalence)."""
    c = compare_samples(base, cand, threshold=threshold, paired=paired, estimator=estimator,
                        alpha=2 * level, info=info, metric=info.name)
    if c.loc is None or c.coarse:  # too few runs, or runs below the metric's resolution
        return "inconclusive", c
    if c.scale == "exact":
        return ("bad" if c.regression else "good"), c
    lo, hi = c.loc.interval(2 * level)
    b_lo, b_hi = _band(c.scale, threshold, c.base_center)
    if info.direction == "higher":  # worse is lower: the edge is the band's lower end
        bad, good = hi < b_lo, lo > b_lo
    else:
        bad, good = lo > b_hi, hi < b_hi
    if bad:
        return "bad", c
    if good and not c.loc.no_equivalence:
        return "good", c
    return "inconclusive", c


# --- many benchmarks: modality and the geometric mean of their ratios ---------------------------

# Modality (BenchmarkDotNet's mvalue, after Brendan Gregg's "Frequency Trails: Modes"): the
# runs without Tukey's outliers (1.5 IQR fences) are put in histograms of bin size Scott's
# rule / 2, doubled until one bin spans them; for each, the sum of the absolute steps between
# neighbouring bin counts (with an empty bin at each end) over the largest count; the mvalue is
# the largest of these.  One mode gives 2, two separate modes about 4.  ResultsComparer's
# reading: below 12 runs nothing is said; above 4.2 "multimodal", above 3.2 "bimodal", above
# 2.8 "several?".  perflab flags from 3.2 (bimodal or more; "several?" is shown, not warned):
# docs/statistics.md reports its false-flag rate on unimodal samples.
MVALUE_MIN_RUNS = 12
MVALUE_BIMODAL = 3.2
MVALUE_MULTIMODAL = 4.2
MVALUE_SEVERAL = 2.8


@dataclass(frozen=True)
class Modality:
    """A sample's mvalue and the locations of its histogram's two highest peaks."""

    mvalue: float
    modes: tuple[float, ...] = ()  # the peaks' medians, ascending (two when flagged)

    @property
    def label(self) -> str:
        """bimodal | multimodal | several? | "" (one mode), as ResultsComparer's column."""
        if self.mvalue > MVALUE_MULTIMODAL:
            return "multimodal"
        if self.mvalue > MVALUE_BIMODAL:
            return "bimodal"
        if self.mvalue > MVALUE_SEVERAL:
            return "several?"
        return ""

    @property
    def flagged(self) -> bool:
        return self.mvalue > MVALUE_BIMODAL


def _tukey_inliers(x: np.ndarray) -> np.ndarray:
    q1, q3 = np.quantile(x, [0.25, 0.75])
    iqr = q3 - q1
    return x[(x >= q1 - 1.5 * iqr) & (x <= q3 + 1.5 * iqr)]


def _histogram(x: np.ndarray, bin_size: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts of bins [k*size, (k+1)*size) from the bin of min(x) to the bin of max(x), and
    each value's bin index (from 0)."""
    first = math.floor(x.min() / bin_size)
    idx = np.clip(np.floor(x / bin_size).astype(np.int64) - first, 0, None)
    return np.bincount(idx), idx


def modality(samples: Sequence[float]) -> Modality | None:
    """The mvalue of ``samples`` (None below MVALUE_MIN_RUNS runs: not enough to tell) and,
    when it is above MVALUE_BIMODAL, the two highest peaks of the histogram that gave it."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < MVALUE_MIN_RUNS:
        return None
    x = np.sort(_tukey_inliers(x))
    span = float(x[-1] - x[0])
    if span <= 0:
        return Modality(2.0)
    size = 3.5 * float(np.std(x, ddof=1)) / len(x) ** (1 / 3) / 2
    best, best_size = 0.0, size
    while True:
        counts, _ = _histogram(x, size)
        padded = np.concatenate(([0], counts, [0]))
        m = float(np.abs(np.diff(padded)).sum() / counts.max())
        if m > best:
            best, best_size = m, size
        if size > span:
            break
        size *= 2
    if best <= MVALUE_BIMODAL:
        return Modality(best)
    counts, idx = _histogram(x, best_size)
    padded = np.concatenate(([-1], counts, [-1]))
    # A peak: a run of equal counts higher than the bins on each side of it.
    peaks: list[tuple[int, int]] = []
    i = 1
    while i < len(padded) - 1:
        j = i
        while j + 1 < len(padded) - 1 and padded[j + 1] == padded[i]:
            j += 1
        if padded[i] > 0 and padded[i] > padded[i - 1] and padded[i] > padded[j + 1]:
            peaks.append((int(padded[i]), i - 1))
        i = j + 1
    top = sorted(sorted(peaks, reverse=True)[:2], key=lambda p: p[1])
    modes = tuple(float(np.median(x[idx == b])) for _, b in top)
    return Modality(best, modes)


@dataclass(frozen=True)
class GeoMean:
    """The geometric mean of many comparisons' ratios and its CI (fixed effects: the mean of
    these benchmarks' log-ratios, each known with its own standard error)."""

    ratio: float
    ci_low: float
    ci_high: float
    n: int  # comparisons in it
    confidence: float = CONFIDENCE


def geomean_ratio(comps: Sequence[Comparison], confidence: float = CONFIDENCE) -> GeoMean | None:
    """Geometric mean of the ratios of the judged log-scale comparisons (benchstat's geomean
    row, with an interval): exp(mean of the log-ratios), its standard error the root of the
    summed variances over the count; each comparison's variance from its t interval, or read
    off its 95% interval for the order-statistic methods.  None when no comparison has one."""
    logs: list[float] = []
    var: list[float] = []
    for c in comps:
        loc = c.loc
        if c.scale != "log" or loc is None or c.note == TOO_FEW:
            continue
        if loc.method in _T_METHODS:
            se = loc.se
        else:
            lo, hi = loc.interval(0.05)
            se = (hi - lo) / (2 * 1.959964)
        if not math.isfinite(se):
            continue
        logs.append(loc.est)
        var.append(se * se)
    if not logs:
        return None
    k = len(logs)
    est = float(np.mean(logs))
    se = math.sqrt(float(np.sum(var))) / k
    z = float(-_special().ndtri((1 - confidence) / 2))
    return GeoMean(math.exp(est), math.exp(est - z * se), math.exp(est + z * se), k, confidence)
