"""Verdicts that say what the numbers show (issue 19, items 6, 8, 9): callgrind's instructions
never certify "equivalent" for a command that spends most of its CPU time in the kernel; two
workloads differ, never regress; work sizes and checksums compare only for the same work."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from perflab.cli import app
from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Run
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
    assert ("valgrind does not count the kernel: 90% of this workload's CPU time is in the "
            "kernel") in c.label


def test_equal_counts_of_user_work_are_equivalent() -> None:
    (c,) = compare_result(_result(user=0.009, sys_t=0.001), ["instructions"])
    assert c.verdict == "equivalent"


@pytest.mark.system
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_compare_with_instructions_times_a_few_rounds_and_sees_the_kernel() -> None:
    dd = "dd if=/dev/zero of=/dev/null bs=512 count=100000 status=none"  # 2 syscalls a block
    res = CliRunner().invoke(app, ["compare", "--metric", "instructions", "-n", "a", "-n", "b",
                                   dd, dd])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "instructions: exact counts, compared without statistics" in text
    rs = Store().load(Store().result_ids()[-1])
    (c,) = compare_result(rs, ["instructions"])
    assert c.verdict == "inconclusive" and "valgrind does not count the kernel" in c.note, c
    assert rs.settings.stop is not None and rs.settings.stop.rounds == 3
    assert rs.settings.comparison is not None and rs.settings.comparison.looks == 1


def _two(bench_a: str, bench_b: str) -> ResultSet:
    time_info = MetricInfo("wall_time", "s", "clock")
    rs = ResultSet(kind="compare", metrics={"wall_time": time_info},
                   settings={"interleaved": True, "primary_metric": "wall_time"})
    for name, bench, k in (("a", bench_a, 1.0), ("b", bench_b, 1.5)):
        cfg = Configuration(name=name, command=[name], benchmark=bench, cell="{}")
        cfg.runs = [Run(seq=i, values={"wall_time": k * (1 + 0.001 * (i % 3))})
                    for i in range(8)]
        rs.configurations.append(cfg)
    return rs


def test_two_programs_differ_and_two_versions_regress() -> None:
    (c,) = compare_result(_two("eh/cpp", "eh/java"), ["wall_time"])
    assert c.verdict == "slower" and c.label == "slower" and not c.regression
    (c,) = compare_result(_two("eh/cpp", "eh/cpp"), ["wall_time"])
    assert c.label == "slower (regression)" and c.regression
    (c,) = compare_result(_two("./old/prog", "./new/prog"), ["wall_time"])
    assert c.regression  # commands: versions of one program as far as perflab can tell


def test_the_size_of_the_work_is_compared_only_for_the_same_work() -> None:
    """Calibrated apart, eh/cpp ran 249,402 iterations and eh/rust 176,880: the README tour
    read "ops -26.20% different" and "checksum ... different"; sizes and checksums are now
    compared only where both configurations declared the same work."""
    def result(ops_b: float) -> ResultSet:
        rs = ResultSet(kind="compare", settings={"interleaved": True})
        for name, ops in (("a", 1000.0), ("b", ops_b)):
            cfg = Configuration(name=name, command=[name], cell="{}")
            cfg.runs = [Run(seq=i, values={"ops": ops, "checksum": ops * 7,
                                           "wall_time": 1.0 + 0.01 * (i % 3)})
                        for i in range(8)]
            rs.configurations.append(cfg)
        rs.metrics = {m: MetricInfo(m, "" if m != "wall_time" else "s", "x",
                                    direction="none" if m != "wall_time" else "lower")
                      for m in ("ops", "checksum", "wall_time")}
        return rs

    assert sorted(c.metric for c in compare_result(result(2000.0))) == ["wall_time"]
    same = {c.metric: c.verdict for c in compare_result(result(1000.0))}
    assert same["ops"] == "equivalent" and same["checksum"] == "equivalent"


KERNEL_NOTE = ("valgrind does not count the kernel: 90% of this workload's CPU time is in the "
               "kernel")


def test_every_count_of_kernel_work_says_the_kernel_share() -> None:
    """Counts that differ keep their verdict, with the kernel's share beside it; a single
    configuration's count (stat) says it among the warnings."""
    from perflab.reports.analysis import Analysis
    from perflab.reports.warnings import result_warnings, suite_warnings

    rs = _result(user=0.001, sys_t=0.009)
    for r in rs.configurations[1].runs[3:]:
        r.values["instructions"] = 31_000.0
    (c,) = compare_result(rs, ["instructions"])
    assert c.verdict == "larger" and c.note == KERNEL_NOTE and KERNEL_NOTE in c.label
    a = Analysis.of(rs)
    assert result_warnings(a).count(f"b: {KERNEL_NOTE}") == 1
    assert [w.text for w in suite_warnings(a, "instructions") if w.kind == "kernel"] == [
        f"a: {KERNEL_NOTE}", f"b: {KERNEL_NOTE}"]
    alone = _result(user=0.001, sys_t=0.009)
    alone.configurations.pop()
    assert f"a: {KERNEL_NOTE}" in result_warnings(Analysis.of(alone))
    user = _result(user=0.009, sys_t=0.001)
    assert not [w for w in result_warnings(Analysis.of(user)) if "kernel" in w]
