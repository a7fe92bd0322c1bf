"""perflab.quickread: the listing of a SQLite store read with sqlite3 alone is the one
perflab.storage gives, and every store it cannot read as well is left to perflab.storage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cli_helpers import run_cli
from perflab import quickread
from perflab.errors import PerflabError
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
