"""Results whose perflab was killed before it wrote their header (schema 4 and 5 stored the
header's metrics only at the end): every view and export shows their runs, marked interrupted.
The stores are tests/fixtures/core/interrupted/ (its README says how they were made)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest

from cli_helpers import invoke

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).parent.parent / "fixtures" / "core" / "interrupted"
# (store, result id, measured runs): result 2 of schema4.db was killed at schema 4, result 3
# of schema5.db at schema 5; neither header names a metric.
KILLED = [("schema4.db", 2, 86), ("schema5.db", 3, 353)]


def _owner_here_before_a_restart(db: Path, rid: int) -> None:
    """The result's owner made this host's, in a boot before this one: read as interrupted here
    as it was on the machine that measured it (on another host a reader cannot tell)."""
    with contextlib.closing(sqlite3.connect(db)) as c, c:
        c.execute("UPDATE results SET settings = json_set(settings, '$.owner.host', ?, "
                  "'$.owner.boot_id', 'an earlier boot') WHERE id = ?",
                  (socket.gethostname(), rid))


@pytest.mark.parametrize(("name", "rid", "runs"), KILLED, ids=["schema4", "schema5"])
def test_a_result_killed_before_its_header_shows_its_runs(tmp_path: Path, name: str, rid: int,
                                                          runs: int) -> None:
    db = tmp_path / name
    shutil.copy(FIXTURE / name, db)
    _owner_here_before_a_restart(db, rid)
    doc, md, csv = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.csv"
    shown = invoke("results", "show", str(rid), "--db", str(db), "--export-json", str(doc),
                   "--export-markdown", str(md), "--export-csv", str(csv))
    assert shown.exit_code == 0, shown.output
    assert "(interrupted: partial)" in shown.output and f"spin: {runs} runs" in shown.output
    for metric in ("task_clock", "wall_time", "user_time", "cpu_ns_per_op"):
        assert f"│ {metric} " in shown.output, metric
    exported = json.loads(doc.read_text())
    assert exported["status"] == "interrupted"
    (cfg,) = exported["configurations"]
    assert cfg["runs"] == runs and cfg["metrics"]["task_clock"]["n"] == runs
    assert cfg["metrics"]["task_clock"]["unit"] == "s"
    assert max(cfg["metrics"]["task_clock"]["samples"]) < 0.01  # spin 300000: about 0.33 ms
    assert md.read_text().startswith(f"result {rid}: **interrupted: partial**")
    rows = csv.read_text().splitlines()
    assert rows[0].endswith(",status") and len(rows) > 10
    assert all(r.endswith(",interrupted") for r in rows[1:])
    out = tmp_path / "report"
    reported = invoke("report", str(rid), "--db", str(db), "--no-plots", "--out", str(out))
    assert reported.exit_code == 0, reported.output
    assert f"(result {rid}, interrupted: partial)" in (out / "tables.md").read_text()
    assert json.loads((out / "result.json").read_text())["configurations"][0]["metrics"]
    assert "status interrupted" in (out / "index.html").read_text()
    listed = invoke("results", "list", "--db", str(db))
    assert "interrupted" in listed.output


def test_history_marks_the_killed_results_and_reads_them_in_seconds(tmp_path: Path) -> None:
    """schema5.db's series of spin: one complete result and two killed ones (one left in ms by
    an earlier migration): every point about 0.33 ms, the killed ones marked."""
    from perflab.history.series import SeriesFilter, load_series
    from perflab.storage import Store

    db = tmp_path / "schema5.db"
    shutil.copy(FIXTURE / "schema5.db", db)
    for rid in (2, 3):
        _owner_here_before_a_restart(db, rid)
    (series,) = load_series(Store(db), SeriesFilter(benchmark="spin", metric="task_clock"))
    assert series.unit == "s"
    assert [(p.result_id, p.label) for p in series.points] == [
        (1, "stat"), (2, "stat, interrupted: partial"), (3, "stat, interrupted: partial")]
    assert all(1e-4 < p.median < 1e-3 for p in series.points)
    shown = invoke("history", "spin", "--db", str(db), "-m", "task_clock")
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("interrupted: partial") == 2
