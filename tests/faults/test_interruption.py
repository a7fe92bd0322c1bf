"""Interruptions: SIGINT (Ctrl-C) and SIGKILL of perflab during stat, compare, run and bisect,
then resume.  Real processes killed with real signals; each test checks the exit code, the
store's counts, that no measured command (or launcher) is left running, and what `results list`
says afterwards.

The measured command is a shell script that appends its pid to a file and then sleeps, so the
test knows when a run is in flight and which process must be gone afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import two_config_suite
from faults.helpers import Perflab, counts, kill_quietly, pids_alive, script
from git_helpers import commit, new_repo

pytestmark = pytest.mark.system

SLEEP_RUN = 0.15  # one measured run of the quick command


def sleeper(tmp: Path, seconds: float, name: str = "cmd.sh") -> tuple[Path, Path]:
    pids = tmp / f"{name}.pids"
    prog = script(tmp / name, f'echo $$ >> "{pids}"\nexec sleep {seconds}\n')
    return prog, pids


def wait_for(cond, timeout: float = 30.0, what: str = "") -> None:  # noqa: ANN001
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def read_pids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(x) for x in path.read_text().split()]


def launcher_pids(cmd_pids: list[int]) -> list[int]:
    """The parents (perflab-launch) of the measured commands, while they live."""
    out = []
    for pid in cmd_pids:
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if "perflab-launch" in Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace"):
            out.append(ppid)
    return out


def stop(perflab: Perflab, proc: subprocess.Popen[bytes], sig: int,
         timeout: float = 30) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def assert_nothing_left(pids: list[int], launchers: list[int]) -> None:
    try:
        wait_for(lambda: not pids_alive(pids + launchers), timeout=5,
                 what="the measured command and its launcher to end")
    finally:
        kill_quietly(pids + launchers)


# -- SIGINT ----------------------------------------------------------------------------------------

def test_sigint_during_stat_keeps_runs_and_says_interrupted(perflab: Perflab,
                                                            tmp_path: Path) -> None:
    prog, pids = sleeper(tmp_path, SLEEP_RUN)
    p = perflab.popen("stat", "-r", "200", "-w", "0", "--no-counters", "--", str(prog))
    wait_for(lambda: perflab.counts().runs >= 3, what="3 stored runs")
    code, out, err = stop(perflab, p, signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in out + err
    c = perflab.counts()
    assert c.statuses == {"interrupted": 1}
    assert 3 <= c.runs < 200
    assert "interrupted" in out
    assert_nothing_left(read_pids(pids), [])


def test_sigint_stops_a_background_job_of_a_shell_script(perflab: Perflab,
                                                         tmp_path: Path) -> None:
    """A shell script's background job starts with SIGINT ignored (POSIX, without job
    control), and Python keeps it so: `kill -INT` did nothing and the fixed count ran to its
    end.  perflab takes SIGINT back: the run stops, interrupted, its runs kept."""
    prog, pids = sleeper(tmp_path, SLEEP_RUN)
    sh = subprocess.Popen(
        ["sh", "-c", '"$@" & echo $!; wait $!', "sh", sys.executable, "-m", "perflab", "stat",
         "-r", "200", "-w", "0", "--no-counters", "--", str(prog)],
        env=perflab.env, cwd=perflab.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    assert sh.stdout is not None
    pid = int(sh.stdout.readline())
    wait_for(lambda: perflab.counts().runs >= 3, what="3 stored runs")
    os.kill(pid, signal.SIGINT)
    out, err = sh.communicate(timeout=60)
    assert "Traceback" not in out.decode() + err.decode()
    c = perflab.counts()
    assert c.statuses == {"interrupted": 1}, err.decode()
    assert 3 <= c.runs < 200
    assert_nothing_left(read_pids(pids), [])


def stopped_compare(perflab: Perflab, tmp_path: Path,
                    sig: int) -> tuple[tuple[int, str, str], list[Path], list[str]]:
    """A compare of two sleepers stopped with ``sig`` once 4 runs are stored: (exit code, stdout,
    stderr), the two pid files and the two commands."""
    (a, pa), (b, pb) = (sleeper(tmp_path, SLEEP_RUN, f"{x}.sh") for x in "ab")
    p = perflab.popen("compare", "-r", "100", "-w", "0", "--no-counters", str(a), str(b))
    wait_for(lambda: perflab.counts().runs >= 4, what="4 stored runs")
    return stop(perflab, p, sig), [pa, pb], [str(a), str(b)]


def test_sigint_during_compare_keeps_both_sides(perflab: Perflab, tmp_path: Path) -> None:
    (code, out, err), (pa, pb), _ = stopped_compare(perflab, tmp_path, signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in out + err
    c = perflab.counts()
    assert c.statuses == {"interrupted": 1} and c.runs >= 4
    assert_nothing_left(read_pids(pa) + read_pids(pb), [])


def test_sigint_while_a_run_is_in_flight_kills_the_command(perflab: Perflab,
                                                           tmp_path: Path) -> None:
    prog, pids = sleeper(tmp_path, 60)
    p = perflab.popen("stat", "-r", "3", "-w", "0", "--no-counters", "--", str(prog))
    wait_for(lambda: read_pids(pids), what="the command to start")
    launchers = launcher_pids(read_pids(pids))
    code, _, err = stop(perflab, p, signal.SIGINT)
    assert code == 130, err
    assert perflab.counts().statuses == {"interrupted": 1}
    assert_nothing_left(read_pids(pids), launchers)


# -- SIGKILL ---------------------------------------------------------------------------------------

def test_sigkill_during_stat_leaves_no_command_and_shows_interrupted(perflab: Perflab,
                                                                     tmp_path: Path) -> None:
    prog, pids = sleeper(tmp_path, 60)
    quick, qpids = sleeper(tmp_path, 0.01, "quick.sh")
    assert perflab("stat", "-r", "2", "-w", "0", "--no-counters", "--", str(quick)).code == 0
    p = perflab.popen("stat", "-r", "3", "-w", "0", "--no-counters", "--", str(prog))
    wait_for(lambda: read_pids(pids), what="the command to start")
    launchers = launcher_pids(read_pids(pids))
    assert launchers, "the command runs under perflab-launch"
    code, _, _ = stop(perflab, p, signal.SIGKILL)
    assert code == -signal.SIGKILL
    # The kernel tells the launcher (PR_SET_PDEATHSIG); it kills the command's process group.
    assert_nothing_left(read_pids(pids), launchers)
    c = perflab.counts()
    assert c.runs == 2 and c.statuses == {"complete": 1, "running": 1}  # on disk: as left
    listed = perflab("results", "list")
    listed.succeeds()
    assert "interrupted" in listed.stdout and "running" not in listed.stdout
    shown = perflab("results", "show", "2")
    shown.succeeds()
    assert "interrupted" in shown.stdout and "ended without finishing" in shown.stdout


def test_sigkill_mid_stat_shows_the_runs_marked_interrupted(perflab: Perflab,
                                                            tmp_path: Path) -> None:
    """perflab stat SIGKILLed once 20 runs are stored: `results show` prints the stored runs'
    table (not "N runs" above an empty one), and its JSON export holds their metrics, marked
    interrupted; `results list` says interrupted too."""
    quick, _ = sleeper(tmp_path, 0.01, "quick.sh")
    p = perflab.popen("stat", "-r", "100000", "-w", "0", "--no-counters", "--", str(quick))
    wait_for(lambda: perflab.counts().runs >= 20, what="20 stored runs")
    code, _, _ = stop(perflab, p, signal.SIGKILL)
    assert code == -signal.SIGKILL
    runs = perflab.counts().runs
    doc = tmp_path / "r.json"
    shown = perflab("results", "show", "1", "--export-json", str(doc))
    shown.succeeds()
    assert "(interrupted: partial)" in shown.stdout and f"{runs} runs" in shown.stdout
    assert "wall_time" in shown.stdout and "user_time" in shown.stdout
    exported = json.loads(doc.read_text())
    assert exported["status"] == "interrupted"
    (cfg,) = exported["configurations"]
    assert cfg["runs"] == runs
    assert cfg["metrics"]["wall_time"]["n"] == runs
    listed = perflab("results", "list")
    assert "interrupted" in listed.stdout


def test_sigkill_kills_the_commands_whole_process_group(perflab: Perflab,
                                                         tmp_path: Path) -> None:
    """A command that started helpers of its own: they go too."""
    pids = tmp_path / "pids"
    prog = script(tmp_path / "tree.sh", f'sleep 60 &\necho $! >> "{pids}"\necho $$ >> "{pids}"\n'
                  "wait\n")
    p = perflab.popen("stat", "-r", "3", "-w", "0", "--no-counters", "--", str(prog))
    wait_for(lambda: len(read_pids(pids)) >= 2, what="the command and its helper")
    stop(perflab, p, signal.SIGKILL)
    assert_nothing_left(read_pids(pids), [])
    assert perflab.counts().runs == 0  # the first run never finished: nothing half-written


def test_sigkill_during_compare_then_compare_again(perflab: Perflab, tmp_path: Path) -> None:
    _, (pa, pb), (a, b) = stopped_compare(perflab, tmp_path, signal.SIGKILL)
    kept = perflab.counts().runs
    assert_nothing_left(read_pids(pa) + read_pids(pb), [])
    again = perflab("compare", "-r", "6", "-w", "0", "--no-counters", a, b)
    again.succeeds()
    c = perflab.counts()
    assert c.runs == kept + 12  # nothing of the killed result was lost or rewritten
    assert c.statuses == {"running": 1, "complete": 1}
    assert "interrupted" in perflab("results", "list").stdout


# -- suites: kill, then --resume ---------------------------------------------------------------



def suite(tmp_path: Path) -> tuple[Path, Path]:
    pids = tmp_path / "suite.pids"
    prog = script(tmp_path / "s.sh", f'echo $$ >> "{pids}"\nexec sleep {SLEEP_RUN}\n')
    f = tmp_path / "resume.toml"
    f.write_text(two_config_suite("resume-me", 6, [1, 2, 3], [str(prog), "a{n}"],
                                  [str(prog), "b{n}"]))
    return f, pids


def configurations(db: Path) -> int:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT count(*) FROM configurations").fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_suite_interrupted_mid_cell_then_resumed(perflab: Perflab, tmp_path: Path,
                                                 sig: int) -> None:
    f, pids = suite(tmp_path)
    p = perflab.popen("run", str(f), "--no-report", "--no-progress")
    # 12 runs per cell: stop in the middle of the second cell.
    wait_for(lambda: perflab.counts().runs >= 17, what="17 stored runs")
    code, out, err = stop(perflab, p, sig)
    before = perflab.counts()
    assert before.results == 1
    if sig == signal.SIGINT:
        assert code == 130 and "Traceback" not in out + err
        assert "--resume 1" in err
        assert before.statuses == {"interrupted": 1}
    else:
        assert "interrupted" in perflab("results", "list").stdout
    partial = before.runs - 12
    assert 0 < partial < 12
    assert_nothing_left(read_pids(pids), [])
    res = perflab("run", str(f), "--resume", "1", "--no-report", "--no-progress")
    res.succeeds()
    # The partial cell is superseded, not silently redone: the resume says so, with the count.
    assert f"the {partial} runs of unfinished cell" in res.stderr
    assert "superseded" in res.stderr
    after = perflab.counts()
    assert after.statuses == {"complete": 1}
    assert after.runs == before.runs + 24  # 2 cells left after the interrupted one: 2 x 12
    assert configurations(perflab.db) == 8  # 6 reported + the 2 superseded ones kept
    shown = perflab("results", "show", "1")
    shown.succeeds()
    assert "superseded" in shown.stdout  # the note stays with the result


# -- bisect ----------------------------------------------------------------------------------------

PROG = """#include <unistd.h>
int main(void) { usleep(%d); return 0; }
"""


def bisect_repo(tmp: Path) -> tuple[Path, list[str]]:
    repo = new_repo(tmp / "repo")
    (repo / ".gitignore").write_text("prog\n")
    shas = [commit(repo, f"step {i}", {"prog.c": PROG % (20000 if i < 2 else 60000),
                                       "notes.txt": f"commit {i}\n"})  # every commit changes
            for i in range(4)]
    return repo, shas


def in_bisect(repo: Path) -> bool:
    return subprocess.run(["git", "-C", str(repo), "bisect", "log"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("git") is None,
                    reason="needs a C compiler and git")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_bisect_interrupted_then_run_again(perflab: Perflab, tmp_path: Path, sig: int) -> None:
    repo, shas = bisect_repo(tmp_path)
    args = ("bisect", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1],
            "--build", "cc -O1 -o prog prog.c", "--runs", "6", "--", "./prog")
    p = perflab.popen(*args)
    wait_for(lambda: perflab.counts().runs >= 3, what="the first runs of the bisect")
    code, out, err = stop(perflab, p, sig)
    c = perflab.counts()
    assert c.runs >= 3 and c.results == 1
    if sig == signal.SIGINT:
        assert code == 130, err
        assert "Traceback" not in out + err
        assert "interrupted" in err
        assert c.statuses == {"interrupted": 1}
        assert not in_bisect(repo), "Ctrl-C leaves git's bisect state behind"
    else:
        assert "interrupted" in perflab("results", "list").stdout
        assert in_bisect(repo)  # SIGKILL: nothing can clean up; the next run says what to do
        again = perflab(*args)
        again.fails(2, "bisect is already in progress", fix="git bisect reset")
        subprocess.run(["git", "-C", str(repo), "bisect", "reset"], capture_output=True,
                       check=True)
    done = perflab(*args)
    done.succeeds()
    assert f"first bad commit: {shas[2]}" in done.stdout
    assert counts(perflab.db).results == 2


# -- early failures --------------------------------------------------------------------------------

def test_command_vanishing_mid_measurement_marks_the_result_failed(perflab: Perflab,
                                                                  tmp_path: Path) -> None:
    """Any early end (here: the command deleted after its first run) records the result as
    failed with the reason; it never stays 'running'."""
    prog = script(tmp_path / "once.sh", f'rm -f "{tmp_path / "once.sh"}"\n')
    out = perflab("stat", "-r", "5", "-w", "0", "--no-counters", "--", str(prog))
    out.fails(2, "command not found", str(prog))
    c = perflab.counts()
    assert (c.runs, c.statuses) == (1, {"failed": 1})
    shown = perflab("results", "show", "1")
    assert "stopped by an error: command not found" in shown.stdout


def test_unknown_metric_after_the_first_round_marks_the_result_failed(perflab: Perflab) -> None:
    out = perflab("stat", "-r", "3", "-w", "0", "--no-counters", "-m", "no_such_metric", "--",
                  "/bin/true")
    out.fails(2, "no_such_metric")
    assert "running" not in perflab.counts().statuses
