"""Faults of the measured command: each asserts the exit code, one error line naming the problem
and the fix, no traceback, and the store's run counts before and after."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.helpers import Counts, Perflab, kill_quietly, pids_alive, python_script, script

pytestmark = pytest.mark.system

# -- the program cannot start --------------------------------------------------------------------


def test_missing_command(perflab: Perflab) -> None:
    out = perflab("stat", "-r", "2", "--", "/nonexistent/prog")
    out.fails(2, "command not found", "/nonexistent/prog", fix="check the path")
    assert perflab.counts() == Counts(0, 0, {})


def test_command_not_on_path(perflab: Perflab) -> None:
    out = perflab("stat", "-r", "2", "--", "no-such-prog-xyz")
    out.fails(2, "command not found", "no-such-prog-xyz", fix="PATH")
    assert perflab.counts() == Counts(0, 0, {})


def test_not_executable(perflab: Perflab, tmp_path: Path) -> None:
    prog = script(tmp_path / "prog.sh", "exit 0\n", mode=0o644)
    out = perflab("stat", "-r", "2", "--", str(prog))
    out.fails(2, "not executable", fix="chmod +x")
    assert perflab.counts() == Counts(0, 0, {})


def test_directory_as_command_is_not_told_to_chmod(perflab: Perflab, tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    out = perflab("stat", "-r", "2", "--", "./build")
    line = out.fails(2, "is a directory", fix="the program inside it")
    assert "chmod" not in line
    assert perflab.counts() == Counts(0, 0, {})


@pytest.mark.parametrize("args", [
    ("stat", "-r", "2", "--", ""),
    ("stat", "-r", "2", "--", "   "),
    ("compare", "-r", "2", "true", ""),
    ("compare", "-r", "2", "true", "  "),
])
def test_empty_command(perflab: Perflab, args: tuple[str, ...]) -> None:
    perflab(*args).fails(2, "empty command", fix="program")
    assert perflab.counts() == Counts(0, 0, {})


@pytest.mark.parametrize("args, where", [
    (("compare", "-r", "2", "true", "sh -c 'true"), "command"),
    (("compare", "-r", "2", "-W", "eh/cpp depth='3", "-W", "eh/cpp"), "--workload"),
    (("stat", "-r", "2", "-W", "eh/cpp 'depth=3"), "--workload"),
])
def test_unbalanced_quotes(perflab: Perflab, args: tuple[str, ...], where: str) -> None:
    perflab(*args).fails(2, where, "No closing quotation", fix="balance the quotes")
    assert perflab.counts() == Counts(0, 0, {})


# -- the program fails ---------------------------------------------------------------------------


def test_non_zero_exit(perflab: Perflab, tmp_path: Path) -> None:
    prog = script(tmp_path / "fail.sh", "echo 'disk on fire' >&2\nexit 3\n")
    out = perflab("stat", "-r", "3", "--", str(prog))
    out.fails(2, "exited with status 3", "disk on fire", fix="--ignore-failure")
    # The failed run is recorded (nothing lost) and the result says failed.
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


@pytest.mark.parametrize("sig", ["SEGV", "KILL"])
def test_killed_by_signal(perflab: Perflab, sig: str) -> None:
    out = perflab("stat", "-r", "3", "--", "sh", "-c", f"kill -{sig} $$")
    out.fails(2, f"killed by signal SIG{sig}", fix="--ignore-failure")
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


def test_escape_sequences_from_stderr_are_not_replayed(perflab: Perflab, tmp_path: Path) -> None:
    # A command's last stderr line goes into perflab's error line: its ESC, BEL and CR must not
    # recolour, retitle or overwrite the user's terminal.
    prog = script(tmp_path / "evil.sh",
                  "printf '\\033[2J\\033]0;pwned\\007boom\\rX\\n' >&2\nexit 1\n")
    line = perflab("stat", "-r", "2", "--", str(prog)).fails(2, "exited with status 1")
    assert "\x1b" not in line and "\x07" not in line and "\r" not in line
    assert "\\x1b[2J" in line and "boom" in line
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


def test_timeout_kills_a_hang(perflab: Perflab, tmp_path: Path) -> None:
    # Load-robust: perflab's own start-up can take 20 s on a busy machine, so the test does not
    # time perflab; it checks that the hour-long hang was killed, not waited for (perflab's
    # 120 s limit in the helper would fail the test first).
    marker = tmp_path / "hang.pid"
    prog = script(tmp_path / "hang.sh", f"echo $$ > {marker}\nexec sleep 3600\n")
    out = perflab("stat", "-r", "2", "--timeout", "0.5", "--", str(prog))
    out.fails(2, "0.5 s timeout", fix="raise --timeout")
    pid = int(marker.read_text())
    try:
        assert not pids_alive([pid]), "the hanging command outlived its timeout"
    finally:
        kill_quietly([pid])
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


def test_hang_without_timeout_is_stopped_by_ctrl_c(perflab: Perflab, tmp_path: Path) -> None:
    # No --timeout: the user's Ctrl-C ends it; the hanging command dies with it.
    marker = tmp_path / "hang.pid"
    prog = script(tmp_path / "hang.sh", f"echo $$ > {marker}\nexec sleep 300\n")
    p = perflab.popen("stat", "-r", "3", "-w", "0", "--", str(prog))
    for _ in range(300):
        if marker.exists() and marker.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(marker.read_text())
    os.killpg(p.pid, 2)  # SIGINT to perflab's process group, as a terminal's Ctrl-C does
    out, err = p.communicate(timeout=60)
    text = (out + err).decode(errors="replace")
    try:
        assert p.returncode == 130, text
        assert "Traceback" not in text
        assert not pids_alive([pid]), "the hanging command outlived perflab"
    finally:
        kill_quietly([pid])
    c = perflab.counts()
    assert (c.results, c.runs, c.statuses) == (1, 0, {"interrupted": 1})


def test_background_child_in_the_group_is_killed(perflab: Perflab, tmp_path: Path) -> None:
    pids = tmp_path / "bg.pids"
    prog = script(tmp_path / "bg.sh", f"sleep 300 &\necho $! >> {pids}\n")
    perflab("stat", "-r", "2", "--", str(prog)).succeeds()
    left = [int(x) for x in pids.read_text().split()]
    time.sleep(0.2)
    try:
        assert not pids_alive(left), "a background child outlived its run"
    finally:
        kill_quietly(left)
    assert perflab.counts() == Counts(1, 3, {"complete": 1})


ESCAPES = """import os, sys, time
pids = sys.argv[1]
def note(what):
    with open(pids, "a") as f:
        f.write(f"{os.getpid()} {what}\\n")
if os.fork() == 0:  # the child
    if os.fork() == 0:  # the grandchild: a process group of its own, in the command's session
        os.setpgid(0, 0)
        note("pgrp")
        os.execvp("sleep", ["sleep", "300"])
    os.setsid()  # the child: a session of its own
    note("session")
    os.execvp("sleep", ["sleep", "301"])
while not os.path.exists(pids) or len(open(pids).read().split("\\n")) < 3:
    time.sleep(0.01)
"""


def test_descendants_outside_the_group_are_killed(perflab: Perflab, tmp_path: Path) -> None:
    """A child that calls setsid() and a grandchild that calls setpgid(0, 0): neither outlives
    its run (perflab's launcher is their subreaper and kills them), and the note names each."""
    pids = tmp_path / "escaped.pids"
    prog = python_script(tmp_path / "escape.py", ESCAPES)
    out = perflab("stat", "-r", "2", "-w", "0", "--", str(prog), str(pids))
    found = [line.split() for line in pids.read_text().splitlines()] if pids.exists() else []
    left = [int(pid) for pid, _ in found]
    try:
        out.succeeds()
        assert len(found) == 4 and {w for _, w in found} == {"pgrp", "session"}, found
        assert not pids_alive(left), "a descendant outside the process group outlived its run"
        text = " ".join(out.stdout.split())
        first = dict((w, pid) for pid, w in found[:2])
        assert (f"pid {first['session']} sleep (in another session)" in text
                and f"pid {first['pgrp']} sleep (in another process group)" in text), text
        assert "perflab killed them" in text and "setsid or daemonized" not in text
    finally:
        kill_quietly(left)
    assert perflab.counts() == Counts(1, 2, {"complete": 1})


# -- what the program writes ---------------------------------------------------------------------


def test_huge_output_costs_no_memory(perflab: Perflab, tmp_path: Path) -> None:
    # 600 MB of stdout per run: perflab keeps a bounded tail, so its peak RSS stays far below.
    small = subprocess.Popen([sys.executable, "-m", "perflab", "stat", "-r", "1", "-w", "0",
                              "--", "true"], env=perflab.env, cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru_small = os.wait4(small.pid, 0)
    big = subprocess.Popen([sys.executable, "-m", "perflab", "stat", "-r", "1", "-w", "0",
                            "--", "sh", "-c",
                            "head -c 600000000 /dev/zero; echo; echo '{\"x_metric\": 1}'"],
                           env=perflab.env, cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    out, err = big.communicate(timeout=120)
    assert big.returncode == 0, err.decode(errors="replace")
    # ru_maxrss of the perflab process itself (its children, head and sh, are small).
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert ru.ru_maxrss < ru_small.ru_maxrss + 100_000, (ru.ru_maxrss, ru_small.ru_maxrss)
    # The tail still holds the workload's JSON line, read as a metric and stored with the run
    # (the command line that perflab echoes says "x_metric" too, so the store is what counts).
    con = sqlite3.connect(f"file:{perflab.db}?mode=ro", uri=True)
    stored = [json.loads(v) for (v,) in con.execute("SELECT \"values\" FROM runs ORDER BY id")]
    con.close()
    assert [v.get("x_metric") for v in stored] == [None, 1.0], stored  # `true`, then the big
    assert perflab.counts() == Counts(2, 2, {"complete": 2})


def test_non_utf8_output(perflab: Perflab, tmp_path: Path) -> None:
    prog = script(tmp_path / "bytes.sh",
                  "printf '\\377\\376 latin1 \\351t\\351\\n'\nprintf '\\377 bad \\n' >&2\nexit 4\n")
    line = perflab("stat", "-r", "2", "--", str(prog)).fails(2, "exited with status 4", "bad")
    assert "\ufffd" in line  # shown as replacement characters, not a crash
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


@pytest.mark.parametrize("last_line, problem", [
    ('{"ns_per_op": 12.5', "malformed JSON"),
    ('{"ns_per_op": ', "malformed JSON"),
    ('{"ns_per_op": NaN}', "ns_per_op = nan (not a finite number)"),
    ('{"ns_per_op": Infinity}', "ns_per_op = inf (not a finite number)"),
    ('{"ns_per_op": -Infinity}', "not a finite number"),
    ('{"ns_per_op": -200}', "ns_per_op = -200, a negative value"),
    ("[1, 2, 3]", None),  # not an object: not the protocol's line, ignored
    ("{garbage}", "malformed JSON"),
])
def test_bad_workload_json(perflab: Perflab, tmp_path: Path, last_line: str,
                           problem: str | None) -> None:
    prog = python_script(tmp_path / "wl.py", f"print('noise')\nprint({last_line!r})\n")
    out = perflab("stat", "-r", "2", "--", str(prog))
    if problem is None:
        out.succeeds()
        assert perflab.counts() == Counts(1, 3, {"complete": 1})
        return
    out.fails(2, problem, fix="--ignore-failure")
    # The failing run is stored (with its error), the result is failed: nothing silent.
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


@pytest.mark.parametrize("pad_mib", [1.5, 3])  # cut by perflab alone; trimmed by the server too
def test_workload_json_line_over_the_kept_tail_is_a_failed_run(perflab: Perflab, tmp_path: Path,
                                                                pad_mib: float) -> None:
    # Before: only the last 1 MiB of the line was kept, it did not start with '{', and the
    # metrics vanished with exit 0 and no word.
    prog = python_script(tmp_path / "wl.py", "import json\nprint('noise')\n"
                         f"print(json.dumps({{'pad': 'x' * int({pad_mib} * 2**20), "
                         "'ns_per_op': 12.5}))\n")
    out = perflab("stat", "-r", "2", "--", str(prog))
    out.fails(2, "last line of stdout is longer than the 1 MiB", fix="--ignore-failure")
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


def test_nan_metric_is_not_reported_as_unknown(perflab: Perflab, tmp_path: Path) -> None:
    # Before: NaN was dropped silently, then --metric said "unknown metric".
    prog = python_script(tmp_path / "wl.py", "print('{\"ns_per_op\": NaN}')\n")
    line = perflab("stat", "-r", "2", "--metric", "ns_per_op", "--", str(prog)).fails(
        2, "not a finite number")
    assert "unknown metric" not in line
    assert perflab.counts() == Counts(1, 1, {"failed": 1})


def test_negative_values_never_reach_a_verdict(perflab: Perflab, tmp_path: Path) -> None:
    a = python_script(tmp_path / "a.py", "print('{\"ns_per_op\": -100}')\n")
    b = python_script(tmp_path / "b.py", "print('{\"ns_per_op\": 100}')\n")
    out = perflab("compare", "-r", "6", "--metric", "ns_per_op", str(a), str(b))
    line = out.fails(2, "negative value")
    assert "faster" not in out.stdout and "faster" not in line
    c = perflab.counts()
    assert (c.results, c.statuses) == (1, {"failed": 1})
