"""The tiers keep their promises: a unit-tier test that starts a process or sleeps fails, and a
test without a tier is refused at collection (tests/tiers.py)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field

import pytest

import tiers

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(tiers._audit_path is not None,
                                 reason="PERFLAB_TIER_AUDIT records violations instead")]


def test_a_unit_test_cannot_start_a_process() -> None:
    with pytest.raises(tiers.TierViolation, match="started a process"):
        subprocess.run(["true"], check=False)
    with pytest.raises(tiers.TierViolation, match="started a process"):
        subprocess.Popen(["true"], close_fds=False)  # the posix_spawn path
    with pytest.raises(tiers.TierViolation, match=r"os\.system"):
        os.system("true")
    with pytest.raises(tiers.TierViolation, match=r"os\.fork"):
        if os.fork() == 0:  # only if the guard failed: the child must not run the tests
            os._exit(0)


def test_a_unit_test_cannot_sleep() -> None:
    time.sleep(0.001)  # under the 10 ms allowance
    with pytest.raises(tiers.TierViolation, match="slept"):
        time.sleep(0.02)


@dataclass
class _Mark:
    name: str


@dataclass
class _Item:
    nodeid: str
    marks: list[str] = field(default_factory=list)

    def iter_markers(self) -> list[_Mark]:
        return [_Mark(m) for m in self.marks]


def test_the_closest_tier_marker_wins() -> None:
    assert tiers.tier_of(iter(["parametrize", "measure", "unit"])) == "measure"
    assert tiers.tier_of(iter(["parametrize", "skipif"])) is None


def test_a_test_without_a_tier_is_a_collection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "_audit_path", None)
    ok = _Item("t.py::a", ["unit"])
    none = _Item("t.py::b", ["parametrize"])
    tiers.pytest_collection_modifyitems(None, [ok])  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match=r"(?s)1 test\(s\) have no tier marker.*t\.py::b"):
        tiers.pytest_collection_modifyitems(None, [ok, none])  # type: ignore[arg-type]


class _Config:
    def __init__(self, tier: str) -> None:
        self.tier = tier
        self.deselected: list[_Item] = []

        class Hook:
            @staticmethod
            def pytest_deselected(items: list[_Item]) -> None:
                self.deselected += items

        self.hook = Hook()

    def getoption(self, name: str, default: object = None) -> str:
        return self.tier


def test_tier_option_goes_by_the_closest_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "_audit_path", None)
    measure_in_system_module = _Item("t.py::m", ["measure", "system"])
    system = _Item("t.py::s", ["system"])
    unit = _Item("t.py::u", ["unit"])
    items = [measure_in_system_module, system, unit]
    config = _Config("unit,system")
    tiers.pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
    assert items == [system, unit] and config.deselected == [measure_in_system_module]
    with pytest.raises(pytest.UsageError, match="the tiers are unit, system, measure"):
        tiers.pytest_collection_modifyitems(_Config("fast"), [unit])  # type: ignore[arg-type]
