"""The judging policy: how a result's comparisons are judged, stored with it (Plan) and read
by the runner, the statistics and every report: the level, the corrections of the families,
the location estimator, and the equivalence band of each metric (a kind's default from the
metric registry, or a band of its own).  Below model and stats: a result stores its Plan, and
stats judges by it.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from perflab.format import fmt_plain, fmt_share
from perflab.metrics import (
    COUNT_FLOOR,
    MEMORY_BAND,
    MetricInfo,
    in_base_unit,
    metric_family,
    metric_kind,
    unit_kind,
)

ALPHA = 0.05
DEFAULT_THRESHOLD = 0.01  # the one default band (+-1%), stored with every result
DEFAULT_CORRECTION = "holm"  # the primary metric's family
SECONDARY_CORRECTION = "bh"  # every other metric's family
MIN_RUNS = 6  # per configuration, for any statistical verdict
# The largest lag-1 correlation verdicts are guaranteed for: an interval is widened for at most
# this much, and for this much where it cannot be estimated (below SERIAL_MIN_RUNS).  Beyond it
# the estimate from a few runs is mostly noise.
SERIAL_RHO_MAX = 0.8
# Below this many runs a series' own lag-1 correlation is not estimated: simulated under AR(1)
# noise of lag-1 0.8 (the guarantee's range, docs/statistics.md), an interval widened for the
# estimate from 10-16 runs still gave 2.9-4.3% false slower (or faster) in A/A, where 20 give 2.5%.
# Below it, without a family (SERIAL_POOL_PAIRS), the interval is widened for SERIAL_RHO_MAX
# itself (drift cannot be ruled out), so
# only a change far beyond the band is claimed, an undecided comparison says "too few runs to
# rule out drift" (stats.DRIFT_NOTE), and a fixed --runs below it is warned about before
# measuring.
SERIAL_MIN_RUNS = 20
# A comparison of fewer runs that belongs to a family of series measured the same way (the
# benchmarks of one imported pair of files, the cells of one result) is widened for the lag-1
# correlation pooled over the family's series (stats.pool_serial) once they hold this many lag
# pairs in all, instead of for SERIAL_RHO_MAX.
SERIAL_POOL_PAIRS = 20
# A family pools the series of up to this many runs, SERIAL_MIN_RUNS and more included: a
# series' own estimate from 20 runs, with its small-sample margins, widened a family of 30 on
# the band's edge whose lag-1 varies between its series too little (9% of families with a
# false claim) and a family whose lag-1 does not vary too much (a 10% change named less often
# at 20 runs than at 15); the family's bound does neither there.  At 30-60 runs it widens the
# most correlated series of such a family too little (2.8% false slower a comparison, 5.0% of
# families at 60), and each series' own estimate widened such a family of interleaved series
# too little as well (8.5% of families under lag-1 0.6 at 30 runs): beyond this many runs, in
# a family, each series is widened for the larger of its own estimate (not raised) and the
# bound pooled over all the family's series (stats._rho_for; docs/statistics.md).
SERIAL_POOL_MAX_RUNS = 25
# The pooled estimate is raised to this many standard errors above it (an upper confidence
# bound, the standard error from the spread of the series' own estimates, never below the
# sampling model's): correlation that differs between series then under-widens few of them
# (docs/statistics.md, "Pooled serial correlation").
SERIAL_POOL_Z = 1.645
CORRECTIONS = ("holm", "bh", "none")


# --- estimators -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimator:
    """The location estimator: ``median``, ``mean`` or ``trim`` with LOW/HIGH proportions."""

    kind: str  # median | mean | trim
    low: float = 0.2
    high: float = 0.2
    # The default ("trim"): trim at most LOW/HIGH, but always keep MIN_RUNS runs (6 or 7 runs
    # are not trimmed: the mean), so the 6-run rule holds for it too.  An explicit
    # trim:LOW:HIGH trims exactly, and trimming below MIN_RUNS is refused.
    keep_min: bool = False

    def __str__(self) -> str:
        if self.kind == "trim":
            return "trim" if self.keep_min else f"trim:{fmt_plain(self.low)}:{fmt_plain(self.high)}"
        return self.kind

    @property
    def label(self) -> str:
        if self.kind == "trim":
            if self.low == self.high:
                return f"{fmt_share(self.low, 0)} trimmed mean"
            return (f"trimmed mean (lowest {fmt_share(self.low, 0)}, highest "
                    f"{fmt_share(self.high, 0)} left out)")
        return self.kind

    def kept(self, n: int) -> int:
        """Runs left after trimming ``n``."""
        kl, kh = trim_counts(n, self)
        return n - kl - kh

    def min_runs(self) -> int:
        """The fewest runs that leave MIN_RUNS after trimming."""
        n = MIN_RUNS
        while self.kept(n) < MIN_RUNS:
            n += 1
        return n


DEFAULT_ESTIMATOR = Estimator("trim", 0.2, 0.2, keep_min=True)
ESTIMATOR_CHOICES = "median, mean, trim (20% each side) or trim:LOW:HIGH (e.g. trim:0:0.25)"


def parse_estimator(text: str | None) -> Estimator:
    """'median' | 'mean' | 'trim' | 'trim:LOW:HIGH' (proportions: 'trim:0:0.125' leaves out the
    slowest of 8 runs).  Raises ValueError with a message naming the valid choices."""
    if text is None or text == "":
        return DEFAULT_ESTIMATOR
    t = text.strip().lower()
    if t in ("median", "mean"):
        return Estimator(t, 0.0, 0.0)
    if t == "trim":
        return DEFAULT_ESTIMATOR
    m = re.fullmatch(r"trim:([0-9.]+):([0-9.]+)", t)
    if m:
        try:
            lo, hi = float(m.group(1)), float(m.group(2))
        except ValueError:
            lo = hi = -1.0
        if 0 <= lo < 0.5 and 0 <= hi < 0.5 and lo + hi < 0.8:
            return Estimator("trim", lo, hi)
        raise ValueError(f"estimator {text!r}: LOW and HIGH are proportions in [0, 0.5) "
                         f"(trim:0.2:0.2 leaves out 20% each side); valid: {ESTIMATOR_CHOICES}")
    raise ValueError(f"unknown estimator {text!r}; valid: {ESTIMATOR_CHOICES}")


def check_estimator_runs(est: Estimator, runs: int) -> str | None:
    """None when ``runs`` per configuration leave at least MIN_RUNS after trimming, else why."""
    if est.kept(runs) >= MIN_RUNS:
        return None
    return (f"{est} leaves {est.kept(runs)} of {runs} runs, fewer than the {MIN_RUNS} a verdict "
            f"needs; use at least {est.min_runs()} runs, or a lighter trim (trim:0.1:0.1, "
            "median, mean)")


def trim_counts(n: int, est: Estimator) -> tuple[int, int]:
    if est.kind != "trim":
        return 0, 0
    # The epsilon keeps 0.29 x 100 (28.999999999999996 in floating point) at 29 runs.
    kl, kh = math.floor(est.low * n + 1e-9), math.floor(est.high * n + 1e-9)
    while est.keep_min and n - kl - kh < MIN_RUNS and (kl or kh):
        # Symmetric trimming stays symmetric: one fewer from each side.
        kl, kh = max(0, kl - 1), max(0, kh - 1)
    return kl, kh


# --- bands ------------------------------------------------------------------------------------
# A metric's equivalence band: the wider of a relative part (a fraction of the baseline's
# centre) and an absolute part (in the metric's own unit).  Each kind of metric has a default
# (metrics.MEMORY_BAND, metrics.COUNT_FLOOR: default_band).

@dataclass(frozen=True)
class Band:
    """+-max(rel x |baseline centre|, absolute); absolute in the metric's unit."""

    rel: float
    absolute: float = 0.0

    def edges(self, scale: str, base_loc: float) -> tuple[float, float]:
        """The band on a comparison's scale: log-ratio, or difference (diff, exact)."""
        if scale == "log":
            r = max(self.rel, self.absolute / abs(base_loc) if base_loc else math.inf)
            # bisect derives bands beyond 100% from large regressions: no lower edge then.
            return (math.log1p(-r) if r < 1 else -math.inf), math.log1p(r)
        w = max(self.rel * abs(base_loc), self.absolute)
        return -w, w


def parse_band(text: str, unit: str) -> Band:
    """A band as given on the command line or in a suite, for a metric of ``unit``: '2%',
    '0.02' (relative), '64KiB' / '5ms' / '3events' (absolute, converted to ``unit``), or both
    joined by '+' ('1%+0.5events': the wider of the two).  ValueError names the mistake."""
    kind = metric_kind(unit)
    rel, absolute = 0.0, 0.0
    for part in text.replace(" ", "").split("+"):
        m = re.fullmatch(r"(-?[0-9]*\.?[0-9]+(?:e-?[0-9]+)?)(%|[A-Za-zµ]*)", part)
        if not m:
            raise ValueError(f"'{text}' is not a band (a fraction 0.02, a percentage 2%, or an "
                             "amount with its unit: 64KiB, 5ms, 3events)")
        value, u = float(m.group(1)), m.group(2)
        if value <= 0:
            raise ValueError(f"a band must be positive ('{text}')")
        if u in ("", "%"):
            rel = value / 100 if u == "%" else value
            if rel >= 1 and u == "":
                raise ValueError(f"a relative band is a fraction below 1 ('{text}': 0.02 or "
                                 "2% means +-2%)")
            continue
        given = unit_kind(u)
        if given is None:
            raise ValueError(f"unknown unit '{u}' in '{text}' (time: ns, us, ms, s; memory: B, "
                             "KiB, MiB, GiB; counts: events)")
        if given != kind:
            raise ValueError(f"'{text}' is {given}, but the metric is measured in "
                             f"{unit or 'counts'} ({kind})")
        absolute = value * in_base_unit(u) / in_base_unit(unit)
    return Band(rel, absolute)


def default_band(metric: str, info: MetricInfo | None, threshold: float) -> Band:
    """The per-kind default (the table above) for a metric without a band of its own."""
    kind = metric_kind(info.unit) if info is not None else "time"
    if kind == "memory":
        return Band(MEMORY_BAND)
    if kind == "count" and not metric.endswith("_per_op") and not (info and info.deterministic):
        return Band(threshold, COUNT_FLOOR)
    return Band(threshold)


# --- the plan ---------------------------------------------------------------------------------

class _Planned(Protocol):
    def plan(self) -> Plan: ...


class _Judged(Protocol):  # a ResultSet: what Plan.of reads of it
    @property
    def settings(self) -> _Planned: ...


@dataclass
class Plan:
    """How a result's comparisons are judged: stored in rs.settings.comparison."""

    threshold: float = DEFAULT_THRESHOLD
    correction: str = DEFAULT_CORRECTION  # the primary metric's family
    secondary: str = SECONDARY_CORRECTION  # every other metric's family
    estimator: str = str(DEFAULT_ESTIMATOR)
    alpha: float = ALPHA
    looks: int = 1  # planned looks at the data (adaptive measuring); alpha is split over them
    # The level the verdicts are judged at where the looks spent alpha unevenly (look_level:
    # the level of the look measuring stopped at); None: alpha split evenly over ``looks``.
    level: float | None = None
    # Bands of their own (--threshold METRIC=VALUE, a suite's [bands]): metric or kind -> text.
    bands: dict[str, str] = field(default_factory=dict)
    # Memory and counts get their kinds' default bands (default_band); False for results
    # stored before those existed, which are judged as they were: +-threshold for every metric.
    kind_bands: bool = True
    # Every metric other than the primary's family is one family (plan.secondary, BH): in an
    # A/A table at most alpha of tables hold a false exploratory claim.  False for results
    # stored before, judged as they were: one family per metric.
    pool_exploratory: bool = True

    @property
    def alpha_look(self) -> float:
        """The level the verdicts are judged at (before their family's adjustment)."""
        return self.level if self.level is not None else self.alpha / max(1, self.looks)

    def band_for(self, metric: str, info: MetricInfo | None) -> Band:
        """The band ``metric`` is judged against: its own, its kind's, or the default."""
        unit = info.unit if info is not None else "s"
        spec = (self.bands.get(metric) or self.bands.get(metric_family(metric))
                or self.bands.get(metric_kind(unit)))
        if spec is not None:
            return parse_band(spec, unit)
        if not self.kind_bands:
            return Band(self.threshold)
        return default_band(metric, info, self.threshold)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """From a stored object (Settings.from_dict); keys it does not have keep their defaults."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__
                      if k in data and data[k] is not None})

    @classmethod
    def of(cls, rs: _Judged, **override: Any) -> Plan:
        """The plan stored with the result (Settings.plan: its ``comparison``, earlier versions'
        keys folded in), with non-None overrides from the command line.  A result without one
        is judged with the defaults of earlier versions (``kind_bands`` False: +-threshold for
        every metric)."""
        stored = rs.settings.plan()
        # --threshold METRIC=BAND adds to the stored bands (a copy: the stored plan stays)
        override = {**override, "bands": {**stored.bands, **(override.get("bands") or {})}}
        return replace(stored, **{k: v for k, v in override.items() if v is not None})
