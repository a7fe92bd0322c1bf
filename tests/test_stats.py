"""Statistics against known distributions: CI coverage, verdicts, multiple-comparison control."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.model import Configuration, MetricInfo, ResultSet, Run
from perflab.stats import adjust, compare_result, compare_samples, holm, runs_needed, summarize


def test_summary_of_known_sample() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0])
    assert s.n == 7 and s.median == 4.0 and s.min == 1.0 and s.max == 100.0
    assert s.outliers == 1  # 100 is far outside Tukey's fences
    assert s.ci_low <= 4.0 <= s.ci_high


def test_median_ci_covers_true_median_about_95_percent() -> None:
    rng = np.random.default_rng(7)
    trials, hits = 400, 0
    for _ in range(trials):
        x = rng.lognormal(mean=0.0, sigma=0.3, size=30)  # true median exp(0) = 1
        s = summarize(x)
        hits += s.ci_low <= 1.0 <= s.ci_high
    coverage = hits / trials
    assert 0.92 <= coverage <= 0.99, coverage


def test_too_few_runs_give_no_ci() -> None:
    s = summarize([1.0, 1.1, 0.9])
    assert math.isnan(s.ci_low) and s.rel_halfwidth == math.inf


def test_five_percent_slowdown_is_slower_with_a_ci_around_it() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(100, 1, 60)
    b = rng.normal(105, 1, 60)
    c = compare_samples(a, b, threshold=0.01, paired=True)
    assert c.verdict == "slower"
    assert c.ci_low < 1.05 < c.ci_high and c.ci_low > 1.01
    assert c.p_value is not None and c.p_value < 1e-6


def test_speedup_is_faster_and_higher_is_better_flips() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(100, 1, 40), rng.normal(90, 1, 40)
    assert compare_samples(a, b).verdict == "faster"
    assert compare_samples(a, b, higher_is_better=True).verdict == "slower"


def test_same_distribution_is_equivalent_with_enough_runs() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 1, 200), rng.normal(100, 1, 200)
    assert compare_samples(a, b, threshold=0.01).verdict == "equivalent"


def test_noisy_small_sample_is_inconclusive_and_says_how_many_runs() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.normal(100, 8, 8), rng.normal(103, 8, 8)
    c = compare_samples(a, b, threshold=0.01)
    assert c.verdict == "inconclusive"
    assert c.runs_needed is not None and c.runs_needed > 8


def test_deterministic_metrics_compare_exactly() -> None:
    c = compare_samples([1000.0, 1000.0], [1010.0, 1010.0], deterministic=True)
    assert c.verdict == "slower" and c.ratio == pytest.approx(1.01) and c.p_value is None
    assert c.ci_low == c.ci_high == c.ratio and c.deterministic
    same = compare_samples([5.0, 5.0], [5.0, 5.0], deterministic=True)
    assert same.verdict == "equivalent"


def test_holm_and_bh_match_known_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "bh").tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError):
        adjust(p, "bonferroni-ish")


def test_runs_needed_grows_as_the_margin_shrinks() -> None:
    far = runs_needed(10, 1.05, 1.0, 1.1, 0.01)
    near = runs_needed(10, 1.02, 0.97, 1.07, 0.01)
    assert far is not None and near is not None and near > far > 10


def _aa_result(cells: int, runs: int, seed: int) -> ResultSet:
    rng = np.random.default_rng(seed)
    rs = ResultSet(kind="suite", metrics={"t": MetricInfo("t", "s", "test")},
                   settings={"interleaved": True})
    for i in range(cells):
        for name in ("A", "B"):
            cfg = Configuration(name=name, command=["x"], params={"i": i},
                                is_baseline=name == "A")
            cfg.runs = [Run(seq=k, values={"t": float(v)})
                        for k, v in enumerate(rng.normal(1.0, 0.05, runs))]
            rs.configurations.append(cfg)
    return rs


def test_false_alarms_are_controlled_across_a_matrix() -> None:
    """100 A/A cells: without correction about 5 would be p < 0.05; verdicts stay clean."""
    rs = _aa_result(cells=100, runs=12, seed=11)
    raw = compare_result(rs, ["t"], correction="none")
    corrected = compare_result(rs, ["t"], correction="holm")
    raw_sig = sum(c.raw_p_value is not None and c.raw_p_value < 0.05 for c in raw)
    assert raw_sig >= 1  # the problem exists...
    assert all(c.verdict not in ("slower", "faster") for c in corrected)  # ...and is handled
    assert all(c.p_value >= c.raw_p_value for c in corrected if c.p_value is not None)
