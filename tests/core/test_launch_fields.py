"""The launcher's record is described once: the X-macro PERFLAB_RUN_FIELDS in perflab-launch.c
lists a run's fields (name and C expression); the C prints the "done" line and the head of each
batch record through it, and process.py reads the names from the same source.  The X-macro
PERFLAB_REC_TAIL lists the rest of a batch record (counters' readings, the timed region, the
output lengths) the same way, each item claimed by the _RawRun field(s) it fills.  These tests
fail when the two sides disagree: a field in a list that _RawRun lacks (or the reverse), or a
line the launcher prints by hand instead of through the lists."""

from __future__ import annotations

import dataclasses
import errno
import os
import time
from pathlib import Path
from typing import Any

import pytest

from perflab.collectors import process
from perflab.collectors.process import (
    LaunchServer,
    RunRequest,
    _RawRun,
    _rec_tail,
    _run_fields,
    _tail_values,
    launch_fields,
    rec_tail,
)


def raw_run_head(n: int) -> tuple[str, ...]:
    """The names of _RawRun's first ``n`` fields."""
    return tuple(f.name for f in dataclasses.fields(_RawRun))[:n]


def agree(names: tuple[str, ...]) -> bool:
    """Whether the launcher's fields ``names`` are _RawRun's first ones, in order, and every
    _RawRun field after them has a default (is not the launcher's)."""
    rest = dataclasses.fields(_RawRun)[len(names):]
    return raw_run_head(len(names)) == names and all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for f in rest)


@pytest.mark.unit
def test_the_launchers_fields_are_the_raw_runs_first_fields() -> None:
    names = launch_fields()
    assert names[:2] == ("status", "wall_ns") and names[-1] == "started_ns"
    assert agree(names), (names, raw_run_head(len(names)))


@pytest.mark.unit
def test_a_field_added_on_one_side_only_is_caught() -> None:
    """The check above fails for a field added to the C list only, or to _RawRun only."""
    src = process._launcher_source().decode()
    added = src.replace("    X(pid, r->pid)", "    X(pid, r->pid) \\\n    X(cpu, r->cpu)", 1)
    assert added != src
    assert _run_fields(added) == (*launch_fields()[:12], "cpu", *launch_fields()[12:])
    assert not agree(_run_fields(added))
    assert not agree(launch_fields()[:-1])  # _RawRun has a launcher field the C list lacks
    assert _run_fields("int main(void) { return 0; }") == ()


def tail_agrees(items: tuple[tuple[str, str, str], ...]) -> bool:
    """Whether every item of a record's tail but the counts is claimed by a _RawRun field, every
    _RawRun field's claim is an item, and each READINGS' count is a NUM before it."""
    counts = {n for kind, _, n in items if kind == "READINGS"}
    claimed = {f.metadata["rec"] for f in dataclasses.fields(_RawRun) if "rec" in f.metadata}
    before = [name for kind, name, _ in items]
    ordered = all(n in before[:i] and items[before.index(n)][0] == "NUM"
                  for i, (kind, _, n) in enumerate(items) if kind == "READINGS")
    return {name for _, name, _ in items} - counts == claimed and ordered


@pytest.mark.unit
def test_the_record_tail_is_claimed_by_raw_run_fields() -> None:
    items = rec_tail()
    assert items[0] == ("NUM", "counter_errno", "") and items[-1] == ("BYTES", "killed", "")
    assert tail_agrees(items), items


@pytest.mark.unit
def test_a_tail_item_added_on_one_side_only_is_caught() -> None:
    """The check above fails for an item added to the C list only, for one _RawRun claims that
    the list lacks, and for readings counted by a number that comes after them."""
    src = process._launcher_source().decode()
    anchor = "    NUM(region_open) "
    added = src.replace(anchor, "    NUM(region_cpu) \\\n" + anchor, 1)
    assert added != src
    items = _rec_tail(added)
    assert ("NUM", "region_cpu", "") in items and not tail_agrees(items)
    assert not tail_agrees(tuple(i for i in rec_tail() if i[1] != "err"))  # stderr claims it
    late = tuple(i for i in rec_tail() if i[1] != "nc") + (("NUM", "nc", ""),)
    assert not tail_agrees(late)
    assert _rec_tail("int main(void) { return 0; }") == ()


@pytest.mark.unit
def test_a_tail_is_read_by_its_list() -> None:
    """Two counters, a summed region and three outputs: every number is where the list says,
    and a record with a number more or less than the list is refused."""
    nums = [0, 2, 10, 11, 12, 20, 21, 22, 1, 5000, 0, 2, 1, 1, 1, 2, 2, 2, 3, 4, 0, 6]
    values, blobs = _tail_values(rec_tail(), ["a", "b"], nums)
    assert values["final"]["b"] == process.Reading(20, 21, 22)
    assert values["region_sum"]["a"] == process.Reading(1, 1, 1)
    assert (values["region_enables"], values["region_ns"], values["region_open"]) == (1, 5000, 0)
    assert blobs == [("out", 3), ("err", 4), ("region_bad", 0), ("killed", 6)]
    no_region = [0, 2, 10, 11, 12, 20, 21, 22, 0, 0, 0, 0, 0, 0, 0, 0]
    assert _tail_values(rec_tail(), ["a", "b"], no_region)[0]["region_sum"] == {}
    for bad in (nums[:-1], [*nums, 0]):
        with pytest.raises((ValueError, IndexError)):
            _tail_values(rec_tail(), ["a", "b"], bad)


class _Tee:
    """The server's report pipe, keeping each line perflab reads from it."""

    def __init__(self, report: Any) -> None:
        self.report = report
        self.lines: list[str] = []

    def readline(self) -> bytes:
        line: bytes = self.report.readline()
        self.lines.append(line.decode())
        return line

    def read(self, n: int) -> bytes:
        data: bytes = self.report.read(n)
        return data

    def fileno(self) -> int:
        fd: int = self.report.fileno()
        return fd

    def buffered(self) -> bool:
        held: bool = self.report.buffered()
        return held

    def close(self) -> None:
        self.report.close()


def by_name(line: str, verb: str) -> dict[str, int]:
    """A "done" line's or batch record's head, named by launch_fields()."""
    words = line.split()
    assert words[0] == verb
    return dict(zip(launch_fields(), map(int, words[1:1 + len(launch_fields())]), strict=True))


def check(fields: dict[str, int], status: int, exec_errno: int = 0, timed_out: int = 0) -> None:
    assert fields["status"] == status
    assert fields["exec_errno"] == exec_errno
    assert fields["timed_out"] == timed_out
    assert fields["pid"] > 1 and fields["wall_ns"] > 0 and fields["maxrss"] > 0
    assert fields["utime_us"] >= 0 and fields["stime_us"] >= 0 and fields["run_delay_ns"] >= -1
    assert abs(fields["started_ns"] - time.time_ns()) < 600 * 10**9


@pytest.mark.system
def test_the_launcher_prints_the_fields_in_the_listed_order(tmp_path: Path) -> None:
    """Real launcher runs, alone ("done") and in a batch ("rec"): each field named by the list
    holds what its name says (an exit status, exec's errno, a timeout), and a "done" line has
    exactly the listed fields."""
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x01\x02 not a program\n")
    junk.chmod(0o755)
    env = dict(os.environ)
    exit3 = RunRequest(argv=["sh", "-c", "exit 3"], env=env)
    noexec = RunRequest(argv=[str(junk)], env=env)
    slow = RunRequest(argv=["sleep", "5"], env=env, timeout=0.2)
    with LaunchServer() as server:
        server._start()
        tee = server._report = _Tee(server._report)
        outcomes = [server.run(exit3), server.run(noexec), server.run(slow)]
        dones = [ln for ln in tee.lines if not ln.startswith("killed ")]
        assert len(dones) == 3 and tee.lines[1::2] == ["killed 0\n"] * 3, tee.lines
        tee.lines.clear()
        outcomes += server.run_batch([exit3, noexec, slow], stop_on_failure=False)
        recs = [ln for ln in tee.lines if ln.startswith("rec ")]
    assert [o.status for o in outcomes] == ["failed", "failed", "timeout"] * 2
    assert all(len(ln.split()) == 1 + len(launch_fields()) for ln in dones)
    assert len(recs) == 3
    for ln in recs:  # the tail: what PERFLAB_REC_TAIL lists, no number more or less
        values, blobs = _tail_values(rec_tail(), [], [int(x) for x in
                                                      ln.split()[1 + len(launch_fields()):]])
        assert values["nc"] == 0
        assert [name for name, _ in blobs] == ["out", "err", "region_bad", "killed"]
    for lines, verb in ((dones, "done"), (recs, "rec")):
        check(by_name(lines[0], verb), status=3 << 8)
        check(by_name(lines[1], verb), status=127 << 8, exec_errno=errno.ENOEXEC)
        check(by_name(lines[2], verb), status=9, timed_out=1)  # SIGKILL
