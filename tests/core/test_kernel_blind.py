"""A user-space count cannot see the kernel (issue 19, item 8): callgrind's instructions
never certify "equivalent" for a command that spends most of its CPU time in the kernel."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from perflab.cli import app
from perflab.model import Configuration, MetricInfo, ResultSet, Run
from perflab.stats import compare_result, kernel_share
from perflab.storage import Store

pytestmark = pytest.mark.unit

CALLGRIND = MetricInfo("instructions", "count", "valgrind callgrind (exact)",
                       deterministic=True)


def _result(user: float, sys_t: float) -> ResultSet:
    rs = ResultSet(kind="compare", metrics={"instructions": CALLGRIND},
                   settings={"interleaved": True, "primary_metric": "instructions"})
    for name in ("a", "b"):
        cfg = Configuration(name=name, command=[name], cell="{}")
        cfg.runs = [Run(seq=i, values={"user_time": user, "sys_time": sys_t}) for i in range(3)]
        cfg.runs += [Run(seq=3 + i, values={"instructions": 29_280.0}) for i in range(2)]
        rs.configurations.append(cfg)
    return rs


def test_equal_counts_of_kernel_work_are_not_equivalent() -> None:
    rs = _result(user=0.001, sys_t=0.009)
    assert kernel_share(rs.configurations) == pytest.approx(0.9)
    (c,) = compare_result(rs, ["instructions"])
    assert c.verdict == "inconclusive"
    assert "90% of the CPU time is the kernel's, which callgrind does not count" in c.label


def test_equal_counts_of_user_work_are_equivalent() -> None:
    (c,) = compare_result(_result(user=0.009, sys_t=0.001), ["instructions"])
    assert c.verdict == "equivalent"


@pytest.mark.system
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_compare_with_instructions_times_a_few_rounds_and_sees_the_kernel() -> None:
    dd = "dd if=/dev/zero of=/dev/null bs=1M count=200 status=none"
    res = CliRunner().invoke(app, ["compare", "--metric", "instructions", "-n", "a", "-n", "b",
                                   dd, dd])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "instructions: exact counts, compared without statistics" in text
    rs = Store().load(Store().result_ids()[-1])
    (c,) = compare_result(rs, ["instructions"])
    assert c.verdict == "inconclusive" and "callgrind does not count" in c.note, c
    assert rs.settings.stop is not None and rs.settings.stop["rounds"] == 3
    assert rs.settings.comparison is not None and rs.settings.comparison["looks"] == 1
