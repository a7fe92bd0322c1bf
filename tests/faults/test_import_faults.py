"""Import faults: malformed, huge, inconsistent or interrupted hyperfine / pyperf / perf stat
files.  An import is one transaction per file: all of a file or nothing of it."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.helpers import Counts, Perflab

pytestmark = pytest.mark.system

EMPTY = Counts(0, 0, {})


def hyperfine(path: Path, times: list[float], codes: list[int] | None = None,
              command: str = "sleep 0") -> Path:
    res: dict = {"command": command, "times": times}
    if codes is not None:
        res["exit_codes"] = codes
    path.write_text(json.dumps({"results": [res]}))
    return path


def test_invalid_json(perflab: Perflab, tmp_path: Path) -> None:
    f = tmp_path / "h.json"
    f.write_text('{"results": [ {"command": "x", "times": [0.1, 0.2')
    perflab("import", "-f", "hyperfine", str(f)).fails(2, "not a hyperfine result file",
                                                        "invalid JSON", fix="--format")
    assert perflab.counts().results == 0


def test_binary_garbage(perflab: Perflab, tmp_path: Path) -> None:
    f = tmp_path / "h.json"
    f.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(4096)))
    perflab("import", "-f", "pyperf", str(f)).fails(2, "not a pyperf result file")
    assert perflab.counts().results == 0


def test_deeply_nested_json(perflab: Perflab, tmp_path: Path) -> None:
    f = tmp_path / "h.json"
    f.write_text("[" * 200_000 + "]" * 200_000)
    perflab("import", "-f", "hyperfine", str(f)).fails(2, "nested too deeply")
    assert perflab.counts() == EMPTY


def test_perf_stat_line_nested_a_million_deep(perflab: Perflab, tmp_path: Path) -> None:
    # Before: a RecursionError traceback (perf stat's lines were parsed one by one, outside
    # the check the other formats had).
    f = tmp_path / "p.json"
    f.write_text('{"counter-value": "5", "unit": "", "event": "cycles"}\n'
                 + '{"a": ' + "[" * 1_000_000 + "]" * 1_000_000 + "}\n")
    for fmt in (["-f", "perf-stat"], []):  # told or detected
        perflab("import", *fmt, str(f)).fails(2, "is not a perf stat -j result file",
                                              "nested too deeply", fix="--format")
    assert perflab.counts() == EMPTY


def test_wrong_format_for_the_file(perflab: Perflab, tmp_path: Path) -> None:
    f = hyperfine(tmp_path / "h.json", [0.1, 0.2, 0.3], [0, 0, 0])
    perflab("import", "-f", "pyperf", str(f)).fails(2, "no 'benchmarks' list", fix="--format")
    assert perflab.counts() == EMPTY


@pytest.mark.parametrize("value, named", [("NaN", "time 2 is NaN"),
                                          ("Infinity", "time 2 is Infinity"),
                                          ('"0.3"', 'time 2 is a string ("0.3")'),
                                          ("null", "time 2 is null")])
def test_nan_and_strings_in_times(perflab: Perflab, tmp_path: Path, value: str,
                                  named: str) -> None:
    # Before: "has no per-run 'times' (hyperfine older than 1.8...)" for any of them.
    f = tmp_path / "h.json"
    f.write_text('{"results": [{"command": "x", "times": [0.1, ' + value + ', 0.3]}]}')
    line = perflab("import", "-f", "hyperfine", str(f)).fails(
        2, f"result 1's {named}, not a number of seconds")
    assert "older than 1.8" not in line
    f.write_text('{"results": [{"command": "x", "mean": 0.1}]}')  # really no times
    perflab("import", "-f", "hyperfine", str(f)).fails(2, "has no per-run 'times'",
                                                       "hyperfine older than 1.8")
    assert perflab.counts().results == 0


@pytest.mark.parametrize("fmt, text, words", [
    # Before: a negative time was stored, and a comparison called it "-200% faster".
    ("hyperfine", '{"results": [{"command": "x", "times": [-0.1, 0.2]}]}',
     ["result 1 has a negative time (-0.1 s)"]),
    ("pyperf", '{"version": "1.0", "benchmarks": [{"metadata": {"name": "b", "unit": "second"},'
     ' "runs": [{"values": [-1e-6, 1e-6]}]}]}', ["negative value -1e-06 in 'b'"]),
    ("perf-stat", '{"counter-value" : "nan", "unit" : "", "event" : "cycles"}\n',
     ["event cycles has the counter value 'nan'"]),
    ("perf-stat", '{"counter-value" : "-5.0", "unit" : "", "event" : "cycles"}\n',
     ["counter value '-5.0'"]),
])
def test_negative_or_not_finite_values_are_refused(perflab: Perflab, tmp_path: Path, fmt: str,
                                                   text: str, words: list[str]) -> None:
    f = tmp_path / "in.json"
    f.write_text(text)
    perflab("import", "-f", fmt, str(f)).fails(2, *words, fix="--format")
    assert perflab.counts() == EMPTY


def test_unnamed_command_and_odd_exit_codes(perflab: Perflab, tmp_path: Path) -> None:
    # Before: a null command was stored as the configuration "None", and an exit code "a" as
    # a failed run with exit code "a".
    f = tmp_path / "h.json"
    f.write_text('{"results": [{"command": null, "times": [0.1, 0.2, 0.3], '
                 '"exit_codes": ["a", null, 1]}]}')
    perflab("import", "-f", "hyperfine", str(f)).succeeds()
    assert perflab.counts() == Counts(1, 3, {"complete": 1})
    import sqlite3

    con = sqlite3.connect(perflab.db)
    try:
        assert con.execute("SELECT name FROM configurations").fetchall() == [("command 1",)]
        assert con.execute("SELECT status, exit_code FROM runs ORDER BY id").fetchall() == [
            ("ok", None), ("ok", None), ("failed", 1)]
    finally:
        con.close()


def test_empty_file(perflab: Perflab, tmp_path: Path) -> None:
    f = tmp_path / "h.json"
    f.touch()
    perflab("import", "-f", "hyperfine", str(f)).fails(2, "empty file")
    assert perflab.counts() == EMPTY


def test_file_over_the_size_limit(perflab: Perflab, tmp_path: Path) -> None:
    f = hyperfine(tmp_path / "h.json", [0.001] * 200_000)  # about 1.2 MiB
    out = perflab("import", "-f", "hyperfine", str(f), env={"PERFLAB_IMPORT_MAX_MB": "1"})
    out.fails(2, "MiB", "up to 1 MiB", fix="split the file")
    assert perflab.counts().results == 0


def test_exit_codes_shorter_than_times_are_said_and_no_sample_dropped(perflab: Perflab,
                                                                      tmp_path: Path) -> None:
    f = hyperfine(tmp_path / "h.json", [0.1, 0.2, 0.3, 0.4, 0.5], [0, 0])
    out = perflab("import", "-f", "hyperfine", str(f))
    out.succeeds()
    assert "5 times but 2 exit codes" in out.stdout
    assert "the last 3 runs are kept with an unknown exit code" in out.stdout
    assert perflab.counts().runs == 5


def test_exit_codes_longer_than_times(perflab: Perflab, tmp_path: Path) -> None:
    f = hyperfine(tmp_path / "h.json", [0.1, 0.2], [0, 0, 1, 1])
    out = perflab("import", "-f", "hyperfine", str(f))
    out.succeeds()
    assert "2 exit codes without a time are ignored" in out.stdout
    assert perflab.counts().runs == 2


def test_one_bad_file_among_several_stores_nothing(perflab: Perflab, tmp_path: Path) -> None:
    good = hyperfine(tmp_path / "good.json", [0.1, 0.2, 0.3], [0, 0, 0])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    perflab("import", "-f", "hyperfine", str(good), str(bad)).fails(2, "bad.json")
    assert perflab.counts().results == 0


def test_large_import_is_one_transaction(perflab: Perflab, tmp_path: Path) -> None:
    """200,000 samples: stored whole, in seconds (was one transaction per run)."""
    f = hyperfine(tmp_path / "h.json", [random.random() * 1e-3 for _ in range(200_000)],
                  [0] * 200_000)
    out = perflab("import", "-f", "hyperfine", str(f), timeout=300)
    out.succeeds()
    c = perflab.counts()
    assert (c.results, c.runs, c.statuses) == (1, 200_000, {"complete": 1})


# A small parent forks `perflab import`: Linux carries a forked process's peak RSS across exec,
# so the test's own (large) process must not be the one that forks it.
_RSS_OF = ("import os, sys\npid = os.fork()\nif pid == 0:\n"
           "    os.execv(sys.executable, [sys.executable, '-m', 'perflab', *sys.argv[1:]])\n"
           "_, status, ru = os.wait4(pid, 0)\nprint(os.waitstatus_to_exitcode(status), "
           "ru.ru_maxrss)\n")


def _import_rss(perflab: Perflab, f: Path) -> int:
    """Peak RSS (KiB) of `perflab import F`."""
    p = subprocess.run([sys.executable, "-c", _RSS_OF, "import", str(f)], env=perflab.env,
                       cwd=perflab.cwd, capture_output=True, text=True, timeout=600)
    code, rss = p.stdout.split()[-2:]  # after what perflab printed
    assert code == "0", p.stderr
    return int(rss)


def test_large_imports_stream_in_bounded_memory(perflab: Perflab, tmp_path: Path) -> None:
    """300,000 runs of hyperfine's pretty JSON (about 10 MB) and as many of pyperf's and
    perflab's own: each costs less than 60 MB more than a 1-run file (it cost about 150 MB,
    500 bytes a run: the whole file parsed, a Run object each), and no -wal is left."""
    n = 300_000
    rnd = random.Random(3)
    times = [rnd.random() * 1e-3 for _ in range(n)]
    files = {"hyperfine": ({"results": [{"command": "c", "times": times,
                                         "exit_codes": [0] * n}]}, 2),
             "pyperf": ({"benchmarks": [{"metadata": {"name": "b"}, "runs": [
                 {"values": times[i:i + 3]} for i in range(0, n, 3)]}],
                 "metadata": {"unit": "second"}, "version": "1.0"}, None),
             "perflab": ({"schema": "perflab-result/1", "configurations": [
                 {"name": "a", "metrics": {"wall_time": {"unit": "s", "samples": times}}}]},
                 None)}
    small = hyperfine(tmp_path / "one.json", [0.1], [0])
    base = _import_rss(perflab, small)
    # A reader holds the store open (a report, a worker): SQLite then keeps its -wal at the
    # size of the largest write, unless perflab truncates it after the import.
    reader = sqlite3.connect(perflab.db)
    reader.execute("SELECT count(*) FROM results").fetchall()  # now it uses the -wal
    try:
        for fmt, (doc, indent) in files.items():
            f = tmp_path / f"{fmt}.json"
            f.write_text(json.dumps(doc, indent=indent))
            grew = _import_rss(perflab, f) - base
            assert grew < 60_000, (fmt, grew)
            wal = Path(f"{perflab.db}-wal")
            assert not wal.exists() or wal.stat().st_size == 0, (fmt, wal.stat().st_size)
    finally:
        reader.close()
    c = perflab.counts()
    assert (c.results, c.runs) == (4, 1 + 3 * n)


def test_ctrl_c_during_import_stores_nothing_and_says_so(perflab: Perflab,
                                                        tmp_path: Path) -> None:
    """Was: 5,218 of 100,000 runs stored as 'complete'."""
    f = hyperfine(tmp_path / "h.json", [random.random() * 1e-3 for _ in range(600_000)],
                  [0] * 600_000)
    p = perflab.popen("import", "-f", "hyperfine", str(f))
    # Interrupt while it stores: the database exists once storing has begun.
    deadline = time.monotonic() + 120
    while not perflab.db.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    text = err.decode()
    assert p.returncode == 130, text
    assert "Traceback" not in text
    assert "import interrupted: nothing of" in text and "was stored" in text
    c = perflab.counts()
    assert (c.results, c.runs) == (0, 0)
