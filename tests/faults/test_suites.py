"""Faults of suite files and suite runs: bad text is one line naming FILE:LINE and the fix; a
matrix too big to plan or to run unasked is refused before anything is stored; a failed cell
makes `perflab run` fail (a CI gate must not pass)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faults.helpers import Counts, Perflab

pytestmark = pytest.mark.system

EMPTY = Counts(0, 0, {})

GOOD = """\
[suite]
name = "t"
baseline = "a"

[measure]
runs = 2
warmup = 0

[benchmark]
command = "true {n}"

[matrix]
n = [1, 2]

[configurations.a]
[configurations.b]
prefix = ["env"]
"""


def suite(tmp_path: Path, text: str | bytes, name: str = "s.toml") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


@pytest.mark.parametrize("text, words, fix", [
    ("[suite\nname = 'x'\n", ["s.toml:1", "not valid TOML"], "fix the syntax"),
    (GOOD.replace('runs = 2', 'runs = '), ["s.toml:6", "not valid TOML"], "fix the syntax"),
    # An array left open to the end of the file: tomllib says "at end of document".
    ("[suite]\nname = 't'\n[matrix]\n\nn = [1, 2,\n", ["s.toml:5", "not valid TOML"],
     "close what is left open"),
    # Duplicate configuration names are duplicate TOML tables: refused at the second one.
    (GOOD + "[configurations.a]\n", ["s.toml:18", "twice"], "fix the syntax"),
    (GOOD.replace("[measure]", "[measure]\nrunz = 3"), ["s.toml:6", "runz"], "runs"),
    (GOOD.replace('name = "t"', 'name = "t"\ncolour = "red"'), ["s.toml:3", "colour"], None),
    (GOOD.replace('command = "true {n}"', "command = \"sh -c 'true {n}\""),
     ["s.toml:10", "cannot be split into arguments", "No closing quotation"],
     "balance the quotes"),
    (GOOD.replace("runs = 2", "runs = 0"), ["runs", "out of range"], "positive"),
    (GOOD.replace("warmup = 0", "warmup = 0\nprecision = nan"), ["precision", "finite"],
     "positive"),
    (GOOD.replace("warmup = 0", "warmup = 0\ntimeout = -1"), ["timeout"], "positive"),
    (GOOD.replace("warmup = 0", "warmup = 0\nprecision = 5"), ["is a fraction"],
     "precision = 0.05"),
    (GOOD.replace('baseline = "a"', 'baseline = "a"\nthreshold = 5'), ["threshold 5"],
     "fraction"),
    (GOOD.replace('baseline = "a"', 'baseline = "zz"'), ["zz"], None),
    # Before: bool("false") is True, so shell = "false" ran the commands through a shell.
    (GOOD.replace('prefix = ["env"]', 'prefix = ["env"]\nshell = "false"'),
     ["s.toml:18", "'shell' must be true or false, not a string"], "shell = <true or false>"),
    (GOOD.replace('command = "true {n}"', 'command = "true {n}"\nshell = "yes"'),
     ["s.toml:11", "'shell' must be true or false"], None),
])
def test_bad_suite_text(perflab: Perflab, tmp_path: Path, text: str, words: list[str],
                        fix: str | None) -> None:
    out = perflab("run", "--no-report", str(suite(tmp_path, text)))
    out.fails(2, *words, fix=fix)
    assert perflab.counts() == EMPTY


def test_non_utf8_suite_file(perflab: Perflab, tmp_path: Path) -> None:
    raw = GOOD.replace('name = "t"', 'name = "caf\u00e9"').encode("latin-1")
    out = perflab("run", "--dry-run", str(suite(tmp_path, raw)))
    out.fails(2, "s.toml:2", "not UTF-8", "0xe9", fix="save it as UTF-8")
    assert perflab.counts() == EMPTY


def test_suite_file_missing(perflab: Perflab, tmp_path: Path) -> None:
    perflab("run", str(tmp_path / "nope.toml")).fails(2, "not found", fix="suite TOML")
    assert perflab.counts() == EMPTY


def test_ten_million_cell_matrix_is_refused_at_once(perflab: Perflab, tmp_path: Path) -> None:
    # 10 axes of 5 values (9.8M cells): before, a dry run grew to 19.6 GB in 11 minutes.
    axes = "\n".join(f"p{i} = [1, 2, 3, 4, 5]" for i in range(10))
    text = GOOD.replace("n = [1, 2]", axes).replace("true {n}", "true")
    t0 = time.monotonic()
    out = perflab("run", "--dry-run", str(suite(tmp_path, text)))
    out.fails(2, "the matrix has 9,765,625 cells", "p0 5 x p1 5", fix="split the study")
    assert time.monotonic() - t0 < 30
    assert perflab.counts() == EMPTY


def test_large_suite_needs_confirmation(perflab: Perflab, tmp_path: Path) -> None:
    # 20,000 configuration series (estimated hours) do not start unasked; without a terminal
    # to ask at, perflab refuses with the estimate and the way to go ahead.
    text = GOOD.replace("n = [1, 2]", "n = { start = 1, stop = 10000 }")
    out = perflab("run", "--no-report", str(suite(tmp_path, text)))
    out.fails(2, "10000 cells, 20000 configuration series, estimated",
              "too large to start without confirmation", fix="--yes")
    assert perflab.counts() == EMPTY
    # The dry run still shows the plan and its estimate.
    dry = perflab("run", "--dry-run", str(suite(tmp_path, text)))
    dry.succeeds()
    assert "10000 cells" in dry.stdout and "estimated time" in dry.stdout


def test_long_estimate_needs_confirmation_and_yes_runs_it(perflab: Perflab,
                                                          tmp_path: Path) -> None:
    text = GOOD.replace("warmup = 0", "warmup = 0\nexpected_run_s = 2000")
    path = suite(tmp_path, text)
    out = perflab("run", "--no-report", str(path))
    # 8 runs of 2000 s: 4 h 27 min on an idle machine, more on a busy one (times its slowdown).
    out.fails(2, "2 cells, 4 configuration series, estimated", "too large to start",
              fix="--yes")
    assert perflab.counts() == EMPTY
    perflab("run", "--no-report", "--yes", str(path)).succeeds()
    assert perflab.counts() == Counts(1, 8, {"complete": 1})


def test_failed_cell_fails_the_run(perflab: Perflab, tmp_path: Path) -> None:
    # Cell n=2 crashes: the other cell is measured and kept, the result is "failed", and the
    # exit code says so (before: stored as failed, exit 0).
    text = GOOD.replace('command = "true {n}"', "command = \"sh -c 'test {n} = 1'\"")
    out = perflab("run", "--no-report", "--db", str(perflab.db), str(suite(tmp_path, text)))
    line = out.fails(1, "1 cell(s) failed", "exited with status 1", fix="--resume")
    assert line.count(" -- ") == 1, line  # the cell's own fix is not repeated
    assert line.endswith(f"--db {perflab.db}"), line  # the hint resumes the same store
    c = perflab.counts()
    assert (c.results, c.statuses) == (1, {"failed": 1})
    assert c.runs >= 4 + 1  # the good cell's 2 x 2 runs, and the failed run itself


def test_large_suite_at_a_terminal_asks_and_no_stops_it(perflab: Perflab, tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    text = GOOD.replace("n = [1, 2]", "n = { start = 1, stop = 10000 }")
    path = suite(tmp_path, text)
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "perflab", "run", "--no-report", str(path)],
                         stdin=slave, stdout=slave, stderr=slave, env=perflab.env,
                         cwd=tmp_path, close_fds=True)
    os.close(slave)
    os.write(master, b"n\n")  # the answer waits in the terminal's input until it is asked
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    text_out = out.decode(errors="replace")
    assert p.wait(timeout=60) == 2, text_out
    assert "Run it? [y/N]" in text_out and "not started -- pass --yes" in text_out
    assert "Traceback" not in text_out
    assert perflab.counts() == EMPTY


def test_bad_out_directory_is_refused_before_measuring(perflab: Perflab, tmp_path: Path) -> None:
    # Before: every cell was measured, then the report's mkdir ended in a traceback.
    path = suite(tmp_path, GOOD)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = perflab("run", str(path), "--out", str(blocker / "report"))
    out.fails(2, "cannot create the directory", "--out", fix="choose another --out")
    out = perflab("run", str(path), "--out", str(blocker))
    out.fails(2, "is a file, not a directory", fix="give a directory")
    assert perflab.counts() == EMPTY


def test_bad_out_directory_of_report_dashboard_and_detect(perflab: Perflab,
                                                          tmp_path: Path) -> None:
    perflab("run", "--no-report", str(suite(tmp_path, GOOD))).succeeds()
    before = perflab.counts()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for args in (("report", "1", "--no-plots", "--out"), ("dashboard", "--out"),
                 ("detect", "--report")):
        out = perflab(*args, str(blocker / "sub"))
        out.fails(2, "cannot create the directory", args[-1], fix=f"choose another {args[-1]}")
    assert perflab.counts() == before
