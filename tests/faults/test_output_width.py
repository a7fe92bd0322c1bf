"""Output fitted to the width the user has: COLUMNS when set, else the terminal (of a standard
stream, or the controlling one when every stream is piped), else 80; read on real pipes and a
real pseudo-terminal, never on a console object told its width."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from faults.helpers import ANSI, Perflab, on_pty

pytestmark = pytest.mark.system

NAMES = ("eh/cpp depth=10", "eh/rust depth=10", "eh/go depth=10")


def piped(perflab: Perflab, *args: str, columns: int | None = None,
          terminal: int | None = None) -> str:
    """perflab's stdout through a pipe, stdin and stderr not a terminal, in a session of its
    own: with ``terminal``, that session's controlling terminal is a pseudo-terminal of that
    many columns (``perflab ... 2>log | less``); without, it has none (a CI job)."""
    env = {k: v for k, v in perflab.env.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    master = slave = -1
    if terminal is not None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, terminal, 0, 0))

    def own_terminal() -> None:  # runs in the child after setsid: take the pty as ctty
        if slave >= 0:
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    p = subprocess.run([sys.executable, "-m", "perflab", *args], env=env, cwd=perflab.cwd,
                       stdin=subprocess.DEVNULL, capture_output=True, start_new_session=True,
                       preexec_fn=own_terminal, pass_fds=(slave,) if slave >= 0 else (),
                       timeout=120)
    for fd in (master, slave):
        if fd >= 0:
            os.close(fd)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def on_terminal(perflab: Perflab, columns: int, *args: str) -> str:
    """perflab on a real pseudo-terminal ``columns`` wide (COLUMNS unset), its text."""
    env = {k: v for k, v in perflab.env.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["TERM"] = "xterm"
    code, out = on_pty(perflab, env, *args, rows_cols=(40, columns), new_session=True)
    assert code == 0, out
    return ANSI.sub("", out.decode(errors="replace")).replace("\r\n", "\n")


def widest(text: str) -> int:
    return max(len(line.rstrip()) for line in text.splitlines())


@pytest.fixture
def three_way(perflab: Perflab, tmp_path: Path) -> Perflab:
    """A stored 3-way compare whose configurations are named as eh's runtimes."""
    args = [a for n in NAMES for a in ("-n", n)]
    perflab("compare", "-r", "6", *args, "true", "/bin/true", "env true").succeeds()
    return perflab


def test_a_pipe_takes_columns_else_the_controlling_terminal_else_80(three_way: Perflab) -> None:
    # No terminal anywhere, COLUMNS unset: 80, the paragraphs wrapped at it
    text = piped(three_way, "results", "show", "1")
    assert widest(text) == 80, text
    assert "verdict: " in text  # a table too wide for 80 is stacked, never cut
    # COLUMNS says 120: the 3-way compare is a table per candidate; values never wrap (a
    # second line of a row holds the rest of a long verdict, or of a change from 0)
    text = piped(three_way, "results", "show", "1", columns=120)
    assert widest(text) == 120, text
    assert f"{NAMES[1]} vs {NAMES[0]}" in text and f"{NAMES[2]} vs {NAMES[0]}" in text
    rows = [line.split("│")[1:-1] for line in text.splitlines() if line.startswith("│")]
    assert len([r for r in rows if r[0].strip()]) >= 2 * 5, text  # 5+ metrics a candidate
    assert all(not "".join(r[:3]).strip() for r in rows if not r[0].strip()), text
    # Every stream piped, the session's terminal 100 columns wide: its width
    assert widest(piped(three_way, "results", "show", "1", terminal=100)) == 100


def test_a_terminal_gets_its_own_width(three_way: Perflab) -> None:
    text = on_terminal(three_way, 120, "results", "show", "1")
    assert widest(text) <= 120, text
    assert f"{NAMES[1]} vs {NAMES[0]}" in text and "┃ metric" in text
