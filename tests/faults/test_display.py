"""Display faults: a narrow terminal never turns figures into "…"; names reach Markdown
escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults.helpers import ANSI, Perflab, on_pty

pytestmark = pytest.mark.system


def run_in_terminal(perflab: Perflab, columns: int, *args: str) -> tuple[int, str]:
    """perflab on a real pseudo-terminal of ``columns`` columns (rich sees a TTY); its output
    without rich's own escape sequences."""
    code, out = raw_terminal_output(perflab, columns, *args)
    return code, ANSI.sub("", out.decode(errors="replace"))


def raw_terminal_output(perflab: Perflab, columns: int, *args: str) -> tuple[int, bytes]:
    """perflab's exit code and every byte it wrote to a real pseudo-terminal."""
    env = {**perflab.env, "COLUMNS": str(columns), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    return on_pty(perflab, env, *args)


def test_compare_at_40_columns_keeps_every_figure(perflab: Perflab) -> None:
    # Before: every cell of the compare table was "…" at COLUMNS=40.
    code, text = run_in_terminal(perflab, 40, "compare", "-r", "8", "--metric", "wall_time",
                                 "true", "/bin/true")
    assert code == 0, text
    assert "Traceback" not in text
    table = text[text.index("result 1"):]
    assert "…" not in table.split("verdicts:")[0], table
    assert "/bin/true:" in table and "verdict:" in table and "wall_time" in table
    assert perflab.counts().runs == 18


def test_compare_at_200_columns_is_a_table(perflab: Perflab) -> None:
    code, text = run_in_terminal(perflab, 200, "compare", "-r", "8", "true", "/bin/true")
    assert code == 0, text
    assert "┃ metric" in text and "change [" in text


def test_stat_at_30_columns(perflab: Perflab) -> None:
    code, text = run_in_terminal(perflab, 30, "stat", "-r", "3", "--", "true")
    assert code == 0, text
    body = text[text.index("result 1"):]
    assert "…" not in body.split("runs in")[0] and "median:" in body


def test_markdown_tables_escape_names(perflab: Perflab, tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[suite]\nname = "x"\nbaseline = "a"\n[measure]\nruns = 2\nwarmup = 0\n'
        '[benchmark]\ncommand = "true"\n[configurations.a]\n'
        '[configurations."<script>alert(1)</script>"]\nprefix = ["env"]\n')
    perflab("run", "--no-report", str(suite)).succeeds()
    out = tmp_path / "rep"
    perflab("report", "1", "--no-plots", "--out", str(out)).succeeds()
    md = (out / "tables.md").read_text()
    # Plain text: the tag's '<' escaped for Markdown (GitHub renders raw HTML), no entity.
    assert "\\<script>alert(1)\\</script>" in md and "&lt;" not in md


def test_control_characters_in_names_are_shown_escaped(perflab: Perflab) -> None:
    # A configuration name (or a label, or an imported command) is user text: its ESC must not
    # clear, recolour or retitle the terminal that `compare` and `results list` print to.
    evil = "\x1b[2J\x1b]0;pwned\x07a"
    out = perflab("compare", "-r", "6", "-n", evil, "-n", "b", "--metric", "wall_time",
                  "true", "/bin/true")
    out.succeeds()
    listed = perflab("results", "list")
    listed.succeeds()
    for o in (out, listed):
        assert "\x1b" not in o.stdout + o.stderr and "\x07" not in o.stdout + o.stderr, str(o)
    assert "\\x1b[2J" in out.stdout and "a" in out.stdout
    assert perflab.counts().runs == 14  # a warm-up and 6 runs each, every one stored


def test_control_characters_never_reach_the_progress_line_or_csv(
        perflab: Perflab, tmp_path: Path) -> None:
    """A configuration name with ESC [2J (clear the screen) and BEL, CR: the live progress line
    (on a real terminal) shows it as \\x1b[2J, as every table does; results.csv, comparisons.csv
    and --export-csv hold it escaped too (errors.printable, the one sanitizer)."""
    evil = "n\x1b[2J\x07\rz"
    code, out = raw_terminal_output(perflab, 200, "compare", "-r", "40", "-n", evil, "-n", "b",
                                    "--export-csv", str(tmp_path / "x.csv"),
                                    "sleep 0.02", "sleep 0.02")
    assert code == 0, out
    assert b"measuring" in out  # the progress line was drawn, with the name in it
    assert b"\x1b[2J" not in out and b"\x07" not in out and b"\rz" not in out
    assert b"n\\x1b[2J\\x07\\x0dz" in out
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[suite]\nname = "x"\nbaseline = "a"\n[measure]\nruns = 6\nwarmup = 0\n'
        '[benchmark]\ncommand = "true"\n[configurations.a]\n'
        '[configurations."n\\u001b[2J\\u0007\\rz"]\nprefix = ["env"]\n')
    perflab("run", "--out", str(tmp_path / "rep"), str(suite)).succeeds()
    for csv in (tmp_path / "x.csv", tmp_path / "rep" / "results.csv",
                tmp_path / "rep" / "comparisons.csv"):
        text = csv.read_bytes()
        lines = text.replace(b"\r\n", b"\n")  # the csv module's own line ends (RFC 4180)
        assert b"\x1b" not in text and b"\x07" not in text and b"\r" not in lines, csv
        assert b"n\\x1b[2J\\x07\\x0dz" in text, (csv, text[:300])
