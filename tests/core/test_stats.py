"""Statistics against known distributions and the synthetic cases of issue 9: one estimand,
verdicts from one interval, families, exact comparisons, estimators, looks and words."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from perflab.judging import ALPHA, MIN_RUNS, Plan, check_estimator_runs, parse_estimator
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run, Settings
from perflab.stats import (
    BISECT_ALPHA,
    adjust,
    bisect_levels,
    bisect_step,
    compare_result,
    compare_samples,
    differing_results,
    holm,
    look_schedule,
    planned_looks,
    stop_check,
    summarize,
    trimmed_t,
)

pytestmark = pytest.mark.unit

TIME = MetricInfo("t", "s", "test")


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


# --- issue 9, defect 1: verdicts from 2-5 runs ---------------------------------------------------

def test_small_n_is_inconclusive_too_few_runs() -> None:
    a = compare_samples([1.010, .995], [1.015, 1.000], paired=True)
    b = compare_samples([1.0, 1.01], [1.02, 1.03], paired=True)
    for c in (a, b):
        assert c.verdict == "inconclusive" and c.note == "too few runs"
        assert c.label == "inconclusive (too few runs)"
    five = compare_samples([1.0] * 5, [1.2] * 5, paired=True)
    assert five.verdict == "inconclusive"
    six = [1.0, 1.001, .999] * 2, [1.2, 1.201, 1.199] * 2
    assert compare_samples(*six, paired=True,
                           estimator=parse_estimator("median")).verdict == "slower"
    # The default trims at most 20% but keeps 6 runs: 6 or 7 runs are not trimmed.
    assert compare_samples(*six, paired=True).verdict == "slower"
    assert parse_estimator("trim").min_runs() == 6 and parse_estimator("trim").kept(7) == 7
    # An explicit 20% each side leaves 4 of 6: too few.
    assert compare_samples(*six, paired=True,
                           estimator=parse_estimator("trim:0.2:0.2")).note == "too few runs"


# --- defect 2: the p-value and the CI test the same thing ----------------------------------------

def _outlier_case() -> tuple[np.ndarray, np.ndarray]:
    # In a random run order: sorted, the runs would be a drift (lag-1 correlation near 1),
    # which stats.serial_correlation widens the interval for.
    b = np.random.default_rng(3).permutation(np.linspace(.99, 1.01, 20))
    c = 1.05 * b
    b[[3, 11]] *= 1.5
    c[7] *= 1.5
    return b, c


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("estimator", ["trim", "median"])
def test_outlier_example_is_slower_and_p_agrees_with_the_ci(paired: bool, estimator: str) -> None:
    b, c = _outlier_case()
    cmp_ = compare_samples(b, c, paired=paired, threshold=0.01,
                           estimator=parse_estimator(estimator))
    assert cmp_.verdict == "slower"
    assert cmp_.p_value is not None and cmp_.p_value < ALPHA
    assert 1.01 < cmp_.ci_low <= 1.05 <= cmp_.ci_high < 1.07
    assert abs(cmp_.ratio - 1.05) < 0.005
    assert cmp_.paired is paired
    assert ("not interleaved" in cmp_.label) is (not paired)


@pytest.mark.parametrize("paired", [True, False])
def test_ties_left_after_trimming_never_give_a_zero_width_interval(paired: bool) -> None:
    # A count that ties in most rounds: trimming leaves no spread, yet two rounds of ten had
    # twice the context switches.  A zero-width interval called this "equivalent" with p = 0.
    c = compare_samples([1.0] * 10, [1.0] * 8 + [2.0, 2.0], paired=paired)
    assert c.verdict == "inconclusive" and c.ci_high > 1.01 and c.p_value > 0.05
    # runs that are all equal still compare exactly as they are
    same = compare_samples([1.0] * 10, [1.0] * 10, paired=paired)
    assert same.verdict == "equivalent" and same.ci_low == same.ci_high == 1.0


def test_a_count_that_ties_at_its_centre_is_not_called_equivalent() -> None:
    # Issue 19: a baseline of all 1s against 2 in 3 of 20 rounds read "equivalent CI [1.000,
    # 1.000]": the sign test's interval of a median difference that is 0 in 17 rounds.
    for est in ("trim", "median"):
        c = compare_samples([1.0] * 20, [1.0] * 17 + [2.0] * 3, paired=True,
                            estimator=parse_estimator(est))
        assert c.verdict == "inconclusive" and c.p_value > ALPHA, (est, c)
    # A count that is 0 in most runs on both sides (sys_time of `sleep`, page faults): the
    # trimmed centre is 0, so no band can be met, and no zero-width interval may claim one.
    c = compare_samples([0.0] * 17 + [1.0, 2.0, 1.0], [0.0] * 19 + [1.0], paired=True)
    assert c.verdict == "inconclusive" and c.p_value > ALPHA
    # A change that ties nowhere near the band is still seen: 17 of 20 rounds exactly +5%.
    b = np.linspace(.99, 1.01, 20)
    assert compare_samples(b, 1.05 * b, paired=True,
                           estimator=parse_estimator("median")).verdict == "slower"


def test_zero_heavy_and_tied_counts_p_and_ci_agree_and_never_certify_from_no_width() -> None:
    """Seeded simulation of counts near zero (Bernoulli and Poisson rates 0.02-0.5 a run),
    paired and not: p and the CI agree, no 'equivalent' from a zero-width interval unless
    every run is equal, and a count's CI never goes below -100%."""
    rng = np.random.default_rng(19)
    verdicts = set()
    for i in range(400):
        n = int(rng.integers(6, 40))
        ra, rb = rng.choice([0.02, 0.05, 0.15, 0.5], size=2)
        draw = rng.poisson if i % 2 else (lambda lam, size: rng.random(size) < lam)
        a = np.asarray(draw(ra, n), dtype=float) + (i % 4 == 3)  # some counts tie at 1
        b = np.asarray(draw(rb, n), dtype=float) + (i % 4 == 3)
        for est in ("trim", "median"):
            for paired in (True, False):
                c = compare_samples(a, b, paired=paired, estimator=parse_estimator(est))
                if c.note == "too few runs":
                    continue
                assert (c.p_value < ALPHA) == (c.verdict != "inconclusive"), (est, paired, c)
                zero_width = c.diff_low == c.diff_high
                if c.verdict == "equivalent" and zero_width:
                    assert np.ptp(np.concatenate([a, b])) == 0, (a, b, c)
                assert not c.ci_low < 0, c  # clipped at -100%
                verdicts.add(c.verdict)
    assert {"inconclusive", "faster", "slower"} <= verdicts


def test_mean_is_dragged_by_the_outliers_and_stays_inconclusive() -> None:
    """The plain mean is offered, but it is why the default is trimmed."""
    b, c = _outlier_case()
    cmp_ = compare_samples(b, c, paired=True, estimator=parse_estimator("mean"))
    assert cmp_.verdict == "inconclusive" and cmp_.p_value is not None and cmp_.p_value >= ALPHA


def test_p_and_ci_never_disagree() -> None:
    rng = np.random.default_rng(5)
    seen = set()
    for i in range(300):
        n = int(rng.integers(6, 30))
        eff = float(rng.choice([0.0, 0.005, 0.01, 0.02, 0.05, -0.03]))
        a = rng.lognormal(0, 0.02, n)
        b = a * (1 + eff) * rng.lognormal(0, 0.02, n)
        for est in ("trim", "median", "mean", "trim:0:0.25"):
            for paired in (True, False):
                if est == "median" and not paired and i % 10:
                    continue  # the bootstrap path is slower; a sample of it suffices
                c = compare_samples(a, b, paired=paired, estimator=parse_estimator(est))
                if c.note == "too few runs":
                    assert parse_estimator(est).kept(n) < MIN_RUNS
                    continue
                assert c.p_value is not None
                assert (c.p_value < ALPHA) == (c.verdict != "inconclusive"), (est, paired, c)
                if c.verdict == "equivalent":
                    assert 0.99 <= c.ci_low and c.ci_high <= 1.01
                if c.verdict == "slower":
                    assert c.ci_low > 1.01
                seen.add(c.verdict)
    assert {"slower", "faster", "equivalent", "inconclusive"} <= seen


def _alternating(x: np.ndarray) -> np.ndarray:
    """``x`` in an order with negative lag-1 correlation (low, high, low, ...): no serial
    correlation for stats.serial_correlation to widen the interval for."""
    s = np.sort(x)
    out = np.empty_like(s)
    out[0::2], out[1::2] = s[:(len(s) + 1) // 2], s[(len(s) + 1) // 2:][::-1]
    return out


def test_yuen_path_matches_scipy_trimmed_welch() -> None:
    rng = np.random.default_rng(9)
    a, b = rng.lognormal(0, 0.05, 21), rng.lognormal(0.03, 0.08, 25)
    a, b = _alternating(a), _alternating(b)
    c = compare_samples(a, b, paired=False, threshold=0.0)
    assert c.loc is not None and c.loc.serial == 0 and c.loc.widened == 1
    ref = sps.ttest_ind(np.log(b), np.log(a), trim=0.2, equal_var=False)
    assert c.raw_p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_trimmed_t_reduces_to_the_t_test_without_trimming() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(1, 0.1, 20)
    b = a * np.exp(_alternating(rng.normal(0.02, 0.03, 20)))
    c = compare_samples(a, b, paired=True, threshold=0.0, estimator=parse_estimator("mean"))
    assert c.loc is not None and c.loc.serial == 0
    assert c.raw_p_value == pytest.approx(sps.ttest_rel(np.log(b), np.log(a)).pvalue, rel=1e-9)


def test_ci_of_the_ratio_covers_the_truth() -> None:
    rng = np.random.default_rng(11)
    hits = {"trim": 0, "median": 0, "mean": 0}
    trials = 300
    for _ in range(trials):
        rounds = rng.lognormal(0, 0.03, 12)  # drift shared by a round
        a = rounds * rng.lognormal(0, 0.02, 12)
        b = rounds * 1.03 * rng.lognormal(0, 0.02, 12)
        for est in hits:
            c = compare_samples(a, b, paired=True, estimator=parse_estimator(est))
            hits[est] += c.ci_low <= 1.03 <= c.ci_high
    for est, h in hits.items():
        assert h / trials >= 0.91, (est, h / trials)


# --- defect 4: the exact path -------------------------------------------------------------------

def test_exact_path_respects_the_threshold() -> None:
    det = compare_samples([1234.] * 3, [1236.] * 3, threshold=0.05, deterministic=True)
    assert det.verdict == "equivalent" and det.deterministic and det.diff == 2
    # Not declared deterministic: no exact shortcut; 3 runs are too few ...
    assert compare_samples([1234.] * 3, [1236.] * 3, threshold=0.05).note == "too few runs"
    # ... and 8 constant runs are judged against the band like any other.
    assert compare_samples([1234.] * 8, [1236.] * 8, threshold=0.05,
                           paired=True).verdict == "equivalent"
    beyond = compare_samples([1000.] * 2, [1100.] * 2, threshold=0.05, deterministic=True)
    assert beyond.verdict == "slower"


def test_zero_against_one_has_no_infinite_ratio() -> None:
    for c in (compare_samples([0.] * 3, [1.] * 3, deterministic=True,
                              info=MetricInfo("migr", "count", "t", deterministic=True)),
              compare_samples([0.] * 8, [1.] * 8, paired=True,
                              info=BUILTIN_METRICS["cpu_migrations"])):
        assert not math.isinf(c.ratio) and math.isnan(c.ratio)
        assert c.diff == 1.0 and c.verdict == "larger" and c.regression
    from perflab.format import fmt_change

    txt = fmt_change(compare_samples([0.] * 8, [1.] * 8, paired=True,
                                     info=BUILTIN_METRICS["cpu_migrations"]), "count")
    assert "inf" not in txt and "+1" in txt


# --- defect 5/7: families -----------------------------------------------------------------------

def _result(metrics: dict[str, float], cells: int = 1, runs: int = 20, seed: int = 1,
            noise: float = 0.02) -> ResultSet:
    """Interleaved A/B per cell; metrics maps name -> true ratio B/A."""
    rng = np.random.default_rng(seed)
    infos = {m: MetricInfo(m, "s" if m == "t" else "count", "test") for m in metrics}
    rs = ResultSet(kind="suite", metrics=infos,
                   settings={"interleaved": True, "primary_metric": "t"})
    for i in range(cells):
        a = Configuration(name="A", command=["x"], params={"i": i}, is_baseline=True)
        b = Configuration(name="B", command=["x"], params={"i": i})
        for k in range(runs):
            va = {m: float(100 * rng.lognormal(0, noise)) for m in metrics}
            vb = {m: float(100 * r * rng.lognormal(0, noise)) for m, r in metrics.items()}
            a.runs.append(Run(seq=2 * k, values=va))
            b.runs.append(Run(seq=2 * k + 1, values=vb))
        rs.configurations += [a, b]
    return rs


def test_primary_family_is_not_diluted_by_other_metrics() -> None:
    rs = _result({"t": 1.05}, seed=4)
    alone = compare_result(rs, ["t"])
    rng = np.random.default_rng(0)
    for i in range(30):  # a machine with 30 more counters: same runs, more metrics
        rs.metrics[f"counter{i}"] = MetricInfo(f"counter{i}", "count", "test")
        for cfg in rs.configurations:
            for r in cfg.runs:
                r.values[f"counter{i}"] = float(rng.normal(1000, 10))
    crowded = compare_result(rs)
    p_alone = next(c for c in alone if c.metric == "t")
    p_crowd = next(c for c in crowded if c.metric == "t")
    assert p_alone.verdict == p_crowd.verdict == "slower"
    assert p_alone.p_value == pytest.approx(p_crowd.p_value)
    assert p_crowd.correction == "holm"
    assert all(c.correction == "bh" for c in crowded if c.metric != "t")


def test_family_adjusts_the_ci_level_not_only_p() -> None:
    rs = _result({"t": 1.03}, cells=10, seed=8)
    one = compare_result(rs, ["t"], correction="none")
    ten = compare_result(rs, ["t"], correction="holm")
    for a, b in zip(one, ten, strict=True):
        assert b.ci_level >= a.ci_level and (b.ci_high - b.ci_low) >= (a.ci_high - a.ci_low)
        assert (b.p_value is not None and b.p_value < ALPHA) == (b.verdict != "inconclusive")
    assert max(c.ci_level for c in ten) > 0.95


def test_stored_plan_is_used_and_overridable() -> None:
    rs = _result({"t": 1.015}, seed=2, runs=40, noise=0.003)
    rs.settings.comparison = Plan(threshold=0.05)
    assert compare_result(rs, ["t"])[0].verdict == "equivalent"
    assert compare_result(rs, ["t"], threshold=0.005)[0].verdict == "slower"
    old = _result({"t": 1.0}, seed=2)  # a result stored before plans: defaults
    assert Plan.of(old).threshold == 0.01 and Plan.of(old).correction == "holm"


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
    """100 A/A cells: without correction some are 'different from 1'; verdicts stay clean."""
    rs = _aa_result(cells=100, runs=20, seed=11)
    raw = compare_result(rs, ["t"], correction="none", threshold=0.0)
    corrected = compare_result(rs, ["t"], correction="holm", threshold=0.0)
    assert sum(c.verdict in ("slower", "faster") for c in raw) >= 1  # the problem exists...
    assert all(c.verdict not in ("slower", "faster") for c in corrected)  # ...and is handled
    assert all(c.p_value >= c.raw_p_value for c in corrected if c.p_value is not None)


def test_holm_and_bh_match_known_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "bh").tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError):
        adjust(p, "bonferroni-ish")


# --- item 6: estimators --------------------------------------------------------------------------

def test_estimator_parsing_and_bad_input() -> None:
    assert str(parse_estimator("trim:0:0.25")) == "trim:0:0.25"
    assert str(parse_estimator(None)) == "trim" and parse_estimator("MEDIAN").kind == "median"
    for bad in ("mode", "trim:0.6:0", "trim:a:b", "trim:0.3"):
        with pytest.raises(ValueError, match="median, mean, trim"):
            parse_estimator(bad)
    why = check_estimator_runs(parse_estimator("trim:0.25:0.25"), 8)
    assert why is not None and "leaves 4 of 8" in why and "at least 10" in why
    assert check_estimator_runs(parse_estimator("trim:0:0.125"), 8) is None  # 8 minus 1
    assert parse_estimator("trim:0.29:0").kept(100) == 71  # not 72: 0.29 x 100 in floats


def test_trimming_below_six_runs_is_inconclusive() -> None:
    a, b = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0], [1.2] * 8
    c = compare_samples(a, b, paired=True, estimator=parse_estimator("trim:0.25:0.25"))
    assert c.note == "too few runs"
    assert compare_samples(a, b, paired=True).verdict == "slower"


def test_summary_with_a_trimmed_mean() -> None:
    x = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 5.0]
    s = summarize(x, estimator=parse_estimator("trim:0:0.125"))
    assert s.center == pytest.approx(np.mean(sorted(x)[:7]))
    assert s.ci_low < s.center < s.ci_high < 1.05


# --- item 7: words and directions ----------------------------------------------------------------

def test_memory_reads_larger_and_a_checksum_is_never_a_regression() -> None:
    rss = compare_samples([1000.0, 1001, 999, 1000, 1002, 998, 1000, 1001],
                          [1200.0, 1201, 1199, 1200, 1202, 1198, 1200, 1199], paired=True,
                          info=BUILTIN_METRICS["max_rss"])
    assert rss.verdict == "larger" and rss.regression and rss.diff == pytest.approx(200, rel=0.01)
    chk = compare_samples([1.0] * 3, [2.0] * 3, deterministic=True,
                          info=MetricInfo("checksum", "", "w", deterministic=True,
                                          direction="none"))
    assert chk.verdict == "different" and not chk.regression and not chk.improvement
    tput = compare_samples([100.0, 101, 99, 100, 102, 98, 100, 100],
                           [120.0, 121, 119, 120, 122, 118, 120, 121],
                           paired=True, info=MetricInfo("ops_per_s", "1/s", "w",
                                                        direction="higher"))
    assert tput.verdict == "faster" and tput.improvement


def test_different_results_are_reported() -> None:
    rs = _result({"t": 1.0})
    rs.metrics["checksum"] = MetricInfo("checksum", "", "w", direction="none")
    for cfg, v in zip(rs.configurations, (123.0, 456.0), strict=True):
        for r in cfg.runs:
            r.values["checksum"] = v
    assert differing_results(rs) == ["A and B computed different results: checksum 123 vs 456"]


def test_work_sizes_and_diagnostics_may_differ_without_a_warning() -> None:
    """Calibrated iteration counts differ per configuration by design, as do a JIT's counts:
    only what was computed (checksum, result) is checked for equality, and only between runs
    that declare the same work (issue 19: 165 false warnings in `make demo`)."""
    rs = _result({"t": 1.0})
    for key in ("ops", "iterations", "jitted_methods", "result"):
        rs.metrics[key] = MetricInfo(key, "", "w", direction="none")
    for cfg, v in zip(rs.configurations, (1000.0, 2000.0), strict=True):
        for r in cfg.runs:
            r.values.update(ops=v, iterations=v, jitted_methods=v / 10, result=v * 7)
    assert differing_results(rs) == []  # twice the iterations, twice the result: no warning
    for r in rs.configurations[1].runs:
        r.values.update(ops=1000.0, iterations=1000.0)  # the same work now
    assert differing_results(rs) == ["A and B computed different results: result 7,000 vs "
                                     "14,000 (same iterations 1,000, ops 1,000)"]
    for r in rs.configurations[1].runs[::2]:  # half its runs did the other amount of work
        r.values.update(ops=2000.0, iterations=2000.0)
    assert len(differing_results(rs)) == 1


# --- defect 3: runs_needed is a plan -------------------------------------------------------------

def test_runs_needed_decides_most_cases_it_is_asked_about() -> None:
    rng = np.random.default_rng(21)
    asked = decided = 0
    for _ in range(150):
        a = rng.lognormal(0, 0.03, 400)
        b = a * 1.03 * rng.lognormal(0, 0.03, 400)
        c = compare_samples(a[:20], b[:20], paired=True)
        if c.verdict != "inconclusive" or c.runs_needed is None:
            continue
        assert c.label.startswith(("inconclusive (at least", "inconclusive (more than"))
        n = min(400, c.runs_needed)
        asked += 1
        decided += compare_samples(a[:n], b[:n], paired=True).verdict != "inconclusive"
    assert asked >= 30
    assert decided / asked >= 0.7, (decided, asked)


# --- item 3: looks --------------------------------------------------------------------------------

def _first_alarm(d: np.ndarray, looks: list[int], alpha: float, threshold: float) -> np.ndarray:
    """Per trial: whether any look's CI (the production trimmed t) lies beyond the band."""
    edge = math.log1p(threshold)
    alarm = np.zeros(d.shape[0], dtype=bool)
    est = parse_estimator("trim")
    for n in looks:
        tm, se, df = trimmed_t(d[:, :n], est)
        q = sps.t.isf(alpha / 2, df)
        alarm |= (tm - q * se > edge) | (tm + q * se < -edge)
    return alarm


def test_aa_false_alarms_across_all_looks_stay_at_or_below_nominal() -> None:
    rng = np.random.default_rng(2026)
    trials, max_runs = 20_000, 200
    looks = look_schedule(6, max_runs)
    k = planned_looks(6, max_runs)
    d = rng.normal(0, 0.03, (trials, max_runs))
    d += np.log(1.5) * (rng.random((trials, max_runs)) < 0.03)  # outlier rounds
    d -= np.log(1.5) * (rng.random((trials, max_runs)) < 0.03)
    # threshold 0: the strictest case ("any difference"); the band only makes it rarer.
    adjusted = _first_alarm(d, looks, ALPHA / k, 0.0).mean()
    naive = _first_alarm(d, looks, ALPHA, 0.0).mean()
    assert adjusted <= ALPHA, adjusted
    assert naive > ALPHA * 1.5, naive  # looking without accounting would break the guarantee


def test_per_direction_error_at_the_band_edge_across_looks() -> None:
    """The worst case for a claim: the true ratio exactly on the band's edge (+1%).  'slower'
    there is wrong, and must stay at or below alpha/2 over all looks; 'equivalent' for a true
    +1.5% (outside the band) likewise at or below alpha."""
    rng = np.random.default_rng(7)
    trials, max_runs = 10_000, 200
    looks = look_schedule(6, max_runs)
    alpha = ALPHA / planned_looks(6, max_runs)
    est = parse_estimator("trim")
    noise = rng.normal(0, 0.02, (trials, max_runs))
    edge, band = math.log1p(0.01), (math.log1p(-0.01), math.log1p(0.01))
    slower = np.zeros(trials, dtype=bool)
    equiv = np.zeros(trials, dtype=bool)
    for n in looks:
        for d, out, kind in ((noise + edge, slower, "up"),
                             (noise + math.log1p(0.015), equiv, "in")):
            tm, se, df = trimmed_t(d[:, :n], est)
            q = sps.t.isf(alpha / 2, df)
            lo, hi = tm - q * se, tm + q * se
            out |= (lo > band[1]) if kind == "up" else ((lo >= band[0]) & (hi <= band[1]))
    assert slower.mean() <= ALPHA / 2, slower.mean()
    assert equiv.mean() <= ALPHA, equiv.mean()


def test_stop_check_uses_the_final_level() -> None:
    rng = np.random.default_rng(4)
    a = rng.lognormal(0, 0.01, 30)
    big = a * 1.10 * rng.lognormal(0, 0.01, 30)
    small = a * 1.012 * rng.lognormal(0, 0.01, 30)
    plan = Plan(looks=planned_looks(6, 1000))
    assert stop_check([(a, big, TIME)], paired=True, plan=plan, family_size=1).stop
    assert not stop_check([(a, small, TIME)], paired=True, plan=plan, family_size=1).stop
    assert look_schedule(6, 100)[:6] == [6, 9, 14, 21, 32, 48] and look_schedule(6, 100)[-1] == 100
    assert MIN_RUNS == 6


def test_bisect_step_uses_one_kind_of_bound_for_both_answers() -> None:
    rng = np.random.default_rng(6)
    a = rng.lognormal(0, 0.05, 20)
    worse = a * 1.3 * rng.lognormal(0, 0.01, 20)
    wide_but_better = a * 0.97 * rng.lognormal(0, 0.06, 20)
    assert bisect_step(a, worse, threshold=0.01, level=0.01, info=TIME, paired=True)[0] == "bad"
    verdict, c = bisect_step(a, wide_but_better, threshold=0.01, level=0.025, info=TIME,
                             paired=True)
    assert c.verdict in ("inconclusive", "faster") and verdict == "good"
    assert c.ci_level == pytest.approx(0.95)  # the interval whose ends are the two bounds
    few, _ = bisect_step(a[:3], worse[:3], threshold=0.01, level=0.01, info=TIME, paired=True)
    assert few == "inconclusive"


def test_bisect_step_is_symmetric_about_the_band_edge() -> None:
    """Log-ratios mirrored about the edge (1 + T) get the mirrored answer at every level:
    "bad" and "good" use the same kind of bound at the same level."""
    rng = np.random.default_rng(12)
    edge = math.log1p(0.04)
    answers = set()
    for _ in range(200):
        base = rng.lognormal(0, 0.03, 20)
        d = rng.normal(edge + rng.normal(0, 0.03), 0.05, 20)
        level = float(rng.choice([0.001, 0.01, 0.05]))
        one, _ = bisect_step(base, base * np.exp(d), threshold=0.04, level=level, info=TIME,
                             paired=True)
        other, _ = bisect_step(base, base * np.exp(2 * edge - d), threshold=0.04, level=level,
                               info=TIME, paired=True)
        swap = {"bad": "good", "good": "bad", "inconclusive": "inconclusive"}
        assert other == swap[one], (one, other, level)
        answers.add(one)
    assert answers == {"bad", "good", "inconclusive"}


def test_bisect_levels_spend_alpha_over_the_rounds_strict_early() -> None:
    levels = bisect_levels(8)
    assert sum(levels) == pytest.approx(BISECT_ALPHA)
    assert all(x < y for x, y in zip(levels, levels[1:], strict=False))
    assert levels[0] < BISECT_ALPHA / 50
    assert bisect_levels(1) == [pytest.approx(BISECT_ALPHA)]


def test_bisect_rounds_are_looks_so_a_band_edge_change_is_rarely_called_bad() -> None:
    """A true +1% on the band's edge: over three rounds of 10 runs at the spent levels, 'bad'
    stays within the one-sided alpha (plus the trimmed t's known small-n excess); judging every
    round at the whole alpha does not."""
    def bad_rate(levels: list[float], trials: int = 2000) -> float:
        rng = np.random.default_rng(88)
        bad = 0
        for _ in range(trials):
            base = rng.lognormal(0, 0.01, 30)
            cand = base * np.exp(rng.normal(math.log1p(0.01), 0.02, 30))
            for rnd, n in enumerate((10, 20, 30)):
                decision, _ = bisect_step(base[:n], cand[:n], threshold=0.01,
                                          level=levels[rnd], info=TIME, paired=True)
                if decision != "inconclusive":
                    bad += decision == "bad"
                    break
        return bad / trials

    spent, unspent = bad_rate(bisect_levels(3)), bad_rate([BISECT_ALPHA] * 3)
    assert spent <= BISECT_ALPHA * 1.3, spent
    assert unspent >= 1.4 * spent, (spent, unspent)


def test_interleaved_runs_pair_by_round_around_failures() -> None:
    # Round 2 failed for A and round 5 for B (--ignore-failure): both keep 7 runs, but pairing
    # by position would set A's round 3 against B's round 2 and so on.  Rounds pair as made.
    from perflab.stats import round_pairs

    a = Configuration(name="A", command=["a"], is_baseline=True)
    b = Configuration(name="B", command=["b"])
    for i in range(8):
        a.runs.append(Run(seq=2 * i, values={} if i == 2 else {"wall_time": 1.0 + i},
                          status="failed" if i == 2 else "ok"))
        b.runs.append(Run(seq=2 * i + 1, values={} if i == 5 else {"wall_time": 1.05 * (1 + i)},
                          status="failed" if i == 5 else "ok"))
    x, y = round_pairs(a, b, "wall_time")
    assert len(x) == len(y) == 6
    assert all(v / u == pytest.approx(1.05) for u, v in zip(x, y, strict=True))
    rs = ResultSet(kind="compare", settings={"interleaved": True}, configurations=[a, b],
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]})
    (c,) = compare_result(rs, ["wall_time"])
    assert c.paired and c.ratio == pytest.approx(1.05) and c.n_baseline == c.n_candidate == 6


def test_looks_spend_alpha_strict_early_and_the_last_look_gets_the_rest() -> None:
    """Adaptive looks and bisect's rounds spend by one function (stats.spending_levels); the
    levels of the looks a measurement takes add up to alpha wherever it stops."""
    from perflab.stats import look_level, spending_levels

    assert bisect_levels(8) == spending_levels(8, BISECT_ALPHA, -4.0)
    sched = look_schedule(6, 1000)
    levels = [look_level(6, 1000, n, final=False) for n in sched[:-1]]
    assert levels == sorted(levels) and levels[0] < ALPHA / 100  # early looks strict
    for end in (7, 48, 60, 500, 1000):  # the budget ends between looks, at one, or at the max
        taken = [look_level(6, 1000, n, final=False) for n in sched if n < end]
        assert sum(taken) + look_level(6, 1000, end, final=True) == pytest.approx(ALPHA)
    # Ending at 60 runs of the default schedule leaves most of alpha for that last look.
    assert look_level(6, 1000, 60, final=True) > 0.9 * ALPHA
    assert look_level(6, 60, 60, final=True) == pytest.approx(
        look_level(6, 60, 60, final=False))


def test_five_percent_at_cv_five_percent_is_decided_within_60_runs() -> None:
    """+5% at CV 5% a run, adaptive with --max-runs 60: decided `slower` in at least 90%
    (82.1% with alpha split evenly over the looks); A/A claims nothing false."""
    from perflab import simulate

    rng = np.random.default_rng(33)
    found = [simulate.adaptive(*simulate.rounds(rng, 60, 0.05, ratio=1.05, shared=False),
                               max_runs=60).verdict for _ in range(150)]
    assert found.count("slower") >= 0.88 * 150, found.count("slower")
    aa = [simulate.adaptive(*simulate.rounds(rng, 60, 0.02, shared=False), max_runs=60).verdict
          for _ in range(150)]
    assert aa.count("slower") + aa.count("faster") <= 3


def test_the_level_of_the_deciding_look_is_stored_and_judged_again() -> None:
    plan = Plan.from_dict(Plan(looks=15, level=0.004).to_dict())
    assert plan.level == 0.004 and plan.alpha_look == 0.004
    assert Plan(looks=15).alpha_look == pytest.approx(ALPHA / 15)  # stored before: as it was


def test_exploratory_metrics_are_one_family_across_the_table() -> None:
    """A/A tables of a primary and 10 exploratory metrics, 20 runs, independent noise: a false
    exploratory claim in at most 5% of tables (one BH family over them all; each metric alone
    had 3.3% at 10 runs); each keeps its own words.  Results stored before are judged as they
    were, one family per metric."""
    from perflab import simulate

    rng = np.random.default_rng(3)
    tables = [simulate.table(rng, 20, 0.01, 0.0, 10) for _ in range(60)]
    assert sum(simulate.false_claims(t)[0] for t in tables) <= 3
    t = tables[0]
    assert {c.family for c in t if c.exploratory} == {"exploratory"}
    assert {c.family for c in t if not c.exploratory} == {"task_clock"}
    assert all(c.verdict in ("equivalent", "inconclusive", "slower", "faster") for c in t)
    # The family adjusts: with a clear change on one exploratory metric among ten, its p is BH's.
    rs = _result({"t": 1.0, **{f"c{i}": 1.0 for i in range(9)}, "moved": 1.2}, seed=2)
    comps = compare_result(rs)
    moved = next(c for c in comps if c.metric == "moved")
    assert moved.exploratory and moved.raw_p_value is not None and moved.p_value is not None
    assert moved.p_value >= moved.raw_p_value
    old = Settings.from_dict({"comparison": {"threshold": 0.01}}).plan()
    assert not old.pool_exploratory
    per_metric = compare_result(rs, plan=old)
    assert {c.family for c in per_metric} == {c.metric for c in per_metric}
