"""Counter stories: what moved and what did not, per operation, against the comparison
contract of docs/core-api.md (real comparisons from perflab.stats, and hand-made ones)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.profiles import counter_story
from perflab.stats import Comparison, compare_result

pytestmark = pytest.mark.unit

OPS = 1000


def _cfg(name: str, per_op: dict[str, float], *, baseline: bool, seed: int,
         ops: bool = True, cell: dict | None = None) -> Configuration:
    rng = random.Random(seed)
    cfg = Configuration(name=name, command=["x"], params=cell or {"size": 4096},
                        is_baseline=baseline)
    for i in range(12):
        values = {m: v * OPS * (1 + rng.uniform(-0.0001, 0.0001)) for m, v in per_op.items()}
        values["wall_time"] = 0.1 * (1 + rng.uniform(-0.01, 0.01))
        if ops:
            values["ops"] = OPS
        cfg.runs.append(Run(seq=i, values=values))
    return cfg


def _rs(*cfgs: Configuration) -> ResultSet:
    metrics = {m: BUILTIN_METRICS[m] for m in
               ("wall_time", "instructions", "cache_misses", "page_faults", "task_clock")}
    return ResultSet(kind="compare", configurations=list(cfgs), metrics=metrics,
                     settings={"interleaved": True})  # perflab's rounds: paired


BASE = {"instructions": 2000.0, "cache_misses": 3.0, "page_faults": 0.5, "task_clock": 1.5e-6}


def test_story_names_what_moved_per_op_and_what_did_not() -> None:
    # the lat_mmap shape: +200 instructions per op, cache misses and faults unchanged
    cand = {**BASE, "instructions": 2200.0, "task_clock": 1.65e-6}
    rs = _rs(_cfg("native", BASE, baseline=True, seed=1),
             _cfg("paravirt", cand, baseline=False, seed=2))
    comps = compare_result(rs)
    (line,) = counter_story(rs, comps)
    assert line.startswith("paravirt vs native (size=4096): moved: ")
    moved, unchanged = line.split("; unchanged: ")
    assert "+200 instructions per op (+10.0%" in moved
    assert "+150 ns of task_clock per op" in moved
    assert "cache misses" in unchanged and "page faults" in unchanged
    assert "cache misses" not in moved


def test_story_without_ops_gives_plain_deltas_and_fewer_instructions() -> None:
    cand = {**BASE, "instructions": 1500.0}
    rs = _rs(_cfg("A", BASE, baseline=True, seed=3, ops=False),
             _cfg("B", cand, baseline=False, seed=4, ops=False))
    (line,) = counter_story(rs, compare_result(rs))
    assert "-500,000 instructions (-25.0%" in line and "per op" not in line


def test_no_counters_no_story() -> None:
    rs = _rs(_cfg("A", BASE, baseline=True, seed=5), _cfg("B", BASE, baseline=False, seed=6))
    assert counter_story(rs, compare_result(rs, ["wall_time"])) == []


def _comp(*fields: Any) -> Comparison:
    """A stats.Comparison from (metric, baseline, candidate, ratio, ci_low, ci_high, p_value,
    verdict, cell) of interleaved runs: the stories read only these."""
    return Comparison(*fields[:8], cell=fields[8], paired=True)


def test_story_per_cell_and_undecided_counters() -> None:
    small, big = {"size": 4096}, {"size": 1048576}
    rs = _rs(_cfg("A", BASE, baseline=True, seed=7, cell=small),
             _cfg("B", BASE, baseline=False, seed=8, cell=small),
             _cfg("A", BASE, baseline=True, seed=9, cell=big),
             _cfg("B", {**BASE, "cache_misses": 6.0}, baseline=False, seed=10, cell=big))
    comps = [
        _comp("cache_misses", "A", "B", 1.004, 0.98, 1.03, 0.6, "inconclusive",
                       rs.configurations[0].cell),
        _comp("cache_misses", "A", "B", 2.0, 1.9, 2.1, 0.001, "slower",
                       rs.configurations[2].cell),
        _comp("wall_time", "A", "B", 1.0, 0.99, 1.01, 0.9, "equivalent",
                       rs.configurations[2].cell),
    ]
    lines = counter_story(rs, comps)
    assert len(lines) == 2
    # Nothing moved is not claimed while a counter is undecided.
    assert lines[0] == ("B vs A (size=4096): nothing shown to move; undecided: cache misses "
                        "(+0.4% [-2.0, +3.0])")
    assert lines[1].startswith("B vs A (size=1048576): moved: +3 cache misses per op (+100.0%")


def test_story_survives_missing_configurations_and_nan() -> None:
    rs = _rs(_cfg("A", BASE, baseline=True, seed=11))
    comp = _comp("instructions", "A", "ghost", math.nan, math.nan, math.nan, None,
                          "slower", "{}")
    assert counter_story(rs, [comp]) == ["ghost vs A: moved: instructions"]


def test_story_says_not_interleaved_and_signs_match_the_percentage() -> None:
    # Medians of per-op values can move one way while the comparison's location moves the
    # other ("-0.0186 ns of task_clock per op (+195.7%)"): the amount is the baseline's
    # figure x (ratio - 1), so its sign is the percentage's.
    rs = _rs(_cfg("A", BASE, baseline=True, seed=12), _cfg("B", BASE, baseline=False, seed=13))
    comp = Comparison("task_clock", "A", "B", 2.957, 2.5, 3.4, 0.001, "slower",
                      cell=rs.configurations[0].cell, paired=False)
    (line,) = counter_story(rs, [comp])
    assert line.startswith("B vs A (size=4096) (not interleaved): moved: +2,940 ns of ")
    assert "(+195.7% [+150.0, +240.0])" in line
