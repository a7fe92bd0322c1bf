"""A study's compared axes (issue 19, item 5): cells that differ only in the [report] kinds
parameter or the thread count are measured in the same rounds, and what the plots divide gets
a paired verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Run, canonical_params
from perflab.reports.matrix import interval_words, suite_view
from perflab.stats import axis_comparisons
from perflab.storage import Store
from perflab.suites.execute import run_plan
from perflab.suites.plan import make_plan
from perflab.suites.spec import load_suite, parse_suite

pytestmark = pytest.mark.unit

SUITE = """\
[suite]
name = "axes"
baseline = "a"
metrics = ["wall_time"]

[measure]
runs = 8
warmup = 0
counters = "none"

[matrix]
depth = [1, 2]
kind = ["x", "y"]
threads = [1, 2]

[report]
x = "depth"
kinds = { param = "kind", a = "y", b = "x" }

[configurations.a]
command = ["PY", "-c", "pass", "{depth}", "{kind}", "{threads}"]

[configurations.b]
command = ["PY", "-c", "pass", "{depth}", "{kind}", "{threads}", "b"]
"""


def test_cells_equal_but_for_the_compared_axes_are_one_group(tmp_path: Path) -> None:
    suite = parse_suite(SUITE.replace("PY", sys.executable), tmp_path / "axes.toml")
    plan = make_plan(suite)
    assert plan.compared_axes == ["kind", "threads"]
    groups = plan.groups(plan.cells)
    assert [len(g) for g in groups] == [4, 4]  # depth 1 and depth 2: kind x threads each
    assert {c.params["depth"] for c in groups[0]} == {1}


@pytest.mark.parametrize(("report", "problem"), [
    ('kinds = { param = "knd", a = "y", b = "x" }', "'knd', which is not a [matrix] parameter"),
    ('kinds = { param = "kind", a = "z", b = "x" }', "'z' is not a value of [matrix] kind"),
])
def test_a_kinds_parameter_not_in_the_matrix_is_one_line(tmp_path: Path, report: str,
                                                         problem: str) -> None:
    from perflab.errors import PerflabError

    text = SUITE.replace('kinds = { param = "kind", a = "y", b = "x" }', report)
    with pytest.raises(PerflabError) as e:
        parse_suite(text, tmp_path / "axes.toml")
    assert problem in e.value.line()


def _study(grouped: bool, shift: float = 0.0) -> ResultSet:
    """Two cells (kind x, kind y) of one configuration whose runs share a drift by round."""
    rng = np.random.default_rng(8)
    # A neighbour coming on: +35% over 20 rounds (with fewer, a chance trend in the paired
    # differences reads as serial correlation and widens the interval: stats.serial_correlation)
    drift = np.exp(np.linspace(0, 0.3, 20))
    rs = ResultSet(kind="suite", metrics={"wall_time": MetricInfo("wall_time", "s", "clock")},
                   settings={"interleaved": True, "suite": {
                       "groups": [[canonical_params({"kind": "x"}),
                                   canonical_params({"kind": "y"})]] if grouped else []}})
    for kind, k in (("x", 0.0), ("y", shift)):
        cfg = Configuration(name="a", command=["a"], params={"kind": kind}, is_baseline=True)
        cfg.runs = [Run(seq=i, values={"wall_time": float(d * np.exp(k + 0.002 * e))})
                    for i, (d, e) in enumerate(zip(drift, rng.standard_normal(20),
                                                   strict=True))]
        rs.configurations.append(cfg)
    return rs


def test_cells_measured_in_the_same_rounds_are_paired() -> None:
    (c,) = axis_comparisons(_study(grouped=True), "wall_time", "kind", "y", "x")
    assert c.paired and c.verdict == "equivalent" and c.candidate == "a"
    assert c.baseline == "a at kind=x"
    assert "paired by round" in interval_words([c])
    # Measured apart, the drift between the runs is noise (and each sample's runs correlated
    # in time): not interleaved, and no claim.
    (c,) = axis_comparisons(_study(grouped=False), "wall_time", "kind", "y", "x")
    assert not c.paired and c.verdict == "inconclusive"
    assert "not interleaved" in interval_words([c])
    (c,) = axis_comparisons(_study(grouped=True, shift=0.05), "wall_time", "kind", "y", "x")
    assert c.verdict == "slower"


@pytest.mark.system
def test_an_aa_study_runs_its_kinds_in_the_same_rounds(tmp_path: Path) -> None:
    """Both kinds run the same command: the kinds comparison is paired, never a claim of a
    difference (the report's kinds table and plot read it)."""
    path = tmp_path / "axes.toml"
    path.write_text(SUITE.replace("PY", sys.executable).replace('"{kind}", ', ""))
    store = Store(tmp_path / "r.sqlite")
    out = run_plan(make_plan(load_suite(path)), store, progress=False)
    rs = suite_view(store.load(out.rs.id))
    assert rs.status == "complete"
    groups = rs.settings.suite.groups
    assert len(groups) == 2 and all(len(g) == 4 for g in groups)
    comps = axis_comparisons(rs, "wall_time", "kind", "y", "x")
    assert len(comps) == 8 and all(c.paired for c in comps)
    assert all(c.verdict in ("equivalent", "inconclusive") for c in comps), comps
