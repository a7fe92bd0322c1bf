"""SuiteProgress: a suite run's progress in settings.suite, as earlier versions stored it."""

from __future__ import annotations

import pytest

from perflab.model import Configuration
from perflab.suites.execute import SuiteProgress

pytestmark = pytest.mark.unit


def test_progress_stored_by_an_earlier_version_reads_and_writes_back_the_same_keys() -> None:
    # What suite_settings and run_plan stored before SuiteProgress: "failed", "groups" and
    # "calibration_s" only when there were some; the plan's own keys beside them.
    stored = {"name": "s", "plan": "f00d", "done": ['{"n": 1}'], "superseded": [7],
              "calibrated": {'{"n": 1}': {"a": 1000}}}
    p = SuiteProgress.from_json(stored)
    assert (p.done, p.superseded, p.failed, p.groups) == (['{"n": 1}'], [7], [], [])
    assert p.calibrated == {'{"n": 1}': {"a": 1000}} and p.calibration_s == {}
    p.done.append('{"n": 3}')
    p.failed.append({"cell": '{"n": 2}', "error": "exit 1"})
    p.groups.append(['{"n": 1}', '{"n": 2}'])
    again = SuiteProgress.from_json({**stored, **p.to_json()})
    assert again == p
    assert stored["done"] == ['{"n": 1}']  # from_json copies: the stored dict is not changed
    assert SuiteProgress.from_json({}) == SuiteProgress()


def test_supersede_adds_each_stored_configuration_once() -> None:
    p = SuiteProgress(superseded=[3])
    configs = [Configuration(name=n, command=["x"]) for n in "abc"]
    configs[0].id, configs[1].id = 3, 4  # c was never stored: no id, nothing to leave out
    p.supersede(configs)
    p.supersede(configs)
    assert p.superseded == [3, 4]
