"""One number, one rendering: the formatter's rules for changes and spreads, and one value
printed through every surface (stat, compare, report tables, Markdown, HTML, history)."""

from __future__ import annotations

import html
import math
from pathlib import Path

import pytest
from rich.console import Console

from cli_helpers import invoke
from perflab.format import fmt_cv, fmt_duration, fmt_signed, fmt_value
from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import html as html_report
from perflab.reports import matrix, terminal
from perflab.reports.analysis import Analysis
from perflab.reports.export.markdown import result_to_markdown
from perflab.stats import compare_result
from perflab.storage import Store

pytestmark = pytest.mark.unit


def test_change_is_in_the_unit_family_of_its_value() -> None:
    # A -6,390 ns change beside a 650 µs baseline reads in µs, not in ns.
    assert fmt_signed(-6390.0, "ns", like=650_000.0) == "-6.39 µs"
    assert fmt_signed(-6390.0, "ns") == "-6,390 ns"  # alone: the unit it reads best in
    assert fmt_signed(2.5e-3, "s", like=0.0123) == "+2.5 ms"
    assert fmt_signed(5.0, "ns", like=0.0) == "+5 ns"  # no scale from a zero baseline


def test_count_change_keeps_two_decimals() -> None:
    assert fmt_signed(0.02443, "count") == "+0.02"
    assert fmt_signed(-12.3456, "") == "-12.35"
    assert fmt_signed(1500.0, "count") == "+1,500"


def test_spread_around_zero_is_a_standard_deviation() -> None:
    assert fmt_cv(100.0, 0.0123, 1.23, "ns") == " ±1.2%"
    assert fmt_cv(0.0, 5.564, 3.0, "ns") == " ±sd 3 ns"
    assert fmt_cv(0.0, 5.564, 3.0, "count") == " ±sd 3"
    assert fmt_cv(100.0, math.nan, math.nan, "ns") == ""


def _result() -> ResultSet:
    rs = ResultSet(kind="compare", created_at=1_700_000_000.0, status="complete",
                   metrics={"ns_per_op": MetricInfo("ns_per_op", "ns", "workload")},
                   settings={"interleaved": True, "primary_metric": "ns_per_op"})
    base = Configuration(name="base", command=["true"], is_baseline=True)
    cand = Configuration(name="cand", command=["true"])
    vals = [32000.0, 32006.0, 32012.0, 32012.0, 32012.0, 32018.0, 32024.0, 32012.0]
    seq = 0
    for v in vals:
        for cfg, f in ((base, 1.0), (cand, 2.0)):
            cfg.runs.append(Run(seq=seq, values={"ns_per_op": v * f}))
            seq += 1
    rs.configurations = [base, cand]
    return rs


def _text(table: object) -> str:
    console = Console(width=250, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def test_one_value_renders_the_same_everywhere(tmp_path: Path) -> None:
    rs = _result()
    a = Analysis.of(rs, compare_result(rs, ["ns_per_op"]))
    want = fmt_value(32012.0, "ns")
    assert want == "32.01 µs"
    # stat and compare (terminal)
    assert want in _text(terminal.stat_table(a, rs.configurations[0], ["ns_per_op"]))
    assert want + " ±" in _text(terminal.compare_table(a, ["ns_per_op"], "{}"))
    # report tables: median [CI] in one unit
    row = matrix.medians_rows(a, "ns_per_op")[0]
    assert row["base"].startswith("32.01 [") and row["base"].endswith("µs")
    # Markdown export
    md = result_to_markdown(a)
    assert f"| {want} |" in md
    # HTML report
    page = html_report.render_html(a, html_report.ReportPage(
        title="t", tables=[("medians", matrix.medians_rows(a, "ns_per_op"))], plots=[],
        warnings=[], suite_text="", out_dir=tmp_path))
    assert row["base"] in page.read_text()
    # history: the stored baseline's series, through the history verb's table
    rs.configurations[0].benchmark = "syn/fmt"
    Store(tmp_path / "r.sqlite").save(rs)
    res = invoke("history", "syn/fmt", "--metric", "ns_per_op", "--db", str(tmp_path / "r.sqlite"))
    assert res.exit_code == 0, res.output
    assert want in res.output


def test_durations_read_as_a_clock() -> None:
    # estimates and ETAs (run --dry-run, the suite progress bar)
    assert [fmt_duration(s) for s in (0.4, 59.6, 61, 3599, 3660, float("nan"))] == [
        "0s", "1m00s", "1m01s", "59m59s", "1h01m", "?"]


def test_a_ratio_ci_end_past_100x_is_not_printed_in_full() -> None:
    from perflab.format import fmt_ci_end

    assert fmt_ci_end(1.123) == "+12.3" and fmt_ci_end(0.5) == "-50.0"
    assert fmt_ci_end(1.2e29) == ">+9,900"


@pytest.mark.parametrize("text, source, shown", [
    ("<1e-16", "<1e-16", "<1e-16"),  # perflab's own figures stay as they are
    (">+9,900", ">+9,900", ">+9,900"),
    ("A | B", "A \\| B", "A | B"),
    ("C:\\dir", "C:\\\\dir", "C:\\dir"),
    ("<i>x</i> &amp;", "\\<i>x\\</i> \\&amp;", "<i>x</i> &amp;"),  # read as typed, no tag
])
def test_markdown_cells_are_plain_text(text: str, source: str, shown: str) -> None:
    from markdown_it import MarkdownIt

    from perflab.table import Table

    md = Table.from_dicts([{"p": text}]).to_markdown()
    assert f"| {source} |" in md and "&lt;" not in md and "&gt;" not in md
    rendered = MarkdownIt("commonmark").enable("table").render(md)  # as GitHub renders it
    assert f">{html.escape(shown, quote=False)}</td>" in rendered
