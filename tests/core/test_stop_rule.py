"""The stop rule of adaptive measuring for a family (stats.stop_check): decided as the final
table decides, futile pairs stop, pairs that could still be decided keep it going."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.judging import ALPHA, Plan
from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.stats import (
    MOVED,
    compare_result,
    compare_samples,
    decidable,
    look_level,
    stop_check,
)

pytestmark = pytest.mark.unit

TIME = MetricInfo("t", "ms", "test")


def family(rng: np.random.Generator, ratios: list[float], n: int,
           cv: float) -> list[tuple[np.ndarray, np.ndarray, MetricInfo]]:
    """Interleaved pairs (base, cand) of ``n`` rounds, each candidate ``ratio`` times its base."""
    out = []
    for r in ratios:
        a = np.exp(rng.normal(0, cv, n))
        out.append((a, np.exp(np.log(a) + rng.normal(np.log(r), cv, n)), TIME))
    return out


def final_table(pairs: list[tuple[np.ndarray, np.ndarray, MetricInfo]],
                plan: Plan) -> list[str]:
    """compare_result's verdicts for the family, one cell per pair."""
    rs = ResultSet(kind="compare", metrics={"t": TIME},
                   settings={"interleaved": True, "primary_metric": "t"})
    for j, (a, b, _) in enumerate(pairs):
        for name, xs in (("A", a), ("B", b)):
            cfg = Configuration(name=name, command=[name], cell=f'{{"b": {j}}}',
                                is_baseline=name == "A")
            cfg.runs = [Run(seq=i, values={"t": float(x)}) for i, x in enumerate(xs)]
            rs.configurations.append(cfg)
    return [c.verdict for c in compare_result(rs, plan=plan)]


def test_a_decided_family_stops() -> None:
    pairs = family(np.random.default_rng(1), [1.10] * 5, 30, 0.01)
    look = stop_check(pairs, paired=True, plan=Plan(level=0.01))
    assert (look.decided, look.futile, look.open) == (5, 0, 0)
    assert look.stop and look.reason == "every primary comparison was decided"


def test_futile_pairs_stop_and_say_so() -> None:
    # Two changed by 10% are decided; two unchanged at CV 5% cannot fit the +-1% band (nor
    # leave it) within 40 runs: futile.  Without a budget they hold measuring up.
    pairs = family(np.random.default_rng(2), [1.10, 1.10, 1.0, 1.0], 32, 0.05)
    plan = Plan(level=0.01)
    look = stop_check(pairs, paired=True, plan=plan, budget_runs=40, final_level=ALPHA)
    assert (look.decided, look.futile, look.open) == (2, 2, 0) and look.stop
    assert look.reason == "2 decided, 2 cannot be decided within the budget at this noise"
    assert not stop_check(pairs, paired=True, plan=plan).stop
    # Futility leaves them inconclusive in the final table; it makes no claim of its own.
    assert sorted(final_table(pairs, plan)) == ["inconclusive", "inconclusive", "slower",
                                                "slower"]


def test_a_pair_that_could_still_be_decided_keeps_measuring() -> None:
    # Unchanged at CV 0.5%: 9 runs leave it undecided, 200 would fit the band.
    pairs = family(np.random.default_rng(3), [1.10, 1.0], 9, 0.005)
    plan = Plan(level=look_level(6, 200, 9, final=False))
    look = stop_check(pairs, paired=True, plan=plan, budget_runs=200,
                      final_level=look_level(6, 200, 200, final=True))
    assert look.open >= 1 and not look.stop
    # At the budget's end nothing more can be decided.
    end = stop_check(pairs, paired=True, plan=plan, budget_runs=9)
    assert end.stop and end.futile >= 1
    alone = stop_check(pairs[1:], paired=True, plan=plan, budget_runs=9)
    assert alone.reason == ("the primary comparison cannot be decided within the budget at "
                            "this noise")


def test_decidable_reads_the_budget() -> None:
    rng = np.random.default_rng(4)
    a = np.exp(rng.normal(0, 0.02, 12))
    b = a * np.exp(rng.normal(np.log(1.03), 0.02, 12))
    c = compare_samples(a, b, paired=True, info=TIME, alpha=0.001)
    assert c.verdict == "inconclusive" and c.loc is not None
    band = (float(np.log(0.99)), float(np.log(1.01)))
    assert decidable(c.loc, 12, 500, band, ALPHA)
    assert not decidable(c.loc, 12, 12, band, ALPHA)
    assert not decidable(c.loc, 12, 13, band, 1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_stop_decides_what_the_final_table_decides(seed: int) -> None:
    # Below 20 runs the family's intervals are widened for its pooled lag-1 correlation in the
    # final table; the stop rule judges with the same widening and the same Holm adjustment, so
    # its decided count is the final table's claims, pair for pair.
    rng = np.random.default_rng(seed)
    n = int(rng.choice([8, 12, 16, 30]))
    ratios = list(rng.choice([1.0, 1.005, 1.02, 1.04, 1.10], 12))
    pairs = family(rng, ratios, n, 0.02)
    plan = Plan(level=0.02)
    look = stop_check(pairs, paired=True, plan=plan)
    verdicts = final_table(pairs, plan)
    assert look.decided == sum(v != "inconclusive" for v in verdicts)
    assert look.stop == all(v != "inconclusive" for v in verdicts)


def test_pooled_widening_lets_a_short_family_stop() -> None:
    # 10 runs: alone each interval is widened for lag-1 0.8 (drift cannot be ruled out); the
    # family of 20 pools its correlation, and the final table decides them: so does the rule.
    pairs = family(np.random.default_rng(7), [1.08] * 20, 10, 0.01)
    plan = Plan(level=ALPHA)
    alone = [compare_samples(a, b, paired=True, info=TIME, alpha=ALPHA / 20) for a, b, _ in pairs]
    assert any(c.verdict == "inconclusive" for c in alone)
    assert stop_check(pairs, paired=True, plan=plan).stop
    assert all(v in MOVED for v in final_table(pairs, plan))


def test_a_benchmark_one_build_lacks_does_not_hold_measuring_up() -> None:
    pairs = family(np.random.default_rng(8), [1.10, 1.10], 30, 0.01)
    lacking = [*pairs, (pairs[0][0], np.asarray([]), TIME)]
    assert not stop_check(lacking, paired=True, plan=Plan(level=0.01)).stop
    look = stop_check(lacking, paired=True, plan=Plan(level=0.01), budget_runs=100)
    assert (look.decided, look.futile, look.open) == (2, 1, 0)
