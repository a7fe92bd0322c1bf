"""Shared helpers for the fault catalogue (tests/faults/): run perflab as a real subprocess and
assert the exact outcome a user sees.

Every fault test states four things:
- the exit code;
- ONE clear stderr line ``perflab: <problem> -- <fix>`` (with words naming both);
- no traceback anywhere in stdout or stderr;
- the store's run counts before and after (nothing recorded is lost, nothing half-written).

Use it like this::

    from faults.helpers import Perflab, counts

    def test_missing_command(perflab: Perflab) -> None:
        before = perflab.counts()
        out = perflab("stat", "-r", "2", "--", "/nonexistent")
        out.fails(2, "command not found", "check the path")
        assert perflab.counts() == before

The ``perflab`` fixture (tests/faults/conftest.py) gives a runner bound to a fresh database in
the test's tmp_path.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# How perflab prints a PerflabError (cli.main): one line, problem and fix split by " -- ".
ERROR_PREFIX = "perflab:"
# Anything a Python crash prints; none of it may reach a user.
CRASH_MARKERS = ("Traceback (most recent call last)", "Traceback", 'File "/')


@dataclass(frozen=True)
class Counts:
    """What the store holds: result sets, runs, and result status -> count."""

    results: int
    runs: int
    statuses: dict[str, int] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Counts):
            return NotImplemented
        return (self.results, self.runs, self.statuses) == (other.results, other.runs,
                                                            other.statuses)


def counts(db: Path) -> Counts:
    """Read the store's counts with plain sqlite3 (read-only), independent of perflab's code.

    A database that does not exist (perflab refused before creating it) holds nothing."""
    if not db.exists():
        return Counts(0, 0, {})
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "results" not in tables:
            return Counts(0, 0, {})
        n_results = con.execute("SELECT count(*) FROM results").fetchone()[0]
        n_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0] if "runs" in tables \
            else 0
        statuses = dict(con.execute("SELECT status, count(*) FROM results GROUP BY status"))
    finally:
        con.close()
    return Counts(int(n_results), int(n_runs), {str(k): int(v) for k, v in statuses.items()})


def ok_runs(db: Path) -> int:
    """Runs stored with status 'ok' (warm-ups included)."""
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return int(con.execute("SELECT count(*) FROM runs WHERE status='ok'").fetchone()[0])
    finally:
        con.close()


@dataclass
class Outcome:
    """One finished perflab process."""

    argv: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return (f"$ perflab {' '.join(self.argv)}\nexit {self.code} after {self.seconds:.1f} s\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")

    def no_traceback(self) -> None:
        for marker in CRASH_MARKERS[:2]:
            assert marker not in self.stdout and marker not in self.stderr, \
                f"a traceback leaked:\n{self}"

    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith(ERROR_PREFIX)]

    def fails(self, code: int, *words: str, fix: str | None = None) -> str:
        """Assert exit ``code``, no traceback, and exactly ONE error line that names the problem
        (every one of ``words``, case-insensitive) and a fix (text after ' -- ', containing
        ``fix`` when given).  Returns that line."""
        self.no_traceback()
        assert self.code == code, f"expected exit {code}:\n{self}"
        lines = self.error_lines()
        assert len(lines) == 1, f"expected exactly one 'perflab:' error line:\n{self}"
        line = lines[0]
        assert " -- " in line, f"the error line names no fix:\n{self}"
        problem, _, remedy = line.partition(" -- ")
        assert remedy.strip(), f"empty fix:\n{self}"
        for w in words:
            assert w.lower() in line.lower(), f"error line lacks {w!r}:\n{self}"
        if fix is not None:
            assert fix.lower() in remedy.lower(), f"fix lacks {fix!r}:\n{self}"
        assert "\x1b" not in line, f"raw escape sequence in the error line:\n{self}"
        return line

    def usage_error(self, *words: str) -> None:
        """A typer/click usage error (exit 2): no traceback, the option named."""
        self.no_traceback()
        assert self.code == 2, f"expected a usage error (exit 2):\n{self}"
        text = self.stderr.lower()
        for w in words:
            assert w.lower() in text, f"usage error lacks {w!r}:\n{self}"

    def succeeds(self) -> None:
        self.no_traceback()
        assert self.code == 0, f"expected success:\n{self}"
        assert not self.error_lines(), f"success with an error line:\n{self}"


class Perflab:
    """Runs ``python -m perflab`` as a real subprocess against one database."""

    def __init__(self, db: Path, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.db = db
        self.cwd = cwd
        base = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        # A fixed, non-terminal environment: no colours, wide lines, this database.
        base.update({"PERFLAB_DB": str(db), "COLUMNS": "200", "NO_COLOR": "1",
                     "TERM": "dumb", "PYTHONUNBUFFERED": "1"})
        if env:
            base.update(env)
        self.env = base

    def __call__(self, *args: str | bytes, env: Mapping[str, str | None] | None = None,
                 timeout: float = 120, stdin: str | None = None,
                 cwd: Path | None = None) -> Outcome:
        e = dict(self.env)
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        argv = [sys.executable, "-m", "perflab", *args]
        t0 = time.monotonic()
        p = subprocess.run(argv, env=e, cwd=cwd or self.cwd, capture_output=True,
                           input=(stdin or "").encode(), timeout=timeout)
        shown = [a.decode(errors="backslashreplace") if isinstance(a, bytes) else a
                 for a in args]
        return Outcome(shown, p.returncode, p.stdout.decode(errors="replace"),
                       p.stderr.decode(errors="replace"), time.monotonic() - t0)

    def popen(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start perflab without waiting (for signals); in its own session."""
        e = {**self.env, **(env or {})}
        return subprocess.Popen([sys.executable, "-m", "perflab", *args], env=e, cwd=self.cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)

    def counts(self) -> Counts:
        return counts(self.db)


# The unprivileged user the permission faults run perflab as (setpriv; needs root).
NOBODY = 65534


def as_nobody(args: list[str], env: Mapping[str, str | None], cwd: Path) -> Outcome:
    """Run perflab as ``nobody`` with a fixed, non-terminal environment plus ``env`` (a None
    value unsets the variable)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    e.update({"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
            sys.executable, "-m", "perflab", *args]
    t0 = time.monotonic()
    p = subprocess.run(argv, env=e, cwd=cwd, capture_output=True, text=True, timeout=120)
    return Outcome(args, p.returncode, p.stdout, p.stderr, time.monotonic() - t0)


def script(path: Path, body: str, mode: int = 0o755) -> Path:
    """Write an executable shell script (``#!/bin/sh`` prepended) and return its path."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return path


def python_script(path: Path, body: str) -> Path:
    """Write an executable Python script run by this interpreter."""
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(0o755)
    return path


def pids_alive(pids: Sequence[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie is dead for our purposes.
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def kill_quietly(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def on_pty(perflab: Perflab, env: Mapping[str, str], *args: str, rows_cols: tuple[int, int]
           | None = None, new_session: bool = False) -> tuple[int, bytes]:
    """perflab run on a real pseudo-terminal (rich sees a TTY) with ``env``, the terminal
    ``rows_cols`` in size when given (else the pty's own): its exit code and every byte it
    wrote."""
    master, slave = pty.openpty()
    if rows_cols is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *rows_cols, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "perflab", *args], stdin=slave, stdout=slave,
                         stderr=slave, env=dict(env), cwd=perflab.cwd, close_fds=True,
                         start_new_session=new_session)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=120), out
