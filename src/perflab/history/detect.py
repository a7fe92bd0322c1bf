"""Change points in stored series: E-divisive means + Student's t-test, as Apache Otava does.

The algorithm is Apache Otava's (``otava.analysis.compute_change_points``: sliding-window
E-divisive split with a relaxed p-value, then a bottom-up merge that keeps the change points
with p <= max_pvalue and a relative change above min_change).  perflab feeds it one value per
point (the median of that result's runs) and adds what a user needs to act: the commit range,
means and spread on both sides, direction (regression or improvement) and the ignore list.

Settings come from a TOML file (``.perflab/detect.toml`` by default)::

    [detect]
    max_pvalue = 0.0001    # t-test significance of a change point
    min_change = 0.02      # ignore changes smaller than 2% (relative)
    window = 50            # Otava's sliding window, in points
    min_points = 4         # shorter series are not analysed
    min_segment = 2        # points a level must last (1: flag the newest result alone)

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perflab.errors import PerflabError
from perflab.history.series import Series, SeriesKey

DEFAULT_CONFIG = Path(".perflab/detect.toml")
_KNOWN = {"max_pvalue", "min_change", "window", "min_points", "min_segment"}


@dataclass
class Thresholds:
    # Otava uses 0.001; on 100-point flat noise that flagged 6 of 30 series here, 1e-4 none
    # of 60 while still finding 5% steps in 2% noise.
    max_pvalue: float = 0.0001
    min_change: float = 0.0
    window: int = 50
    min_points: int = 4
    # A single outlying result makes a one-point segment that the t-test calls significant
    # (its spread is zero): 12 of 200 flat t(3)-noise series here.  Segments shorter than
    # this are dropped; 1 reports a change from its first point on.
    min_segment: int = 2


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.key.benchmark, "params": self.key.cell, "config": self.key.config,
            "machine": self.key.machine_id, "metric": self.key.metric,
            "commit_before": self.commit_before, "commit_after": self.commit_after,
            "result_before": self.result_before, "result_after": self.result_after,
            "change_pct": self.change_pct, "mean_before": self.mean_before,
            "std_before": self.std_before, "mean_after": self.mean_after,
            "std_after": self.std_after, "p_value": self.p_value,
            "regression": self.regression, "ignored": self.ignored,
        }


def change_points_of(values: list[float], t: Thresholds) -> list[tuple[int, Any]]:
    """Otava's change points of a plain list of values: [(index, TTestStats)]."""
    from otava.analysis import TTestSignificanceTester, compute_change_points, merge

    if len(values) < max(t.min_points, 3):
        return []
    # Otava's detector slices only Python sequences (an ndarray window is not sliced), so
    # hand it a list of floats.
    data = [float(v) for v in values]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # Exact (zero-spread) segments make the t statistic infinite: p = 0 is the right answer.
        warnings.simplefilter("ignore", RuntimeWarning)
        cps, _weak = compute_change_points(data, window_len=max(int(t.window), 2),
                                           max_pvalue=t.max_pvalue, min_magnitude=t.min_change)
        if t.min_segment > 1 and cps:
            bounds = [0] + [c.index for c in cps] + [len(data)]
            short = {i for i in range(len(bounds) - 1)
                     if bounds[i + 1] - bounds[i] < t.min_segment}
            # segment i lies between change points i-1 and i
            drop = {j for i in short for j in (i - 1, i) if 0 <= j < len(cps)}
            if drop:
                kept = [c for j, c in enumerate(cps) if j not in drop]
                tester = TTestSignificanceTester(t.max_pvalue)
                intervals = tester.get_intervals(kept)
                kept = [tester.change_point(c.to_candidate(), data, intervals) for c in kept]
                cps = merge(kept, data, t.max_pvalue, t.min_change)
    return [(int(c.index), c.stats) for c in cps]


def detect_series(series: Series, settings: DetectSettings) -> list[ChangePoint]:
    t = settings.for_benchmark(series.key.benchmark)
    values = series.medians()
    out: list[ChangePoint] = []
    for idx, st in change_points_of(values, t):
        before, after = series.points[idx - 1], series.points[idx]
        m1, m2 = float(st.mean_1), float(st.mean_2)
        pct = (m2 / m1 - 1.0) * 100.0 if m1 != 0 else math.inf
        worse = m2 < m1 if series.higher_is_better else m2 > m1
        p = float(st.pvalue) if st.pvalue is not None and math.isfinite(st.pvalue) else 0.0
        cp = ChangePoint(series.key, idx, before.commit, after.commit, before.result_id,
                         after.result_id, pct, m1, float(st.std_1), m2, float(st.std_2), p, worse)
        for rule in settings.ignore:
            if rule.matches(series.key, after.commit):
                cp.ignored = rule.reason or "ignore list"
                break
        out.append(cp)
    return out
