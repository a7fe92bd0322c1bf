"""Results stored by an earlier perflab still open, show, report and compare identically.

The database in tests/fixtures/core/schema4/ was written by perflab at schema 4 (its README says
how); ``golden/`` holds what that version printed and wrote.  Any change to these outputs must be
deliberate: regenerate with ``PERFLAB_REGOLD=1`` (the README says how) and say why."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cli_helpers import invoke

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent.parent / "fixtures" / "core" / "schema4"
GOLDEN = HERE / "golden"
IDS = (1, 2, 3, 4)
REGOLD = os.environ.get("PERFLAB_REGOLD") == "1"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A copy of the stored database: opening it may upgrade it, and the fixture stays as made."""
    path = tmp_path / "results.db"
    shutil.copy(HERE / "results.db", path)
    return str(path)


def _same(name: str, text: str) -> None:
    golden = GOLDEN / name
    if REGOLD:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden}: run with PERFLAB_REGOLD=1 once"
    assert text == golden.read_text(), f"{name} differs from what perflab stored and printed"


@pytest.mark.parametrize("rid", IDS)
def test_a_stored_result_shows_as_before(db: str, rid: int) -> None:
    r = invoke("results", "show", str(rid), "--db", db)
    assert r.exit_code == 0, r.output
    _same(f"show-{rid}.txt", r.output.replace(db, "DB"))


@pytest.mark.parametrize("rid", IDS)
def test_a_stored_result_reports_as_before(db: str, rid: int, tmp_path: Path) -> None:
    out = tmp_path / f"report-{rid}"
    r = invoke("report", str(rid), "--db", db, "--no-plots", "--out", str(out))
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in out.iterdir() if p.suffix in {".json", ".md", ".csv"})
    assert "result.json" in files
    for name in files:
        _same(f"report-{rid}/{name}", (out / name).read_text())


def test_stored_results_compare_as_before(db: str) -> None:
    r = invoke("compare", "--db", db, "--from-db", "1", "--from-db", "2", "--export-json", "-",
               "--quiet")
    assert r.exit_code == 0, r.output
    text = r.stdout
    start = text.index("{\n")  # the JSON document; tables may share the captured stream
    _same("compare-1-2.json", text[start:text.rindex("}") + 1])


def test_the_suite_result_states_its_own_threshold(db: str, tmp_path: Path) -> None:
    """Issue 24's bug 1: a suite with threshold = 0.05 writes 0.05 in its result.json, and its
    HTML page and Markdown state that band (both read the plan of the report's Analysis)."""
    import json
    out = tmp_path / "r"
    assert invoke("report", "4", "--db", db, "--no-plots", "--out", str(out)).exit_code == 0
    doc = json.loads((out / "result.json").read_text())
    text = json.dumps(doc)
    assert '"threshold": 0.05' in text and '"threshold": 0.01' not in text
    assert "verdicts against the bands time ±5%" in (out / "index.html").read_text()
    assert "verdicts against the bands time ±5%" in (out / "tables.md").read_text()
