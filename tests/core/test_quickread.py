"""perflab.quickread: the listing and a result of a SQLite store read with sqlite3 alone are
the ones perflab.storage gives, and every store it cannot read as well is left to
perflab.storage."""

from __future__ import annotations

import dataclasses
import math
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_cli
from perflab import quickread, schema
from perflab.errors import PerflabError
from perflab.imports import import_file
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.unit


def _result(i: int, names: list[str], status: str = "complete", label: str = "") -> ResultSet:
    rs = ResultSet(kind="stat" if i % 2 else "compare", commit=f"{i:040x}" if i % 3 else None,
                   dirty=False, status=status, created_at=1.0e9 + i * 60, label=label,
                   fingerprint={"hostname": "h"})
    for name in names:
        cfg = Configuration(name=name, command=["x", name], benchmark=f"b{i % 2}")
        cfg.runs = [Run(seq=j, warmup=j == 0, values={"wall_time": 1.0 + j}) for j in range(i + 2)]
        rs.configurations.append(cfg)
    return rs


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "r.sqlite"
    s = Store(path)
    s.save(_result(1, ["a"], label="first"))
    s.save(_result(2, ["a", "b"]))
    s.save(_result(3, []))  # no configurations: 0 runs
    s.save(_result(4, ["b", "a", "c"], status="interrupted", label="a label"))
    s.engine.dispose()
    return path


@pytest.mark.parametrize("limit", [None, 1, 2, 30])
def test_the_listing_is_the_stores_own(store: Path, limit: int | None) -> None:
    s = Store(store, read_only=True)
    quick = quickread.list_results(store, limit)
    assert quick == (s.list_results(limit), s.count_results())
    assert quick is not None and len(quick[0]) == (4 if limit is None else min(limit, 4))


def test_results_list_prints_the_same_either_way(store: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    args = ["results", "list", "--db", str(store), "--limit", "3"]
    quick = run_cli(args, capsys)
    monkeypatch.setattr(quickread, "list_results", lambda db, limit: None)
    assert run_cli(args, capsys) == quick
    assert quick[0] == 0 and "a label" in quick[1] and "showing 3 of 4" in quick[1]


def _set_version(path: Path, version: int) -> None:
    with sqlite3.connect(path) as c:
        c.execute("UPDATE perflab_meta SET value = ? WHERE key = 'schema_version'", (version,))


def test_what_it_leaves_to_the_store(store: Path, tmp_path: Path) -> None:
    assert quickread.list_results(tmp_path / "missing.sqlite", 30) is None
    assert quickread.list_results(f"sqlite:///{store}", 30) is None
    assert quickread.list_results("postgresql://u@localhost/db", 30) is None
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    names = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(PerflabError, match="corrupt"):  # the store's own line, nothing written
        quickread.list_results(tmp_path / "junk.sqlite", 30)
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    for version in (quickread.SCHEMA_VERSION - 1, quickread.SCHEMA_VERSION + 1):
        _set_version(store, version)
        assert quickread.list_results(store, 30) is None
    _set_version(store, quickread.SCHEMA_VERSION)
    assert quickread.list_results(store, 30) is not None


def test_a_running_result_is_left_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    Store(path).save(_result(1, ["a"], status="running"))
    assert quickread.list_results(path, 30) is None


def test_the_default_store_is_the_stores_default(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    from perflab.storage import default_db_path

    monkeypatch.delenv("PERFLAB_DB", raising=False)
    assert quickread.default_path() == default_db_path()
    assert quickread.default_path().name == "results.sqlite"
    monkeypatch.setenv("PERFLAB_DB", str(tmp_path / "x.sqlite"))
    assert quickread.default_path() == default_db_path() == tmp_path / "x.sqlite"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def kinds(tmp_path: Path) -> Path:
    """A store at this schema of every kind of result: schema4/results.db's stat, compare,
    hyperfine import and suite matrix (real runs with counters, fingerprints and notes),
    upgraded, and harness imports (BenchmarkDotNet with its memory figures, Google
    Benchmark's repetitions, pyperf's warm-up runs) and a result with no configurations
    stored beside them."""
    path = tmp_path / "kinds.sqlite"
    shutil.copy(FIXTURES / "core" / "schema4" / "results.db", path)
    s = Store(path)  # upgraded to SCHEMA_VERSION
    for f in ("imports/benchmarkdotnet/ubuntu-x64/base/Perflab.Fixture.StringOps-report-full.json",
              "imports/gbench-repetitions.json", "history/pyperf-timeit.json"):
        rs = import_file(FIXTURES / f, None)
        rs.status, rs.commit, rs.dirty = "complete", "ab" * 20, True  # as `perflab import` does
        s.save(rs)
    s.save(_result(3, [], label="nothing measured"))  # no configurations, no runs
    s.engine.dispose()
    return path


def _same(a: Any, b: Any, where: str) -> None:
    """``a`` and ``b`` equal field by field, of the same types all the way down (True is not
    1, a str is not a Note), NaN equal to NaN; ``where`` names the field that differs."""
    assert type(a) is type(b), (where, type(a), type(b))
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def test_every_kind_of_result_loads_as_the_store_loads_it(kinds: Path) -> None:
    s = Store(kinds, read_only=True)
    ids = s.result_ids()
    assert {s.load(i).kind for i in ids} >= {"stat", "compare", "import", "suite"}
    for rid in ids:
        stored = s.load(rid)
        quick = quickread.load_result(kinds, rid)
        assert quick is not None, rid
        _same(quick[0], stored, f"result {rid}")
        assert quick[1] == s.location
    loaded = [s.load(i) for i in ids]
    # the comparison is not vacuous: what it walks holds notes, counters, a fingerprint,
    # warm-up runs, baselines and a matrix's parameters
    assert any(rs.notes for rs in loaded)
    assert any("context_switches" in rs.metrics for rs in loaded)
    assert any(rs.fingerprint.hostname for rs in loaded) and any(rs.dirty for rs in loaded)
    assert any(r.warmup for rs in loaded for c in rs.configurations for r in c.runs)
    assert any(c.is_baseline for rs in loaded for c in rs.configurations)
    assert any(c.params for rs in loaded for c in rs.configurations)


def test_it_decodes_the_columns_schema_declares(kinds: Path) -> None:
    """quickread decodes the JSON and Boolean columns of schema.py's tables, each of them."""
    import sqlalchemy as sa

    for table in ("results", "configurations", "runs"):
        columns = schema.metadata.tables[table].columns
        assert set(quickread._JSON[table]) == {c.name for c in columns
                                              if isinstance(c.type, sa.JSON)}, table
        assert set(quickread._BOOLEAN[table]) == {c.name for c in columns
                                                 if isinstance(c.type, sa.Boolean)}, table


def test_results_show_prints_the_same_either_way(kinds: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    for rid in Store(kinds, read_only=True).result_ids():
        args = ["results", "show", str(rid), "--db", str(kinds)]
        quick = run_cli(args, capsys)
        with monkeypatch.context() as m:
            m.setattr(quickread, "load_result", lambda db, result_id: None)
            assert run_cli(args, capsys) == quick
        assert quick[0] == 0 and f"result {rid} in {kinds}" in quick[1]


def test_what_show_leaves_to_the_store(kinds: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert quickread.load_result(tmp_path / "missing.sqlite", 1) is None
    assert quickread.load_result(f"sqlite:///{kinds}", 1) is None
    assert quickread.load_result(kinds, 999) is None
    code, _, err = run_cli(["results", "show", "999", "--db", str(kinds)], capsys)
    assert code == 2 and "no result with id 999" in err  # the store's own line
    _set_version(kinds, quickread.SCHEMA_VERSION + 1)
    assert quickread.load_result(kinds, 1) is None
    path = tmp_path / "r.sqlite"
    Store(path).save(_result(1, ["a"], status="running"))
    assert quickread.load_result(path, 1) is None
