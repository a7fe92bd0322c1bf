"""Change-point detection on synthetic series with known steps, and on flat noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflab.errors import PerflabError
from perflab.history.detect import (
    DetectSettings,
    Thresholds,
    change_points_of,
    detect_series,
    load_settings,
)
from perflab.history.series import Point, Series, SeriesKey
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.unit

STEPS = [30, 60, 90]


def stepped(seed: int) -> list[float]:
    """+20%, then -10%, then +5% steps, each in about 2% noise."""
    r = np.random.default_rng(seed)
    levels = [100.0, 120.0, 108.0, 113.4]
    return list(np.concatenate([r.normal(m, 0.02 * m, 30) for m in levels]))


def near(found: list[int], want: int) -> bool:
    return any(abs(i - want) <= 1 for i in found)


def test_steps_of_different_sizes_are_found() -> None:
    big = small = 0
    for seed in range(10):
        found = [i for i, _ in change_points_of(stepped(seed), Thresholds())]
        big += near(found, 30) and near(found, 60)
        small += near(found, 90)
        # nothing far from a real step
        assert all(any(abs(i - s) <= 2 for s in STEPS) for i in found), (seed, found)
    assert big == 10  # the 20% and 10% steps: always, to within one point
    assert small >= 8  # the 5% step is 2.5 sigma: nearly always


def test_flat_noise_is_not_flagged() -> None:
    for seed in range(20):
        r = np.random.default_rng(1000 + seed)
        assert change_points_of(list(r.normal(100, 3, 100)), Thresholds()) == [], seed
        # heavy tails (occasional outlier runs) too
        heavy = list(100 + 3 * r.standard_t(3, 100))
        assert change_points_of(heavy, Thresholds()) == [], seed


def test_exact_series_step_is_found() -> None:
    # instruction counts: no noise at all, one step
    values = [1000.0] * 10 + [1200.0] * 10
    found = change_points_of(values, Thresholds())
    assert [i for i, _ in found] == [10]


def _series(values: list[float], higher_is_better: bool = False) -> Series:
    s = Series(SeriesKey("syn/x", "{}", "A", 1, "wall_time"), unit="s",
               higher_is_better=higher_is_better)
    for i, v in enumerate(values):
        s.points.append(Point(i + 1, float(i), "stat", f"{i:02d}" + "c" * 38, False, [v],
                              median=v))
    return s


def test_change_point_report_fields_and_direction() -> None:
    values = stepped(3)
    cps = detect_series(_series(values), DetectSettings())
    first = cps[0]
    assert first.index == 30
    assert first.commit_before.startswith("29") and first.commit_after.startswith("30")
    assert 15 < first.change_pct < 25
    assert abs(first.mean_before - np.mean(values[:30])) < 1e-9
    assert first.std_before > 0 and first.p_value < 1e-4
    assert first.regression  # a longer time is worse
    assert not cps[1].regression  # -10%: an improvement
    # for a throughput metric the same step is an improvement
    assert not detect_series(_series(values, higher_is_better=True), DetectSettings())[0].regression
    # a checksum has no direction: its change is found, but it is never a regression
    chk = _series(values)
    chk.direction = "none"
    found = detect_series(chk, DetectSettings())
    assert found and not any(c.regression for c in found)


def test_thresholds_per_benchmark_and_ignore_list(tmp_path: Path) -> None:
    cfg = tmp_path / "detect.toml"
    cfg.write_text("""
[detect]
max_pvalue = 0.0001

[benchmarks."syn/*"]
min_change = 0.08     # only changes above 8% for these

[[ignore]]
benchmark = "syn/x"
commit = "60"
reason = "known: compiler upgrade"
""")
    s = load_settings(cfg)
    assert s.for_benchmark("syn/x").min_change == 0.08
    assert s.for_benchmark("other").min_change == 0.0
    cps = detect_series(_series(stepped(3)), s)
    assert [c.index for c in cps] == [30, 60]  # the 5% step is under the 8% threshold
    assert cps[0].ignored is None
    assert cps[1].ignored == "known: compiler upgrade"


@pytest.mark.parametrize("text,msg", [
    ("[detect]\nmax_pvalue = 'x'\n", "not a non-negative number"),
    ("[detect]\nfoo = 1\n", "unknown setting"),
    ("[[ignore]]\nmetric = 'wall_time'\n", "has no 'benchmark'"),
    ("[detect\n", "not valid TOML"),
    ("[detect]\nalgorithm = 'pelt'\n", "algorithm = 'pelt' is not known"),
])
def test_bad_settings_file(tmp_path: Path, text: str, msg: str) -> None:
    f = tmp_path / "d.toml"
    f.write_text(text)
    with pytest.raises(PerflabError, match=msg):
        load_settings(f)


def test_otava_algorithm_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "d.toml"
    f.write_text("[detect]\nalgorithm = 'otava'\n")
    t = load_settings(f).for_benchmark("syn/x")
    assert t.algorithm == "otava"
    # Without the optional extra: one line naming the fix, not an ImportError.
    monkeypatch.setitem(__import__("sys").modules, "otava.analysis", None)
    with pytest.raises(PerflabError, match="needs Apache Otava") as e:
        change_points_of(stepped(1), t)
    assert "pip install 'perflab[otava]'" in e.value.line()


def test_missing_explicit_settings_file(tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_detect_over_the_store(tmp_path: Path) -> None:
    """Series come out of the store keyed by benchmark/cell/config/machine/metric."""
    from perflab.history.series import SeriesFilter, load_series

    store = Store(tmp_path / "r.sqlite")
    r = np.random.default_rng(7)
    for i in range(40):
        rs = ResultSet(kind="stat", commit=f"{i:040x}", dirty=False, created_at=1000.0 + i,
                       fingerprint={"hostname": "h"}, status="complete")
        for depth, step in ((1, 1.3), (2, 1.0)):  # depth=1 steps at point 20, depth=2 is flat
            mu = 10.0 * (step if i >= 20 else 1.0)
            c = Configuration(name="A", command=["x"], benchmark="syn/s", params={"depth": depth})
            c.runs = [Run(seq=j, values={"wall_time": float(r.normal(mu, 0.2))})
                      for j in range(5)]
            c.runs.append(Run(seq=9, values={"wall_time": 99.0}, warmup=True))  # not analysed
            rs.configurations.append(c)
        store.save(rs)
    series = load_series(store, SeriesFilter("syn/*"))
    assert len(series) == 2
    by_depth = {s.key.params_text(): s for s in series}
    assert [len(s.points) for s in series] == [40, 40]
    assert all(p.n == 5 for p in by_depth["depth=1"].points)  # the warm-up run is left out
    cps1 = detect_series(by_depth["depth=1"], DetectSettings())
    assert [c.index for c in cps1] == [20]
    assert cps1[0].commit_after == f"{20:040x}"
    assert detect_series(by_depth["depth=2"], DetectSettings()) == []
