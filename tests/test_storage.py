"""The store: round trips, per-run saving, and a locked or corrupt database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.model import BUILTIN_METRICS, Configuration, ResultSet, Run
from perflab.storage import Store


def make_result() -> ResultSet:
    rs = ResultSet(kind="compare", fingerprint={"hostname": "h", "cpu_model": "X", "cpu_count": 2},
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]}, commit="abc123",
                   dirty=False, settings={"interleaved": True}, notes=["a note"])
    for name, base in (("A", True), ("B", False)):
        cfg = Configuration(name=name, command=["prog", name], benchmark="prog",
                            params={"depth": 10}, is_baseline=base, cell="{}")
        cfg.runs = [Run(seq=i, values={"wall_time": 1.0 + i / 10}, warmup=i == 0)
                    for i in range(4)]
        rs.configurations.append(cfg)
    return rs


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    rs = make_result()
    rid = store.save(rs)
    back = store.load(rid)
    assert back.kind == "compare" and back.commit == "abc123" and back.notes == ["a note"]
    assert [c.name for c in back.configurations] == ["A", "B"]
    a = back.configurations[0]
    assert a.is_baseline and a.params == {"depth": 10} and a.cell == "{}"
    assert a.samples("wall_time") == [1.1, 1.2, 1.3]  # the warm-up run is kept but not analysed
    assert len(a.runs) == 4 and a.runs[0].warmup
    assert back.metrics["wall_time"].unit == "s"
    listed = store.list_results()
    assert listed[0]["id"] == rid and listed[0]["runs"] == 8 and listed[0]["names"] == ["A", "B"]


def test_one_machine_row_per_machine(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    a, b = store.save(make_result()), store.save(make_result())
    assert store.load(a).fingerprint["machine_id"] == store.load(b).fingerprint["machine_id"]


def test_unknown_id_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="no result with id 99"):
        Store(tmp_path / "r.sqlite").load(99)


def test_corrupt_database_is_named_with_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(PerflabError) as e:
        Store(bad)
    assert "corrupt" in e.value.problem and "move it aside" in e.value.fix
    assert bad.read_bytes().startswith(b"this is not")  # nothing was overwritten


def test_locked_database_is_named_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = Store(path, lock_timeout=0.2)
    rid = store.save(make_result())
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(PerflabError, match="locked"):
            store.save(make_result())
    finally:
        holder.rollback()
        holder.close()
    assert store.load(rid).configurations[1].samples("wall_time") == [1.1, 1.2, 1.3]
