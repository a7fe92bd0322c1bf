"""stat, profile and bisect take a command as argv or as one quoted string."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.cmdline import forgiving_argv
from perflab.errors import PerflabError

pytestmark = pytest.mark.unit


def test_argv_is_kept_as_given() -> None:
    assert forgiving_argv(["sh", "-c", "exit 0"]) == (["sh", "-c", "exit 0"], None)
    assert forgiving_argv(["true"]) == (["true"], None)
    # --shell: the string is shell syntax, never split here
    assert forgiving_argv(["echo a | wc -c"], shell=True) == (["echo a | wc -c"], None)


def test_a_quoted_string_that_names_no_program_runs_as_argv(tmp_path: Path) -> None:
    argv, note = forgiving_argv(["sh -c 'exit 3'"])
    assert argv == ["sh", "-c", "exit 3"]
    assert note is not None and "names no program" in note and "-- sh -c 'exit 3'" in note
    # a program whose name really has a space in it is run as it is
    odd = tmp_path / "my prog"
    odd.write_text("#!/bin/sh\nexit 0\n")
    odd.chmod(0o755)
    assert forgiving_argv([str(odd)]) == ([str(odd)], None)
    # nothing to split into: left for the launcher's "command not found"
    assert forgiving_argv(["no-such-prog-xyz arg"]) == (["no-such-prog-xyz arg"], None)
    with pytest.raises(PerflabError, match="unbalanced quotes"):
        forgiving_argv(["sh -c 'exit"])


def test_bisect_splits_a_quoted_program_built_later(tmp_path: Path) -> None:
    """bisect builds the program at each commit: it need not exist yet to be split off."""
    argv, note = forgiving_argv(["./build/prog -n 9"], built_in=tmp_path)
    assert argv == ["./build/prog", "-n", "9"] and note is not None
    assert forgiving_argv(["./build/prog -n 9"]) == (["./build/prog -n 9"], None)  # stat's rule
    (tmp_path / "my prog").write_text("")  # a file of the tree whose name has a space
    assert forgiving_argv(["my prog"], built_in=tmp_path) == (["my prog"], None)
    assert forgiving_argv(["./prog", "-n", "9"], built_in=tmp_path) == (
        ["./prog", "-n", "9"], None)


@pytest.mark.measure
def test_stat_runs_a_quoted_command_with_a_note(tmp_path: Path) -> None:
    env = {**os.environ, "PERFLAB_DB": str(tmp_path / "c.sqlite")}
    p = subprocess.run([sys.executable, "-m", "perflab", "stat", "-r", "2", "-w", "0",
                        "--no-counters", "sh -c 'exit 0'"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "names no program; ran it as sh with 2 arguments" in p.stderr
    assert "sh -c exit 0: 2 runs" in p.stdout


@pytest.mark.measure
@pytest.mark.parametrize("verb", [["stat"], ["profile", "record"], ["compare"], ["bisect"]])
def test_help_shows_both_forms(verb: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "perflab", *verb, "--help"],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"},
                         timeout=60).stdout
    assert "'./" in out  # one quoted string
    if verb != ["compare"]:
        assert " -- ./prog" in out  # argv
