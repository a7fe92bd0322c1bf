"""model.Settings: a result's settings as a dataclass that stores the same flat JSON as before
and reads rows of every earlier version back."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.judging import Plan
from perflab.model import Configuration, ResultSet, Run, Settings, SuiteRecord
from perflab.storage import Store

pytestmark = pytest.mark.unit

OLD_ROW = {  # what a stat of an earlier version stored, plus a bisect's own keys
    # (``options``: the MeasureOptions, stored until issue 24, read by nothing)
    "options": {"warmup": 1, "runs": 3}, "interleaved": False, "primary_metric": "wall_time",
    "counters": "perf", "comparison": {"threshold": 0.02, "correction": "holm"},
    "stop": {"rounds": 3, "reason": "--runs 3", "seconds": 0.1},
    "good": "abc", "steps": [{"commit": "abc", "decision": "good"}],
}


# The plan that row is judged with: what it stored, the rest as earlier versions judged.
OLD_PLAN = Plan(threshold=0.02, correction="holm", kind_bands=False, pool_exploratory=False)


def without_plan(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "comparison"}


def test_round_trip_keeps_every_key() -> None:
    s = Settings.from_dict(OLD_ROW)
    assert s.primary_metric == "wall_time" and s.interleaved is False
    assert s.comparison == OLD_PLAN  # typed: read once, here
    assert s.stop is not None and s.stop.reason == "--runs 3"
    assert s.extra == {"options": {"warmup": 1, "runs": 3}, "good": "abc",
                       "steps": [{"commit": "abc", "decision": "good"}]}
    assert s.suite == SuiteRecord()  # not a suite run: an empty record, not None
    back = s.to_dict()
    # Every key back, in its stored order; the plan written whole (what it was judged with).
    assert list(back) == list(OLD_ROW) and without_plan(back) == without_plan(OLD_ROW)
    assert back["comparison"] == OLD_PLAN.to_dict()
    assert Settings.from_dict(back) == s


def test_unset_fields_are_not_stored() -> None:
    assert Settings().to_dict() == {}
    assert Settings(suite=SuiteRecord(name="x"), threshold=0.05).to_dict() == {
        "suite": {"name": "x"}, "threshold": 0.05}
    assert Settings.from_dict(None) == Settings()
    assert Settings.from_dict({"suite": None}).suite == SuiteRecord()  # not a suite run


def test_copy_is_deep() -> None:
    s = Settings(suite=SuiteRecord(done=[]))
    c = s.copy()
    assert c.suite.done is not None
    c.suite.done.append("cell")
    assert s.suite.done == []


def test_a_dict_given_to_result_set_becomes_settings() -> None:
    rs = ResultSet(kind="stat", settings={"primary_metric": "task_clock", "first_bad": "abc"})
    assert isinstance(rs.settings, Settings)
    assert rs.settings.primary_metric == "task_clock" and rs.settings.extra == {"first_bad": "abc"}


def test_store_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    rs = ResultSet(kind="stat", settings=Settings.from_dict(OLD_ROW), status="complete")
    cfg = Configuration(name="a", command=["true"], is_baseline=True)
    cfg.runs.append(Run(seq=0, values={"wall_time": 1.0}))
    rs.configurations.append(cfg)
    rid = store.save(rs)
    back = store.load(rid)
    assert back.settings == rs.settings
    assert without_plan(back.settings.to_dict()) == without_plan(OLD_ROW)


def test_the_plan_is_read_from_one_place_whatever_the_version() -> None:
    """judging.Plan.of reads Settings.plan() only: a suite of an earlier version kept its band in
    ``suite``, a bisect in ``threshold``; both were judged +-threshold for every metric."""
    suite = Settings.from_dict({"suite": {"threshold": 0.05, "correction": "bh"}})
    assert suite.plan() == Plan(threshold=0.05, correction="bh", kind_bands=False,
                                pool_exploratory=False)
    assert suite.comparison is None and "comparison" not in suite.to_dict()  # row unchanged
    bisect = Settings.from_dict({"threshold": 0.04, "comparison": {"estimator": "median"}})
    assert bisect.plan() == Plan(threshold=0.04, estimator="median", kind_bands=False,
                                 pool_exploratory=False)
    new = Settings(comparison=Plan(threshold=0.02))
    assert new.plan().kind_bands is True and new.plan().threshold == 0.02
    assert new.to_dict() == {"comparison": Plan(threshold=0.02).to_dict()}
    rs = ResultSet(kind="suite", settings=suite)
    assert Plan.of(rs).threshold == 0.05 and Plan.of(rs).correction == "bh"
    assert Settings().plan() == Plan(kind_bands=False, pool_exploratory=False)


def test_a_stored_suite_entry_is_typed_and_written_back_as_it_was() -> None:
    """settings.suite as perflab 0.1.0 stored it (tests/fixtures/core/schema4), plus a key this
    version does not know: read once into a SuiteRecord, written back key for key."""
    stored = {"name": "fx", "path": "s.toml", "text": "[suite]\n", "plan": "3190", "baseline": "a",
              "threshold": 0.05, "correction": "holm", "estimator": "trim", "metrics": [],
              "primary": None, "report": {}, "skipped": [], "cells": ['{"n":1}'],
              "calibrate": None, "calibrated": {}, "done": ['{"n":1}'], "superseded": [],
              "later_key": 1}
    s = Settings.from_dict({"suite": stored})
    assert s.suite.threshold == 0.05 and s.suite.done == ['{"n":1}'] and s.suite.primary is None
    assert s.suite.failed is None and s.suite.extra == {"later_key": 1}
    back = s.to_dict()["suite"]
    assert back == stored and list(back) == list(stored)
    assert s.plan() == Plan(threshold=0.05, correction="holm", estimator="trim",
                            kind_bands=False, pool_exploratory=False)
