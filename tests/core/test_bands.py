"""Per-metric equivalence bands (issue 19, items 2 and 4): the per-kind defaults, bands of
one's own with units, and what they decide.  Seeded simulations: fast and deterministic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflab.errors import PerflabError
from perflab.judging import Band, Plan, parse_band
from perflab.metrics import BUILTIN_METRICS, COUNT_FLOOR, MEMORY_BAND, MetricInfo
from perflab.stats import compare_samples
from perflab.validate import thresholds

pytestmark = pytest.mark.unit

KIB = MetricInfo("private_kib", "KiB", "workload JSON")
COUNT = MetricInfo("page_faults", "count", "perf")
TIME = MetricInfo("task_clock", "ms", "perf")


def _judge(a: np.ndarray, b: np.ndarray, info: MetricInfo, plan: Plan) -> str:
    band = plan.band_for(info.name, info)
    return compare_samples(a, b, threshold=band.rel, abs_band=band.absolute, paired=True,
                           info=info, metric=info.name).verdict


def test_the_kinds_have_their_own_defaults() -> None:
    plan = Plan(threshold=0.02)
    assert plan.band_for("task_clock", TIME) == Band(0.02)
    assert plan.band_for("private_kib", KIB) == Band(MEMORY_BAND)
    assert plan.band_for("page_faults", COUNT) == Band(0.02, COUNT_FLOOR)
    per_op = MetricInfo("instructions_per_op", "count", "callgrind", deterministic=True)
    assert plan.band_for("instructions_per_op", per_op) == Band(0.02)
    # Results stored before per-kind bands are judged as they were.
    assert Plan(threshold=0.02, kind_bands=False).band_for("private_kib", KIB) == Band(0.02)


def test_a_metrics_own_band_wins_over_its_kinds() -> None:
    plan = Plan(bands={"memory": "1%", "max_rss": "64KiB"})
    assert plan.band_for("max_rss", BUILTIN_METRICS["max_rss"]) == Band(0.0, 64.0)
    assert plan.band_for("private_kib", KIB) == Band(0.01)
    assert parse_band("1MiB", "KiB") == Band(0.0, 1024.0)
    assert parse_band("500us", "ms") == Band(0.0, 0.5)
    assert parse_band("1%+3events", "count") == Band(0.01, 3.0)


@pytest.mark.parametrize(("runs", "trials", "least"), [(20, 200, 0.95), (32, 200, 0.95)])
def test_a_half_percent_memory_change_is_called_and_an_aa_pair_is_not(
        runs: int, trials: int, least: float) -> None:
    """+0.5% of 37 MiB measured with CV 0.1% in interleaved runs (issue 19: the ±1% band read
    "equivalent" for call counting's +209 KB on 21 MB), from 20 runs, where the interval is
    widened for the estimated serial correlation (stats.serial_correlation); below 20 it is
    widened for drift as strong as lag-1 0.8 and rarely decides so small a change."""
    rng = np.random.default_rng(19)
    plan = Plan()
    called, false = 0, 0
    for _ in range(trials):
        base = 37 * 1024 * (1 + 0.001 * rng.standard_normal(runs))
        cand = 37 * 1024 * 1.005 * (1 + 0.001 * rng.standard_normal(runs))
        called += _judge(base, cand, KIB, plan) == "larger"
        again = 37 * 1024 * (1 + 0.001 * rng.standard_normal(runs))
        false += _judge(base, again, KIB, plan) in ("larger", "smaller")
    assert called >= least * trials
    assert false <= 0.01 * trials
    # The old ±1% band could not call it: a +0.5% change is inside it.
    old = Plan(kind_bands=False)
    base = 37 * 1024 * (1 + 0.001 * rng.standard_normal(runs))
    cand = 37 * 1024 * 1.005 * (1 + 0.001 * rng.standard_normal(runs))
    assert _judge(base, cand, KIB, old) in ("equivalent", "inconclusive")


def test_a_mostly_zero_count_is_judged_against_half_an_event() -> None:
    plan = Plan()
    zeros = np.array([0, 0, 0, 0, 0, 0, 0, 1, 0, 0], dtype=float)
    # Against a count that is 0 in most runs, a count that never moves is within half an
    # event a run (it had a ±0 band: never equivalent, whatever the runs).
    assert _judge(zeros, np.zeros(10), COUNT, plan) in ("equivalent", "inconclusive")
    # Five events more in every run is beyond it.
    assert _judge(zeros, zeros + 5, COUNT, plan) == "larger"


@pytest.mark.parametrize(("given", "problem"), [
    ("task_clock=5KiB", "'5KiB' is memory, but the metric is measured in s"),
    ("private_kib=-1%", "a band must be positive"),
    ("nosuch=2%", "no metric 'nosuch' here"),
    ("max_rss=3furlongs", "unknown unit 'furlongs'"),
    ("abc", "neither a fraction nor METRIC=BAND"),
    ("2", "is a fraction, not a percentage"),
])
def test_bad_bands_are_one_line_each(given: str, problem: str) -> None:
    known = {**BUILTIN_METRICS, "private_kib": KIB}
    with pytest.raises(PerflabError) as e:
        thresholds([given], known)
    assert problem in e.value.line()
    assert "\n" not in e.value.line()


def test_thresholds_split_the_plain_band_from_the_metrics_own() -> None:
    known = {**BUILTIN_METRICS, "private_kib": KIB}
    assert thresholds(["0.02", "max_rss=64KiB", "memory=0.5%", "count=3events"], known) == (
        0.02, {"max_rss": "64KiB", "memory": "0.5%", "count": "3events"})
    assert thresholds(None, known) == (None, {})


@pytest.mark.system
def test_compare_stores_and_shows_the_bands(spin: Path) -> None:
    from typer.testing import CliRunner

    from perflab.cli import app
    from perflab.storage import Store

    runner = CliRunner()
    res = runner.invoke(app, ["compare", "-r", "6", "--threshold", "max_rss=64KiB",
                              "--threshold", "0.02", f"{spin} 1000", f"{spin} 1001"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "band (time ±2%" in text and "memory ±64 KiB" in text
    assert "counts ±2% or ±0.5" in text  # the counts' own default
    rs = Store().load(Store().result_ids()[-1])
    assert rs.settings.comparison is not None
    assert rs.settings.comparison.bands == {"max_rss": "64KiB"}
    # results show reads them back, and --threshold adds to them.
    res = runner.invoke(app, ["results", "show", str(rs.id), "--threshold", "count=3events"])
    text = " ".join(res.output.split())
    assert "memory ±64 KiB" in text and "counts ±3)" in text, text
    res = runner.invoke(app, ["compare", "-r", "6", "--threshold", "task_clock=5KiB",
                              f"{spin} 1000", f"{spin} 1001"])
    assert isinstance(res.exception, PerflabError)
    assert "'5KiB' is memory" in res.exception.line()
    assert len(Store().result_ids()) == 1  # refused before anything was stored
