"""CI gates and the timed-region protocol: a gate never passes on a configuration that has no
successful run; a region opened and never closed (or a garbled protocol line) fails the run
instead of reporting a zero region time."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults.helpers import Perflab, python_script, script

pytestmark = pytest.mark.system

# A workload speaking the timed-region protocol (include/perflab_region.h) by hand.
REGION = """
import os, sys, time
ctl = open(os.environ["PERFLAB_CTL_FIFO"], "w")
ack = open(os.environ["PERFLAB_ACK_FIFO"], "r")

def send(cmd, wait=True):
    ctl.write(cmd + "\\n"); ctl.flush()
    if wait:
        ack.readline()
"""


def test_gate_fails_when_the_candidate_never_succeeds(perflab: Perflab, tmp_path: Path) -> None:
    # Before: exit 0 with the candidate column all "-".
    segv = script(tmp_path / "segv", "kill -SEGV $$\n")
    out = perflab("compare", "-r", "3", "--ignore-failure", "--fail-on-regression",
                  "/bin/true", str(segv))
    line = out.fails(1, "no successful run", "killed by signal SIGSEGV",
                     fix="fix the command")
    assert str(segv) in line
    c = perflab.counts()
    # Every run is kept (3 + warm-up each side), the result is failed, not complete.
    assert (c.results, c.runs, c.statuses) == (1, 8, {"failed": 1})


def test_gate_fails_when_the_baseline_never_succeeds(perflab: Perflab) -> None:
    out = perflab("compare", "-r", "3", "--ignore-failure", "--fail-on-regression",
                  "false", "/bin/true")
    out.fails(1, "false: no successful run", "exited with status 1")
    assert perflab.counts().statuses == {"failed": 1}


def test_compare_without_gate_also_fails_with_no_successful_runs(perflab: Perflab) -> None:
    out = perflab("compare", "-r", "2", "--ignore-failure", "/bin/true", "false")
    out.fails(1, "no successful run")
    assert perflab.counts().statuses == {"failed": 1}


def test_stat_with_every_run_failed_fails(perflab: Perflab) -> None:
    out = perflab("stat", "-r", "3", "--ignore-failure", "--", "false")
    out.fails(1, "no successful run", "exited with status 1")
    assert perflab.counts().statuses == {"failed": 1}


def test_gate_with_some_failed_runs_still_decides(perflab: Perflab, tmp_path: Path) -> None:
    # One crash among many runs is left out (and said); the gate decides on the rest.
    flaky = script(tmp_path / "flaky", f"test -e {tmp_path}/x || {{ touch {tmp_path}/x; "
                   "exit 3; }\n")
    out = perflab("compare", "-r", "6", "--ignore-failure", "--fail-on-regression",
                  "/bin/true", str(flaky))
    out.no_traceback()
    assert out.code in (0, 1) and "run(s) failed and were left out" in " ".join(
        out.stdout.split())
    assert perflab.counts().runs == 14


def test_region_opened_and_never_closed(perflab: Perflab, tmp_path: Path) -> None:
    # Before: reported as "timed region only" with region_time 0.
    prog = python_script(tmp_path / "open.py", REGION + "send('enable')\ntime.sleep(0.01)\n")
    out = perflab("stat", "-r", "2", "--", str(prog))
    out.fails(2, "began a timed region", "never ended it", "perflab_region_end")
    c = perflab.counts()
    assert (c.results, c.runs, c.statuses) == (1, 1, {"failed": 1})


def test_region_announced_and_never_acknowledged(perflab: Perflab, tmp_path: Path) -> None:
    # The program announces the region without waiting for perflab's acknowledgement, and
    # exits: the region is still open, the run fails the same way (perflab does not hang).
    prog = python_script(tmp_path / "noack.py", REGION + "send('enable', wait=False)\n")
    out = perflab("stat", "-r", "2", "--", str(prog), timeout=60)
    out.fails(2, "never ended it")
    assert perflab.counts().statuses == {"failed": 1}


def test_region_garbled_command(perflab: Perflab, tmp_path: Path) -> None:
    prog = python_script(tmp_path / "garbled.py",
                         REGION + "send('enable')\nsend('\\x1b[31mstart')\nsend('disable')\n")
    line = perflab("stat", "-r", "2", "--", str(prog)).fails(2, "timed-region protocol",
                                                                 "unknown region command")
    assert "\x1b" not in line
    assert perflab.counts().statuses == {"failed": 1}


def test_region_closed_is_measured(perflab: Perflab, tmp_path: Path) -> None:
    # The control: a well-formed region gives a region_time.
    prog = python_script(tmp_path / "ok.py",
                         REGION + "send('enable')\ntime.sleep(0.02)\nsend('disable')\n")
    out = perflab("stat", "-r", "2", "--", str(prog))
    out.succeeds()
    assert "region_time" in out.stdout
    assert perflab.counts().statuses == {"complete": 1}
