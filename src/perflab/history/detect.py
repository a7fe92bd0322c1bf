"""Change points in stored series: a change-point search + Student's t-test, as Apache Otava.

Candidates come from ruptures (kernel PELT, Gaussian kernel, a liberal penalty) over sliding
windows; a bottom-up merge then keeps the change points with a t-test p <= max_pvalue and a
relative change above min_change (Otava's rule and Otava's test).  Apache Otava's own
E-divisive pass is available with ``algorithm = "otava"`` and the ``perflab[otava]`` extra;
the figures behind the default are in docs/history.md.  perflab feeds one value per point (the
median of that result's runs) and adds what a user needs to act: the commit range, means and
spread on both sides, direction (regression or improvement) and the ignore list.

Settings come from a TOML file (``.perflab/detect.toml`` by default)::

    [detect]
    max_pvalue = 0.0001    # t-test significance of a change point in a long series
    series_alpha = 0.01    # a short series: max(max_pvalue, series_alpha / places a change fits)
    confirm_pvalue = 0.05  # the same commit range on another machine: t-test at that place
    min_change = 0.02      # ignore changes smaller than 2% (relative)
    window = 50            # sliding window, in points (as Otava's)
    min_points = 4         # shorter series are not analysed
    min_segment = 2        # points a level must last (1: flag the newest result alone)
    algorithm = "ruptures" # or "otava" (pip install 'perflab[otava]')

    [benchmarks."eh/*"]    # per-benchmark overrides (fnmatch glob on the benchmark name)
    min_change = 0.05

    [[ignore]]             # change points not to report
    benchmark = "mmap/*"   # glob; required
    metric = "wall_time"   # optional
    commit = "1a2b3c"      # optional: a change whose commit range ends at this commit (prefix)
    reason = "kernel upgrade on the runner"
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.errors import PerflabError
from perflab.history.series import Series, SeriesFilter, SeriesKey

if TYPE_CHECKING:
    from perflab.storage import Store

DEFAULT_CONFIG = Path(".perflab/detect.toml")
_KNOWN = {"max_pvalue", "min_change", "window", "min_points", "min_segment", "algorithm",
          "series_alpha", "confirm_pvalue"}
_ALGORITHMS = ("ruptures", "otava")


@dataclass
class Thresholds:
    # Otava uses 0.001; on 100-point flat noise that flagged 6 of 30 series here, 1e-4 none
    # of 60 while still finding 5% steps in 2% noise.
    max_pvalue: float = 0.0001
    # A series of n points has n - 2 min_segment + 1 places a change could be; its t-test is
    # judged at series_alpha split over them (Bonferroni), or max_pvalue if that is looser:
    # 1e-4 from about 100 points on, 0.0033 at 6 (3 + 3 points: a week of nightly runs).
    series_alpha: float = 0.01
    # A change found on one machine is tested on every other machine that measured both
    # commits of its range, at that place alone (no search): one t-test at this level, in the
    # same direction.
    confirm_pvalue: float = 0.05
    min_change: float = 0.0
    window: int = 50
    min_points: int = 4
    # A single outlying result makes a one-point segment that the t-test calls significant
    # (its spread is zero): 12 of 200 flat t(3)-noise series here.  Segments shorter than
    # this are dropped; 1 reports a change from its first point on.
    min_segment: int = 2
    # "ruptures" (default: ruptures' PELT candidates + t-test merge) or "otava" (Apache
    # Otava's E-divisive + t-test; needs the perflab[otava] extra).
    algorithm: str = "ruptures"


@dataclass
class IgnoreRule:
    benchmark: str
    metric: str | None = None
    commit: str | None = None
    reason: str = ""

    def matches(self, key: SeriesKey, commit_after: str | None) -> bool:
        if not fnmatch.fnmatchcase(key.benchmark, self.benchmark):
            return False
        if self.metric and self.metric != key.metric:
            return False
        if self.commit:
            return bool(commit_after) and str(commit_after).startswith(self.commit)
        return True


@dataclass
class DetectSettings:
    defaults: Thresholds = field(default_factory=Thresholds)
    per_benchmark: dict[str, dict[str, Any]] = field(default_factory=dict)
    ignore: list[IgnoreRule] = field(default_factory=list)
    source: str = ""

    def for_benchmark(self, benchmark: str) -> Thresholds:
        t = Thresholds(**vars(self.defaults))
        for pattern, over in self.per_benchmark.items():
            if fnmatch.fnmatchcase(benchmark, pattern):
                for k, v in over.items():
                    setattr(t, k, type(getattr(t, k))(v))
        return t


def _check_thresholds(d: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    unknown = set(d) - _KNOWN
    if unknown:
        raise PerflabError(f"{path}: unknown setting(s) {sorted(unknown)} in {where}",
                           f"use only {sorted(_KNOWN)}")
    for k, v in d.items():
        if k == "algorithm":
            if v not in _ALGORITHMS:
                raise PerflabError(f"{path}: {where}.algorithm = {v!r} is not known",
                                   f"use one of {', '.join(map(repr, _ALGORITHMS))}")
            continue
        if not isinstance(v, int | float) or isinstance(v, bool) or v < 0:
            raise PerflabError(f"{path}: {where}.{k} = {v!r} is not a non-negative number",
                               "write a number such as 0.001")
    if "window" in d and d["window"] < 2:
        raise PerflabError(f"{path}: {where}.window must be at least 2", "use e.g. window = 50")
    return d


def load_settings(path: Path | None) -> DetectSettings:
    """Read the detect settings; a missing default file means built-in defaults."""
    explicit = path is not None
    p = Path(path) if path is not None else DEFAULT_CONFIG
    if not p.exists():
        if explicit:
            raise PerflabError(f"detect settings file {p} does not exist",
                               "give an existing TOML file, or leave --config out")
        return DetectSettings()
    try:
        data = tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise PerflabError(f"{p} is not valid TOML ({e})", "fix the syntax of the file") from e
    s = DetectSettings(source=str(p))
    top = _check_thresholds(dict(data.get("detect", {})), "[detect]", p)
    s.defaults = Thresholds(**{**vars(Thresholds()), **top})
    s.defaults.window = int(s.defaults.window)
    s.defaults.min_points = int(s.defaults.min_points)
    s.defaults.min_segment = int(s.defaults.min_segment)
    for pattern, over in dict(data.get("benchmarks", {})).items():
        s.per_benchmark[pattern] = _check_thresholds(dict(over), f"[benchmarks.\"{pattern}\"]", p)
    for i, rule in enumerate(data.get("ignore", [])):
        if not isinstance(rule, dict) or "benchmark" not in rule:
            raise PerflabError(f"{p}: [[ignore]] entry {i + 1} has no 'benchmark'",
                               "give at least benchmark = \"glob\" in every [[ignore]]")
        s.ignore.append(IgnoreRule(str(rule["benchmark"]), rule.get("metric"),
                                   str(rule["commit"]) if rule.get("commit") else None,
                                   str(rule.get("reason", ""))))
    extra = set(data) - {"detect", "benchmarks", "ignore"}
    if extra:
        raise PerflabError(f"{p}: unknown section(s) {sorted(extra)}",
                           "use [detect], [benchmarks.\"glob\"] and [[ignore]]")
    return s


def series_level(n: int, t: Thresholds) -> float:
    """The t-test's level for a series of ``n`` points (Thresholds.series_alpha)."""
    places = max(1, n - 2 * max(1, t.min_segment) + 1)
    return max(t.max_pvalue, t.series_alpha / places)


@dataclass
class ChangePoint:
    key: SeriesKey
    index: int  # first point after the change
    commit_before: str | None  # last point before the change
    commit_after: str | None  # first point after it: the change lies in (before, after]
    result_before: int
    result_after: int
    change_pct: float
    mean_before: float
    std_before: float
    mean_after: float
    std_after: float
    p_value: float
    regression: bool
    ignored: str | None = None  # reason, when an ignore rule matched
    direction: str = "lower"  # of the metric; "none": a change, never a regression
    # step: a new level; drift: the points between the neighbouring change points follow a
    # line better than two levels (classify); unchanged: a machine that measured the range
    # of a change found elsewhere and shows none (across_machines)
    kind: str = "step"
    found_by: str = "search"  # or "range": tested at a range found on another machine

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.key.benchmark, "params": self.key.cell, "config": self.key.config,
            "machine": self.key.machine_id, "machine_name": self.key.machine_text,
            "metric": self.key.metric,
            "commit_before": self.commit_before, "commit_after": self.commit_after,
            "result_before": self.result_before, "result_after": self.result_after,
            "change_pct": self.change_pct, "mean_before": self.mean_before,
            "std_before": self.std_before, "mean_after": self.mean_after,
            "std_after": self.std_after, "p_value": self.p_value,
            "regression": self.regression, "ignored": self.ignored,
            "direction": self.direction, "kind": self.kind, "found_by": self.found_by,
        }


@dataclass
class TTestStats:
    """Both sides of a change point and the t-test between them (Otava's TTestStats fields)."""

    mean_1: float
    mean_2: float
    std_1: float
    std_2: float
    pvalue: float


def _ttest(left: np.ndarray, right: np.ndarray) -> TTestStats:
    from scipy.stats import ttest_ind_from_stats

    m1, m2 = float(np.mean(left)), float(np.mean(right))
    s1 = float(np.std(left, ddof=1)) if len(left) > 1 else 0.0
    s2 = float(np.std(right, ddof=1)) if len(right) > 1 else 0.0
    if s1 == 0.0 and s2 == 0.0:
        # Exact (zero-spread) sides, e.g. instruction counts: any difference is certain.
        p = 1.0 if m1 == m2 else 0.0
    else:
        # Otava's test: Student's t with pooled variance, two-sided.
        p = float(ttest_ind_from_stats(m1, s1, len(left), m2, s2, len(right),
                                       equal_var=True).pvalue)
    return TTestStats(m1, m2, s1, s2, p)


def _candidates(data: np.ndarray, min_size: int) -> list[int]:
    """Candidate change points from ruptures' kernel change-point search (PELT, in C).

    The Gaussian (rbf) kernel on robust z-scores bounds the weight of any one run, so a burst
    of two or three outlying runs stays inside its level where a least-squares cost cuts it out
    as a segment of its own (8% false alarms on flat t(3) noise with the linear kernel, 0% with
    rbf: benchmarks/changepoint_libraries.py).  The penalty (log n) is liberal: the t-test
    merge below decides which candidates are real, as Otava's relaxed E-divisive pass followed
    by its t-test does.
    """
    import ruptures as rpt

    n = len(data)
    # Robust noise scale: MAD of first differences (a step moves one difference only).
    sigma = 1.4826 * float(np.median(np.abs(np.diff(data)))) / math.sqrt(2)
    scale = max(float(np.max(np.abs(data))), 1e-300)
    sigma = max(sigma, scale * 1e-9)  # exact series: any real step saturates the kernel
    z = ((data - np.median(data)) / sigma).reshape(-1, 1)
    algo = rpt.KernelCPD(kernel="rbf", params={"gamma": 0.5}, min_size=max(1, min_size), jump=1)
    bkps = algo.fit(z).predict(pen=math.log(n))
    return [int(b) for b in bkps[:-1]]


def _magnitude(st: TTestStats) -> float:
    """Otava's change magnitude: the larger of the forward and backward relative change."""
    if st.mean_1 == 0 or st.mean_2 == 0:
        return math.inf if st.mean_1 != st.mean_2 else 0.0
    return max(abs(st.mean_2 / st.mean_1 - 1.0), abs(st.mean_1 / st.mean_2 - 1.0))


def _merge(data: np.ndarray, cps: list[int], t: Thresholds) -> list[tuple[int, TTestStats]]:
    """Drop the weakest change point until every one left is significant and large enough.

    Otava's merge (otava.analysis.merge), re-written on plain indices because the rule is a
    dozen lines and Otava is an optional extra: the candidate with the largest p-value goes
    while it exceeds max_pvalue, then the one with the smallest magnitude while that is below
    min_change; its neighbours are re-tested against the wider segments each time.
    """
    cps = sorted(cps)
    while cps:
        bounds = [0, *cps, len(data)]
        tested = [_ttest(data[bounds[i]:bounds[i + 1]], data[bounds[i + 1]:bounds[i + 2]])
                  for i in range(len(cps))]
        worst_p = max(range(len(cps)), key=lambda j: tested[j].pvalue)
        if tested[worst_p].pvalue > t.max_pvalue:
            cps.pop(worst_p)
            continue
        smallest = min(range(len(cps)), key=lambda j: _magnitude(tested[j]))
        if _magnitude(tested[smallest]) >= t.min_change:
            return list(zip(cps, tested, strict=True))
        cps.pop(smallest)
    return []


def change_points_of(values: list[float], t: Thresholds) -> list[tuple[int, TTestStats]]:
    """Change points of a plain list of values: [(index of the first point after, stats)].

    Candidates come from ruptures (kernel PELT) and each is kept only when Student's t-test between
    the segments on either side gives p <= max_pvalue and the relative change is at least
    min_change (Otava's rule).  With ``algorithm = "otava"`` in the settings and the
    ``perflab[otava]`` extra installed, Apache Otava's own E-divisive pass is used instead.
    Why ruptures and not Otava by default: docs/history.md (figures from
    benchmarks/changepoint_libraries.py).
    """
    if len(values) < max(t.min_points, 3):
        return []
    data = np.asarray([float(v) for v in values], dtype=float)
    t = replace(t, max_pvalue=series_level(len(data), t))
    if t.algorithm == "otava":
        return _otava_change_points(values, t)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        # Windows of `window` points (Otava's sliding window), overlapping by half, so a long
        # history is searched locally; candidates from every window are merged together.
        w = max(int(t.window), 2)
        cands: set[int] = set()
        start = 0
        while True:
            stop = min(len(data), start + w)
            cands.update(start + c for c in _candidates(data[start:stop], t.min_segment))
            if stop >= len(data):
                break
            start += max(1, w // 2)
        found = _merge(data, sorted(cands), t)
    return [(i, st) for i, st in found
            if i >= t.min_segment and len(data) - i >= t.min_segment]


def _otava_change_points(values: list[float], t: Thresholds) -> list[tuple[int, TTestStats]]:
    try:
        from otava.analysis import TTestSignificanceTester, compute_change_points, merge
    except ImportError as e:
        raise PerflabError("algorithm = \"otava\" needs Apache Otava, which is not installed",
                           "pip install 'perflab[otava]', or remove algorithm from the "
                           "detect settings") from e
    # Otava's detector slices only Python sequences (an ndarray window is not sliced), so
    # hand it a list of floats.
    data = [float(v) for v in values]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        cps, _weak = compute_change_points(data, window_len=max(int(t.window), 2),
                                           max_pvalue=t.max_pvalue, min_magnitude=t.min_change)
        if t.min_segment > 1 and cps:
            bounds = [0] + [c.index for c in cps] + [len(data)]
            short = {i for i in range(len(bounds) - 1)
                     if bounds[i + 1] - bounds[i] < t.min_segment}
            drop = {j for i in short for j in (i - 1, i) if 0 <= j < len(cps)}
            if drop:
                kept = [c for j, c in enumerate(cps) if j not in drop]
                tester = TTestSignificanceTester(t.max_pvalue)
                intervals = tester.get_intervals(kept)
                kept = [tester.change_point(c.to_candidate(), data, intervals) for c in kept]
                cps = merge(kept, data, t.max_pvalue, t.min_change)
    return [(int(c.index), TTestStats(float(c.stats.mean_1), float(c.stats.mean_2),
                                      float(c.stats.std_1), float(c.stats.std_2),
                                      float(c.stats.pvalue) if c.stats.pvalue is not None
                                      else 0.0))
            for c in cps]


DRIFT_STEP_PVALUE = 0.003  # steps beyond a trend at least this significant are steps
DRIFT_MIN_LEVEL = 5  # points each level needs before a change can be judged a drift


def _steps_beyond_trend(data: np.ndarray, indices: list[int]) -> float:
    """The p-value of the level shifts at ``indices`` once a straight line through the points
    is allowed for (partial F-test of line + shifts against the line alone, least squares)."""
    from scipy.stats import f as fisher

    n, k = len(data), len(indices)
    x = np.arange(n, dtype=float)
    line = np.column_stack([np.ones(n), x])
    full = np.column_stack([line] + [(x >= i).astype(float) for i in indices])
    df = n - 2 - k
    if df < 1:
        return 0.0
    rss_line = float(np.sum((data - line @ np.linalg.lstsq(line, data, rcond=None)[0]) ** 2))
    rss_full = float(np.sum((data - full @ np.linalg.lstsq(full, data, rcond=None)[0]) ** 2))
    if rss_full <= 0:
        return 0.0 if rss_line > 0 else 1.0
    return float(fisher.sf(max(rss_line - rss_full, 0.0) / k / (rss_full / df), k, df))


def classify(values: list[float], indices: list[int]) -> list[str]:
    """"step" or "drift" for each change point (sorted indices).  A drift is a change that a
    straight line explains: the level shifts add nothing significant to a line through the
    points (p > DRIFT_STEP_PVALUE).  Judged first for all change points together over the
    whole series (a slow drift that the search cut into stairs), then for each over the points
    between its neighbouring change points; a level of fewer than DRIFT_MIN_LEVEL points is
    too short to tell a trend from a step, and is a step."""
    data = np.asarray(values, dtype=float)
    bounds = [0, *indices, len(data)]
    levels = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    if not indices or min(levels) < DRIFT_MIN_LEVEL:
        return ["step"] * len(indices)
    with np.errstate(all="ignore"):
        if _steps_beyond_trend(data, indices) > DRIFT_STEP_PVALUE:
            return ["drift"] * len(indices)
        return ["drift" if _steps_beyond_trend(data[bounds[j]:bounds[j + 2]],
                                               [i - bounds[j]]) > DRIFT_STEP_PVALUE
                else "step" for j, i in enumerate(indices)]


def detect_series(series: Series, settings: DetectSettings) -> list[ChangePoint]:
    t = settings.for_benchmark(series.key.benchmark)
    values = series.medians()
    out: list[ChangePoint] = []
    found = change_points_of(values, t)
    kinds = classify(values, [i for i, _ in found])
    for (idx, st), kind in zip(found, kinds, strict=True):
        before, after = series.points[idx - 1], series.points[idx]
        m1, m2 = float(st.mean_1), float(st.mean_2)
        pct = (m2 / m1 - 1.0) * 100.0 if m1 != 0 else math.inf
        # A metric with no direction (a checksum, an operation count) changes, but is never a
        # regression.
        worse = series.direction != "none" and (m2 < m1 if series.direction == "higher"
                                                else m2 > m1)
        p = float(st.pvalue) if st.pvalue is not None and math.isfinite(st.pvalue) else 0.0
        cp = ChangePoint(series.key, idx, before.commit, after.commit, before.result_id,
                         after.result_id, pct, m1, float(st.std_1), m2, float(st.std_2), p, worse,
                         direction=series.direction, kind=kind)
        _ignore(cp, series.key, settings)
        out.append(cp)
    return out


def _ignore(cp: ChangePoint, key: SeriesKey, settings: DetectSettings) -> None:
    for rule in settings.ignore:
        if rule.matches(key, cp.commit_after):
            cp.ignored = rule.reason or "ignore list"
            return


def _range_test(s: Series, before: str, after: str, found_at: list[int],
                t: Thresholds) -> tuple[int, TTestStats] | None:
    """The t-test of ``s`` split after its last point at commit ``before``, when its next
    point is at commit ``after`` (it measured the range): its own change points bound the two
    sides."""
    commits = [p.commit for p in s.points]
    if before not in commits or after not in commits:
        return None
    split = len(commits) - commits[::-1].index(before)
    if split >= len(commits) or commits[split] != after:
        return None
    lo = max([i for i in found_at if i < split], default=0)
    hi = min([i for i in found_at if i > split], default=len(commits))
    data = np.asarray(s.medians(), dtype=float)
    left, right = data[lo:split], data[split:hi]
    if len(left) < max(2, t.min_segment) or len(right) < max(2, t.min_segment):
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return split, _ttest(left, right)


def across_machines(items: list[tuple[Series, list[ChangePoint]]],
                    settings: DetectSettings) -> list[tuple[Series, ChangePoint]]:
    """Every other machine that measured both commits of a change's range (same benchmark,
    cell, configuration, metric and tool), tested at that place alone: a change in the same
    direction at p <= confirm_pvalue (one-sided) and at least min_change is reported for that
    machine too (found_by "range"); otherwise an "unchanged" entry, so a report names every
    machine that measured the range.  Each range is tested once per machine."""
    def family(s: Series) -> tuple[Any, ...]:
        k = s.key
        return (k.benchmark, k.cell, k.config, k.metric, k.source)

    out: list[tuple[Series, ChangePoint]] = []
    seen = {(s.key, cp.commit_before, cp.commit_after) for s, cps in items for cp in cps}
    for s, cps in items:
        for cp in cps:
            if cp.ignored or cp.kind == "unchanged" or not cp.commit_before \
                    or not cp.commit_after:
                continue
            for other, other_cps in items:
                key = (other.key, cp.commit_before, cp.commit_after)
                if family(other) != family(s) or key in seen:
                    continue
                seen.add(key)
                t = settings.for_benchmark(other.key.benchmark)
                tested = _range_test(other, cp.commit_before, cp.commit_after,
                                     [c.index for c in other_cps], t)
                if tested is not None:
                    found = _range_point(other, cp, *tested, t)
                    _ignore(found, other.key, settings)
                    out.append((other, found))
    return out


def _range_point(s: Series, found: ChangePoint, idx: int, st: TTestStats,
                 t: Thresholds) -> ChangePoint:
    m1, m2 = st.mean_1, st.mean_2
    pct = (m2 / m1 - 1.0) * 100.0 if m1 != 0 else math.inf
    same = (pct > 0) == (found.change_pct > 0) and pct != 0
    one_sided = st.pvalue / 2 if same else 1 - st.pvalue / 2
    confirmed = one_sided <= t.confirm_pvalue and _magnitude(st) >= t.min_change
    worse = confirmed and s.direction != "none" and (m2 < m1 if s.direction == "higher"
                                                     else m2 > m1)
    before, after = s.points[idx - 1], s.points[idx]
    return ChangePoint(s.key, idx, before.commit, after.commit, before.result_id,
                       after.result_id, pct, m1, st.std_1, m2, st.std_2, one_sided, worse,
                       direction=s.direction, kind=found.kind if confirmed else "unchanged",
                       found_by="range")


@dataclass
class Findings:
    """What detect found in the store: the series it looked at, every change point (each
    series' own, and a change's range tested on the other machines that measured it where it
    changed there too), and the ranges that did not change on another machine."""
    series: list[Series]
    found: list[tuple[Series, ChangePoint]]
    unchanged: list[tuple[Series, ChangePoint]]

    def change_points(self) -> list[ChangePoint]:
        return [cp for _, cp in self.found]


def find_changes(store: Store, which: SeriesFilter, repo: Path | None, settings: DetectSettings,
                 *, every_metric: bool) -> Findings:
    """Change points in the stored series ``which`` selects (in ``repo``'s commit order when
    given): of the metric that decided each result, or of ``every_metric``; the ranges of the
    changes found are tested on the other machines too (across_machines)."""
    from perflab.history.series import deciding_series, load_series

    series = load_series(store, which, repo)
    if not which.metric and not every_metric:
        series = deciding_series(store, series)
    items = [(s, detect_series(s, settings)) for s in series]
    ranges = across_machines(items, settings)
    found = [(s, cp) for s, cps in items for cp in cps]
    found += [(s, cp) for s, cp in ranges if cp.kind != "unchanged"]
    return Findings(series, found, [(s, cp) for s, cp in ranges if cp.kind == "unchanged"])
