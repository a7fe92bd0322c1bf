"""Running perflab's CLI in-process from a test, and reading compare's verdicts."""

from __future__ import annotations

import pytest

from perflab.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


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
