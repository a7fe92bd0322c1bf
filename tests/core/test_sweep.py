"""Every descendant of a measured command ends with its run, whatever its process group or
session: the launcher is the commands' subreaper and, after each run, kills and reaps what they
left (sweep in perflab-launch.c), and says what it killed.  Real processes that call setsid()
and setpgid(0, 0), on both launch paths, under a timeout, and with perflab itself killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflab.collectors.process import LaunchServer, RunRequest, Stray

pytestmark = pytest.mark.system

# A child that makes a session of its own and a grandchild (forked before) that makes a process
# group of its own, each writing "PID WHERE" to argv[1]; a background child that stays in the
# command's group; once all three have become `sleep` (exec'd: the launcher names what it kills
# by /proc's comm), the command sleeps argv[2] seconds (0: it ends at once).
ESCAPE = r"""
import os, sys, time
pids, linger = sys.argv[1], float(sys.argv[2])
def note(what):
    with open(pids, "a") as f:
        f.write(f"{os.getpid()} {what}\n")
if os.fork() == 0:
    if os.fork() == 0:
        os.setpgid(0, 0)
        note("pgrp")
        os.execvp("sleep", ["sleep", "300"])
    os.setsid()
    note("session")
    os.execvp("sleep", ["sleep", "301"])
if os.fork() == 0:
    note("group")
    os.execvp("sleep", ["sleep", "302"])
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""
while not os.path.exists(pids) or len(open(pids).read().splitlines()) < 3:
    time.sleep(0.01)
noted = [int(line.split()[0]) for line in open(pids).read().splitlines()]
while any(comm(pid) != "sleep" for pid in noted):
    time.sleep(0.01)
time.sleep(linger)
"""


def alive(pid: int) -> bool:
    """Running (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def escapees(path: Path) -> dict[str, int]:
    lines = path.read_text().split("\n") if path.exists() else []
    return {w: int(p) for p, w in (ln.split() for ln in lines if ln)}


def cleanup(found: dict[str, int]) -> None:
    for pid in found.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def req(tmp_path: Path, name: str, linger: float = 0, timeout: float | None = None
        ) -> tuple[RunRequest, Path]:
    pids = tmp_path / f"{name}.pids"
    return RunRequest(argv=[sys.executable, "-c", ESCAPE, str(pids), str(linger)],
                      env=dict(os.environ), timeout=timeout, region=False), pids


@pytest.mark.parametrize("path", ["alone", "batch"])
def test_what_a_run_leaves_is_killed_and_named(tmp_path: Path, path: str) -> None:
    r, pids = req(tmp_path, path)
    with LaunchServer() as server:
        outcome = server.run(r) if path == "alone" else server.run_batch([r])[0]
        found = escapees(pids)
        try:
            assert outcome.status == "ok", outcome.error
            assert set(found) == {"group", "pgrp", "session"}, found
            assert not [w for w, pid in found.items() if alive(pid)]
            assert sorted(outcome.killed, key=lambda s: s.pid) == sorted(
                (Stray(pid, w, "sleep") for w, pid in found.items()), key=lambda s: s.pid)
            # the next run of the same server leaves nothing and says so
            quiet = server.run(RunRequest(argv=["true"], env=dict(os.environ), region=False))
            assert quiet.status == "ok" and quiet.killed == []
        finally:
            cleanup(found)


def test_a_timed_out_run_leaves_nothing(tmp_path: Path) -> None:
    r, pids = req(tmp_path, "slow", linger=300, timeout=1.5)
    with LaunchServer() as server:
        outcome = server.run_batch([r])[0]
    found = escapees(pids)
    try:
        assert outcome.status == "timeout"
        assert set(found) == {"group", "pgrp", "session"}, found
        assert not [w for w, pid in found.items() if alive(pid)]
        # the group was killed by the timeout; what lived elsewhere is named
        assert {s.where for s in outcome.killed} >= {"pgrp", "session"}
    finally:
        cleanup(found)


def test_perflab_killed_mid_run_leaves_nothing(tmp_path: Path) -> None:
    """perflab dies by SIGKILL while the command runs: the launcher (told by
    PR_SET_PDEATHSIG) kills the command's group and sweeps what lived outside it."""
    r, pids = req(tmp_path, "orphaned", linger=300)
    code = ("import sys\nfrom perflab.collectors.process import LaunchServer, RunRequest\n"
            f"LaunchServer().run_batch([RunRequest(argv={r.argv!r}, env=dict(__import__('os')"
            ".environ), region=False)])\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    found: dict[str, int] = {}
    try:
        for _ in range(600):
            found = escapees(pids)
            if len(found) == 3:
                break
            time.sleep(0.05)
        assert set(found) == {"group", "pgrp", "session"}, found
        proc.kill()
        proc.wait()
        for _ in range(100):
            if not any(alive(pid) for pid in found.values()):
                break
            time.sleep(0.05)
        assert not [w for w, pid in found.items() if alive(pid)]
    finally:
        proc.kill()
        cleanup(found)
