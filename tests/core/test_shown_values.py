"""The values a table shows beside a change agree with it, on the kinds of samples that made a
table contradict itself: runs of two modes where the candidate's median rose while the paired
estimate fell (``ns_per_op 12.93 µs -> 14.17 µs: -14.09%``), a metric that is 0 in most runs
on both sides (``sys_time 0 ns -> 0 ns: -100.00%``), and rusage times below the scheduler tick
(``user_time 1.714 ms -> 0 ns: -100%``, ``1.212 -> 1.299 ms: +55.27%``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.format import fmt_change, fmt_value
from perflab.metrics import BUILTIN_METRICS, RUSAGE_TICK, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports.analysis import Analysis
from perflab.reports.export.markdown import result_to_markdown
from perflab.reports.matrix import comparison_rows, counter_rows
from perflab.reports.terminal import compare_table
from perflab.stats import Comparison, compare_samples

pytestmark = pytest.mark.unit

NS = MetricInfo("ns_per_op", "ns", "workload JSON")
USER = BUILTIN_METRICS["user_time"]
SYS = BUILTIN_METRICS["sys_time"]
MIGRATIONS = BUILTIN_METRICS.get("cpu_migrations") or MetricInfo("cpu_migrations", "count", "")


def two_modes() -> tuple[list[float], list[float]]:
    """Paired rounds whose medians rise (10 -> 15.7 µs) while most rounds fall by ~2%: the
    two rounds that rose by 60% are the ones the 20% trimmed mean leaves out."""
    rng = np.random.default_rng(7)
    base = [10_000.0] * 6 + [16_000.0] * 4
    cand = [9_800.0] * 4 + [16_000.0] * 2 + [15_700.0] * 4
    jitter = rng.normal(1, 0.001, (2, 10))
    return list(np.array(base) * jitter[0]), list(np.array(cand) * jitter[1])


def _agree(c: Comparison) -> None:
    """The shown values' ratio is the change, so their order is the change's sign."""
    assert math.isfinite(c.base_center) and math.isfinite(c.cand_center)
    if math.isfinite(c.ratio):
        assert c.cand_center == pytest.approx(c.base_center * c.ratio)
        assert np.sign(c.cand_center - c.base_center) == np.sign(c.ratio - 1)
    assert c.cand_center - c.base_center == pytest.approx(c.diff)


def test_a_paired_change_that_falls_where_the_medians_rise_shows_values_that_fall() -> None:
    base, cand = two_modes()
    assert np.median(cand) > np.median(base) * 1.4  # the medians say +57%
    c = compare_samples(base, cand, paired=True, info=NS, metric="ns_per_op")
    assert c.ratio < 1  # the paired estimate says about -2%
    _agree(c)
    assert c.cand_center < c.base_center


def test_zero_on_both_sides_never_reads_minus_100_percent() -> None:
    zeros = [0.0] * 10
    c = compare_samples(zeros, zeros, paired=True, info=MIGRATIONS, metric="cpu_migrations")
    assert fmt_change(c, "count") == "±0 (both 0)"
    assert c.verdict == "equivalent"
    # 0 in most runs, one tick of system time in one baseline run, none in the candidate: the
    # values shown are the estimator's (the mean of 6), and they say what the -100% says.
    base, cand = [0.0] * 5 + [0.00252], [0.0] * 6
    c = compare_samples(base, cand, paired=True, info=SYS, metric="sys_time")
    _agree(c)
    assert fmt_value(c.base_center, "s") == "420 µs" and fmt_value(c.cand_center, "s") == "0 ns"
    assert c.coarse and c.verdict == "inconclusive" and c.p_value is None
    assert c.label == "inconclusive (coarse: runs below the 4 ms tick)"


def test_rusage_times_below_the_tick_are_not_judged() -> None:
    """A ~1.7 ms run reads all user or all system time, by where the tick fell."""
    user = [0.001714] * 10
    c = compare_samples(user, [0.0] * 10, paired=True, info=USER, metric="user_time")
    assert c.coarse and c.verdict == "inconclusive" and c.runs_needed is None
    _agree(c)
    # All-or-nothing runs: 2 ms or 0 each, the mix differing by chance.
    a = [0.002, 0.0, 0.002, 0.002, 0.0, 0.002, 0.0, 0.002, 0.002, 0.0]
    b = [0.002, 0.002, 0.0, 0.002, 0.002, 0.0, 0.002, 0.002, 0.0, 0.002]
    c = compare_samples(a, b, paired=True, info=USER, metric="user_time")
    assert c.coarse and c.verdict == "inconclusive" and c.p_value is None
    _agree(c)


def test_rusage_times_above_the_tick_are_judged() -> None:
    rng = np.random.default_rng(3)
    base = list(0.050 + rng.normal(0, 0.001, 12))
    c = compare_samples(base, [x * 1.2 for x in base], paired=True, info=USER,
                        metric="user_time")
    assert not c.coarse and c.verdict == "slower"
    assert RUSAGE_TICK < 0.050


def test_a_stored_metric_info_keeps_or_gains_its_resolution() -> None:
    assert MetricInfo.from_dict("user_time", USER.to_dict()).resolution == RUSAGE_TICK
    old = {k: v for k, v in USER.to_dict().items() if k != "resolution"}
    assert MetricInfo.from_dict("user_time", old).resolution == RUSAGE_TICK
    assert MetricInfo.from_dict("user_time", {**old, "source": "pyperf"}).resolution == 0.0


def _two_mode_result() -> ResultSet:
    base, cand = two_modes()
    rs = ResultSet(kind="compare", metrics={"ns_per_op": NS},
                   settings={"interleaved": True, "primary_metric": "ns_per_op"})
    for name, xs in (("a", base), ("b", cand)):
        cfg = Configuration(name=name, command=[name], cell="{}", is_baseline=name == "a")
        cfg.runs = [Run(seq=i, values={"ns_per_op": x}) for i, x in enumerate(xs)]
        rs.configurations.append(cfg)
    return rs


def test_every_table_shows_the_values_the_change_is_made_of() -> None:
    a = Analysis.judge(_two_mode_result(), ["ns_per_op"])
    (c,) = a.comparisons
    assert c.ratio < 1
    base, cand = fmt_value(c.base_center, "ns"), fmt_value(c.cand_center, "ns")
    medians = {fmt_value(float(np.median(x)), "ns") for x in two_modes()}
    assert not medians & {base, cand}  # the medians differ from what is shown
    terminal = compare_table(a, ["ns_per_op"], "{}").rows[0]
    assert [x.text.split(" ±")[0] for x in terminal[1:3]] == [base, cand]
    (row,) = comparison_rows(a, "ns_per_op")
    assert row["base"] == base and row["diff"] == cand
    (ingo,) = counter_rows(a, "{}")
    assert ingo["a (base)"].startswith(base) and ingo["b"].startswith(cand)
    md = result_to_markdown(a)
    assert f"| {base} | {cand} |" in md
