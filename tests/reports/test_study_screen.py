"""A stored study reads in one screen: the terminal end of a report fits 60 lines at 120
columns, answers the study's axes in words, and every warning line has a count and an action."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from test_reports_matrix import make_result

from perflab.model import ResultSet
from perflab.reports.report import build_report
from perflab.reports.warnings import WarningKind, runs_to_decide
from perflab.storage import Store

pytestmark = pytest.mark.unit

SCHEMA4 = Path(__file__).parent.parent / "fixtures" / "core" / "schema4" / "results.db"
KINDS = tuple(k.value for k in WarningKind) + ("notes",)


def _screen(rs: ResultSet, out: Path) -> list[str]:
    con = Console(width=120, record=True, file=io.StringIO())
    build_report(rs, out, console=con, plots=False)
    return con.export_text().splitlines()


def _warning_lines(lines: list[str]) -> list[str]:
    # a warning line starts with its kind; a long one wraps onto the next screen line
    text = "\n".join(lines)
    starts = [m.start() for m in re.finditer(rf"^({'|'.join(KINDS)}): ", text, re.M)]
    ends = [*starts[1:], text.find("\ntables: ")]
    return [text[a:b].replace("\n", " ") for a, b in zip(starts, ends, strict=True)]


def _check(lines: list[str], out: Path) -> list[str]:
    assert len(lines) <= 60, "\n".join(lines)
    assert all(len(ln) <= 120 for ln in lines), [ln for ln in lines if len(ln) > 120]
    assert f"tables: {out / 'tables.md'}" in " ".join(lines[-3:])  # where the long tables are
    warns = _warning_lines(lines)
    for w in warns:
        assert re.search(r": \d+ ", w), f"no count: {w}"
        head, _, action = w.rpartition("; ")
        assert head and len(action.split()) >= 3, f"no action: {w}"
    return warns


def test_a_stored_suite_of_the_earlier_schema_reads_in_one_screen(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    shutil.copy(SCHEMA4, db)
    rs = Store(f"sqlite:///{db}").load(4)
    lines = _screen(rs, tmp_path / "r")
    warns = _check(lines, tmp_path / "r")
    # 6 runs a configuration: too few to rule out drift, neither comparison is decided
    assert any(w.startswith("inconclusive: 2 of 2 comparisons") and "3,111 runs" in w
               for w in warns)
    assert "to a per cell" in "\n".join(lines[:3])  # the matrix of task_clock, the primary


def test_a_stored_study_answers_its_axes_in_one_screen(tmp_path: Path) -> None:
    store = Store(tmp_path / "study.sqlite")
    rs = store.load(store.save(make_result(n=20)))  # fewer cannot rule out drift
    out = tmp_path / "r"
    lines = _screen(rs, out)
    warns = _check(lines, out)
    text = "\n".join(lines)
    # 12 cells down, three configurations across, each the ratio with its mark
    assert re.search(r"│ 0 +│ 1 +│ hardware +│ +2▲ │ +1= │", text)
    assert "kind=hardware / kind=software: base" in text  # the kinds axis, in words
    assert "ns_per_op per extra depth at threads=1 kind=software" in text
    # the noisy configuration stands out from its quiet peers; the quiet ones are not flagged
    (noisy,) = [w for w in warns if w.startswith("noisy:")]
    assert noisy.startswith("noisy: 12 of 48 series"), noisy
    assert (out / "tables.md").exists()


def test_a_study_of_many_configurations_still_reads_in_one_screen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a dozen runtimes, as `make demo` measures: bordered, the matrix would be 150 columns
    import test_reports_matrix

    names = ["cpp-async", "c", "rust", "go", "java", "java-async", "node", "python", "csharp",
             "csharp-async", "coreclr", "coreclr-async"]
    monkeypatch.setattr(test_reports_matrix, "FACTORS",
                        {"base": 1.0, **{n: 1.0 + k / 10 for k, n in enumerate(names)}})
    store = Store(tmp_path / "study.sqlite")
    rs = store.load(store.save(make_result(n=20)))
    out = tmp_path / "r"
    lines = _screen(rs, out)
    _check(lines, out)
    text = "\n".join(lines)
    # every configuration across (its name broken after the '-'), every cell down
    assert re.search(r"^depth +threads +kind +async +c +rust +go +java +async ", text, re.M)
    assert re.search(r"^100 +2 +hardware( +[\d.]+[▲▼=?]){12}$", text, re.M), text
    assert "kind=hardware / kind=software: base" in text
    # the cost of one more frame per runtime, in the unit once after its interval
    assert re.search(r"ns_per_op per extra depth .*: base [\d.]+ \[[\d.]+, [\d.]+\] ns, "
                     r"cpp-async [\d.]+ \[", " ".join(ln.strip() for ln in lines))


def _verdict_counts(words: str) -> dict[str, int]:
    return {v: int(n) for n, v in re.findall(r"(\d+) (slower|faster|equivalent|inconclusive)",
                                             words)}


def _table_verdicts(md: str, title: str, name: str) -> dict[str, int]:
    # the rows of the tables.md table whose title starts with ``title``, for ``name``
    section = md.split(f"### {title}", 1)[1].split("\n### ", 1)[0]
    counts: dict[str, int] = {}
    for row in section.splitlines():
        cols = [c.strip() for c in row.strip("|").split("|")]
        if len(cols) > 2 and cols[1] == name:
            v = cols[-1].split(" ")[0]
            counts[v] = counts.get(v, 0) + 1
    return counts


def test_the_answers_say_what_the_tables_say_of_the_same_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # base-async is a variant of the baseline: its sibling answer and the comparison table
    # judge one pair; 8 runs, near the band's edge (+5%), where two judgings would differ
    import test_reports_matrix

    monkeypatch.setattr(test_reports_matrix, "FACTORS",
                        {"base": 1.0, "base-async": 1.052, "slow": 2.0, "noisy": 1.03})
    store = Store(tmp_path / "study.sqlite")
    rs = store.load(store.save(make_result(n=8)))
    out = tmp_path / "r"
    lines = _screen(rs, out)
    _check(lines, out)
    text = " ".join(ln.strip() for ln in lines)
    md = (out / "tables.md").read_text()
    sibling = re.search(r"async / its sibling: .*? \((\d+) comparisons: ([^;]*);", text)
    assert sibling, text
    table = _table_verdicts(md, "ns_per_op: each configuration (diff) against", "base-async")
    assert _verdict_counts(sibling.group(2)) == table, (sibling.group(0), table)
    assert int(sibling.group(1)) == sum(table.values()) == 12
    # each axis answer counts what its table in tables.md says, configuration by configuration
    axis = re.search(r"kind=hardware / kind=software: .*? \((\d+) comparisons: ([^;]*);", text)
    assert axis, text
    rows = [_table_verdicts(md, "ns_per_op: kind=hardware over kind=software", n)
            for n in ("base", "base-async", "slow", "noisy")]
    total = {v: sum(r.get(v, 0) for r in rows) for r in rows for v in r}
    assert _verdict_counts(axis.group(2)) == total
    # the slope's interval says how it was widened
    assert re.search(r"per extra depth .*95% CI widened for lag-1 [\d.]+( pooled over \d+ "
                     r"series)?\): base ", text)


@pytest.mark.parametrize(("needed", "words"), [
    ([16, 20, 21390], "about 20 runs per configuration would decide half of them and 21,390 "
                      "all of them"),
    ([16, 3111], "about 3,111 runs per configuration would decide all of them"),
    ([16, 40, 100_000], "about 40 runs per configuration would decide half of them, 1 not "
                        "within 100,000"),
    ([16, 100_000, 100_000], "2 of them would need more than 100,000 runs per configuration"),
])
def test_the_runs_cap_is_never_read_as_a_run_count(needed: list[int], words: str) -> None:
    assert runs_to_decide(needed) == words
