"""Running perflab's CLI in-process from a test, the small suite files run tests feed it, and
reading compare's verdicts."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner, Result

from perflab.cli import app, history, main


def invoke(*args: str) -> Result:
    """perflab's typer app on ``args`` in-process (CliRunner, 220 columns): a PerflabError is
    left in ``result.exception`` for the test to check, not turned into a line."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "220"})


def history_app() -> typer.Typer:
    """A typer app of the history verbs alone (import, bisect, detect...), as the cli
    registers them."""
    hist = typer.Typer()
    history.register(hist)
    hist.callback()(lambda: None)
    return hist


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def two_config_suite(name: str, runs: int, n: list[int] | list[str], a: list[str],
                     b: list[str]) -> str:
    """A suite file's text: configurations ``a`` (the baseline) and ``b`` (commands, where
    ``{n}`` stands for the matrix value) over ``n``, ``runs`` runs each per cell, no warm-up, no
    counters, wall_time reported."""
    return f"""\
[suite]
name = "{name}"
baseline = "a"
metrics = ["wall_time"]

[measure]
runs = {runs}
warmup = 0
counters = "none"

[matrix]
n = {json.dumps(n)}

[configurations.a]
command = {json.dumps(a)}

[configurations.b]
command = {json.dumps(b)}
"""


def verdicts_of(out: str) -> dict[str, str]:
    """The verdict of each metric in compare's output: a table row (metric first, verdict last),
    or, where the table is too wide for the console, a block per metric (the metric's name, then
    indented lines, one of them 'verdict: ...')."""
    verdicts: dict[str, str] = {}
    metric = ""
    for line in out.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.split("│")]
            verdicts[cells[1]] = cells[-2]
        elif line and not line.startswith(" ") and ":" not in line:
            metric = line.strip()
        elif line.strip().startswith("verdict:") and metric:
            verdicts[metric] = line.split(":", 1)[1].strip()
    return verdicts
