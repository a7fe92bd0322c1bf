"""Samples with two modes marked in perflab's own tables (reports/modes.py): the stat and
compare tables, the Markdown export, the report's medians, and one warning of kind BIMODAL."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from scipy.stats import norm

from cli_helpers import run_cli
from perflab.format import fmt_alike, fmt_value
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import matrix
from perflab.reports.analysis import Analysis
from perflab.reports.export.markdown import result_to_markdown
from perflab.reports.modes import MARK
from perflab.reports.terminal import compare_table, stat_table
from perflab.reports.warnings import (
    WarningKind,
    result_warnings,
    suite_warnings,
    warning_lines,
)
from perflab.stats import modality

pytestmark = pytest.mark.unit

N = 24


def _one_mode(centre: float) -> list[float]:
    """N values spread as a normal sample of CV 1% (its quantiles: no randomness)."""
    return list(centre * (1 + 0.01 * norm.ppf((np.arange(N) + 0.5) / N)))


def _two_modes(low: float, high: float) -> list[float]:
    """Half the runs about ``low``, half about ``high``, alternating as rounds would."""
    a, b = _one_mode(low)[::2], _one_mode(high)[::2]
    return [x for pair in zip(a, b, strict=True) for x in pair]


def _cfg(name: str, wall: list[float], baseline: bool = False) -> Configuration:
    cfg = Configuration(name=name, command=[name], is_baseline=baseline)
    # context switches with two values: a count, never marked
    cfg.runs = [Run(seq=i, values={"wall_time": w, "context_switches": float(i % 2 * 10)})
                for i, w in enumerate(wall)]
    return cfg


def _analysis(*configs: Configuration) -> Analysis:
    rs = ResultSet(kind="compare", configurations=list(configs),
                   settings={"primary_metric": "wall_time", "interleaved": True})
    rs.id = 7
    for m in ("wall_time", "context_switches"):
        rs.metrics[m] = BUILTIN_METRICS[m]
    return Analysis.judge(rs, ["wall_time", "context_switches"])


def _text(table: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_the_fixtures_are_one_mode_and_two() -> None:
    one, two = modality(_one_mode(1.3e-6)), modality(_two_modes(1.2e-6, 1.45e-6))
    assert one is not None and not one.flagged
    assert two is not None and two.flagged and two.label == "bimodal"


def test_stat_table_marks_the_bimodal_median_and_says_where_the_modes_are() -> None:
    a = _analysis(_cfg("old", _one_mode(1.3e-6), True), _cfg("new", _two_modes(1.2e-6, 1.45e-6)))
    old, new = a.rs.configurations
    t = stat_table(a, new, ["wall_time", "context_switches"])
    cells = {r[0].text: r[1].text for r in t.rows}
    assert cells["wall_time"].endswith(f" {MARK}")
    assert MARK not in cells["context_switches"]
    assert len(t.notes) == 1
    assert t.notes[0].startswith(f"{MARK} bimodal")
    mod = modality(new.samples("wall_time"))
    assert mod is not None and len(mod.modes) == 2
    # the modes where they are, in one scale, as format.py writes times
    assert 1.15e-6 < mod.modes[0] < 1.25e-6 and 1.4e-6 < mod.modes[1] < 1.5e-6
    assert f"new / wall_time: the median {fmt_value(a.summary(new, 'wall_time').median, 's')} " \
        f"hides two modes, at {' and '.join(fmt_alike(mod.modes, 's'))}" in t.notes[0]
    assert MARK in _text(t)
    plain = stat_table(a, old, ["wall_time"])
    assert MARK not in plain.rows[0][1].text and not plain.notes


def test_compare_table_and_markdown_mark_the_candidate_only() -> None:
    a = _analysis(_cfg("old", _one_mode(1.3e-6), True), _cfg("new", _two_modes(1.2e-6, 1.45e-6)))
    t = compare_table(a, ["wall_time"], "{}")
    row = [c.text for c in t.rows[0]]
    assert MARK not in row[1] and row[2].endswith(f" {MARK}")
    assert len(t.notes) == 1 and "new / wall_time" in t.notes[0]
    md = result_to_markdown(a, ["wall_time"])
    table_rows = [line for line in md.splitlines() if line.startswith("| wall_time")]
    assert len(table_rows) == 1 and table_rows[0].count(MARK) == 1
    assert f"- {MARK} bimodal" in md
    medians = matrix.medians_rows(a, "wall_time")[0]
    assert MARK in medians["new"] and MARK not in medians["old"]
    diff = matrix.comparison_rows(a, "wall_time")[0]
    assert MARK in diff["diff"] and MARK not in diff["base"]


def test_one_warning_line_for_every_bimodal_sample() -> None:
    a = _analysis(_cfg("old", _two_modes(1.2e-6, 1.45e-6), True),
                  _cfg("new", _two_modes(1.25e-6, 1.5e-6)))
    lines = [w for w in result_warnings(a) if w.startswith("bimodal")]
    assert len(lines) == 1
    assert lines[0].startswith("bimodal: 2 samples have two or more modes (old / wall_time:")
    assert "perflab results show 7 --export-json -" in lines[0] and "--pin" in lines[0]
    warns = suite_warnings(a, "wall_time")
    assert sum(w.kind == WarningKind.BIMODAL for w in warns) == 2
    rendered = warning_lines(a, "wall_time", warns, "index.html#warnings")
    assert sum(line.startswith("bimodal:") for line in rendered) == 1


def test_no_warning_when_every_sample_has_one_mode() -> None:
    a = _analysis(_cfg("old", _one_mode(1.3e-6), True), _cfg("new", _one_mode(1.35e-6)))
    assert not [w for w in result_warnings(a) if w.startswith("bimodal")]
    assert not any(w.kind == WarningKind.BIMODAL for w in suite_warnings(a, "wall_time"))
    assert MARK not in _text(compare_table(a, ["wall_time"], "{}"))


@pytest.mark.measure  # a real command's CPU time: one at a time (tests/tiers.py)
def test_a_command_with_two_durations_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that sleeps 20 ms or 80 ms, alternately: its wall time has two modes four
    times apart and narrow (a sleep's length does not vary with the CPU's speed, as a loop's CPU
    time does: a loop of 20,000 or 60,000 shell iterations gave an upper mode spread over
    60-105 ms, which the mvalue rule read as one mode in about one run of two)."""
    script = tmp_path / "two.sh"
    script.write_text(f"f={tmp_path}/count; n=$(cat $f 2>/dev/null || echo 0); "
                      "echo $((n+1)) > $f\n"
                      "if [ $((n % 2)) -eq 1 ]; then sleep 0.08; else sleep 0.02; fi\n")
    monkeypatch.setenv("COLUMNS", "160")  # the table on one line a row
    code, out, err = run_cli(["stat", "--db", str(tmp_path / "r.db"), "-r", "20",
                              "--metric", "wall_time", "--", "sh", str(script)], capsys)
    assert code == 0, err
    text = out + err
    median = next(line for line in text.splitlines() if line.startswith("│ wall_time"))
    assert MARK in median
    assert len(re.findall(r"warning: bimodal: 1 sample has two or more modes", text)) == 1
