"""Storage faults: damaged, truncated, foreign or unreachable databases, full disks, read-only
places, and several processes writing at once.  Each test asserts the exit code, one error line
naming the problem and the fix, no traceback, and the store's counts (or bytes) before and
after: a database perflab refuses is left untouched.

Tests that need an unprivileged user run perflab as ``nobody`` (setpriv); the disk-full test
mounts a small tmpfs (root).  Both skip with the reason when the machine cannot.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from faults.helpers import Outcome, Perflab, as_nobody, counts

pytestmark = pytest.mark.system

QUICK = ("-r", "3", "-w", "0", "--no-counters", "--", "/bin/true")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


@pytest.fixture
def good_db(perflab: Perflab) -> Path:
    """A database with two stored results (6 runs), checkpointed into the main file."""
    for _ in range(2):
        perflab("stat", *QUICK).succeeds()
    con = sqlite3.connect(perflab.db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return perflab.db


def refused_untouched(perflab: Perflab, db: Path, *words: str) -> None:
    """stat and results list both refuse ``db`` with one line; its bytes and its directory stay
    exactly as they were (no -wal written, no schema added)."""
    before, names = digest(db), siblings(db)
    for args in (("stat", *QUICK), ("results", "list")):
        out = perflab(*args, "--db", str(db)) if args[0] == "results" else \
            perflab(args[0], "--db", str(db), *args[1:])
        out.fails(2, *words, fix="move it aside")
    assert digest(db) == before, "a refused database was written to"
    assert siblings(db) == names


# -- damaged files -----------------------------------------------------------------------------

def test_garbage_file_is_refused_untouched(perflab: Perflab, tmp_path: Path) -> None:
    db = tmp_path / "garbage.sqlite"
    db.write_bytes(b"this is not a database at all\n" * 200)
    refused_untouched(perflab, db, "corrupt", "not a SQLite file")


def test_truncated_database_is_refused_untouched(perflab: Perflab, good_db: Path,
                                                 tmp_path: Path) -> None:
    db = tmp_path / "cut.sqlite"
    data = good_db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 100])  # not even a whole page
    refused_untouched(perflab, db, "corrupt", "truncated")


def test_truncated_at_a_page_boundary_is_refused(perflab: Perflab, good_db: Path,
                                                 tmp_path: Path) -> None:
    db = tmp_path / "cut.sqlite"
    data = good_db.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    db.write_bytes(data[: page * 3])  # whole pages, fewer than the header says
    refused_untouched(perflab, db, "corrupt", "truncated")


def test_damaged_pages_behind_a_valid_header_are_refused_untouched(
        perflab: Perflab, good_db: Path, tmp_path: Path) -> None:
    """Valid header, damaged b-tree pages: SQLite itself would happily append to it."""
    db = tmp_path / "damaged.sqlite"
    data = bytearray(good_db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for p in range(2, len(data) // page):
        data[p * page + 8: p * page + 60] = b"\x07" * 52
    db.write_bytes(bytes(data))
    refused_untouched(perflab, db, "corrupt", "damaged pages")


def test_zero_length_file_is_a_new_database(perflab: Perflab, tmp_path: Path) -> None:
    db = tmp_path / "empty.sqlite"
    db.touch()
    perflab("stat", "--db", str(db), *QUICK).succeeds()
    assert counts(db).runs == 3


def test_missing_column_names_the_column_not_permissions(perflab: Perflab,
                                                         good_db: Path) -> None:
    con = sqlite3.connect(good_db)
    con.execute("ALTER TABLE runs DROP COLUMN load1")
    con.commit()
    con.close()
    before = counts(good_db)
    out = perflab("stat", *QUICK)
    line = out.fails(2, "runs", "load1", "another perflab version", fix="move it aside")
    assert "permission" not in line
    assert counts(good_db) == before  # refused before measuring: nothing half-stored


def test_missing_table_is_created_beside_the_data(perflab: Perflab, good_db: Path) -> None:
    """A database from before the profiles table: the table is added, the runs are kept."""
    con = sqlite3.connect(good_db)
    con.execute("DROP TABLE profiles")
    con.commit()
    con.close()
    perflab("stat", *QUICK).succeeds()
    assert counts(good_db).runs == 9


def test_newer_schema_version_is_refused_untouched(perflab: Perflab, good_db: Path) -> None:
    con = sqlite3.connect(good_db)
    con.execute("UPDATE perflab_meta SET value = '999' WHERE key = 'schema_version'")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = digest(good_db)
    for args in (("stat", *QUICK), ("results", "list")):
        perflab(*args).fails(2, "newer perflab", "999", fix="upgrade perflab")
    assert digest(good_db) == before


# -- paths ---------------------------------------------------------------------------------------

def test_db_path_is_a_directory(perflab: Perflab, tmp_path: Path) -> None:
    d = tmp_path / "adir"
    d.mkdir()
    out = perflab("stat", "--db", str(d), *QUICK)
    out.fails(2, "is a directory", str(d), fix="--db")
    assert list(d.iterdir()) == []


def test_db_directory_blocked_by_a_file(perflab: Perflab, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    out = perflab("stat", "--db", str(tmp_path / "afile" / "sub" / "r.sqlite"), *QUICK)
    out.fails(2, "cannot create the directory", "is a file, not a directory",
              fix="writable directory")


def test_db_in_nonexistent_directory_is_created(perflab: Perflab, tmp_path: Path) -> None:
    db = tmp_path / "new" / "deeper" / "r.sqlite"
    perflab("stat", "--db", str(db), *QUICK).succeeds()
    assert counts(db).runs == 3


# -- an unprivileged user: read-only places ------------------------------------------------------

def stat_as_nobody(db: Path, shared_dir: Path) -> Outcome:
    """``stat`` run by nobody against ``db``, with a cache of its own and no home."""
    return as_nobody(["stat", *QUICK], {"PERFLAB_DB": str(db), "HOME": "/nonexistent",
                                        "PERFLAB_CACHE": str(shared_dir / "cache")}, shared_dir)


def test_new_db_in_a_read_only_directory(shared_dir: Path) -> None:
    ro = shared_dir / "ro"
    ro.mkdir(mode=0o755)  # root's: nobody may not create files in it
    db = ro / "r.sqlite"
    out = stat_as_nobody(db, shared_dir)
    out.fails(2, str(db), "not writable", fix="--db")
    assert not db.exists()


def test_existing_db_in_a_read_only_directory(perflab: Perflab, shared_dir: Path) -> None:
    ro = shared_dir / "ro"
    ro.mkdir(mode=0o755)
    db = ro / "r.sqlite"
    perflab("stat", "--db", str(db), *QUICK).succeeds()
    db.chmod(0o644)
    before = digest(db)
    out = stat_as_nobody(db, shared_dir)
    out.fails(2, str(db), "not writable", fix="--db")
    assert digest(db) == before and counts(db).runs == 3


def test_db_directory_that_cannot_be_created(shared_dir: Path) -> None:
    ro = shared_dir / "ro"
    ro.mkdir(mode=0o755)
    out = stat_as_nobody(ro / "sub" / "r.sqlite", shared_dir)
    out.fails(2, "cannot create the directory", "Permission denied", fix="--db")


@contextmanager
def tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """``mnt`` with a tmpfs of ``size`` mounted on it for the block; skips where mounting is not
    permitted (not root, no mount, a container that forbids it)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip(f"needs root to mount a {size} tmpfs")
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("mount is not permitted here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_read_only_file_system(perflab: Perflab, tmp_path: Path) -> None:
    """A database on a file system mounted read-only (a backup, a CI cache)."""
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        db = mnt / "r.sqlite"
        perflab("stat", "--db", str(db), *QUICK).succeeds()
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        out = perflab("stat", "--db", str(db), *QUICK)
        out.fails(2, str(db), "not writable", fix="--db")
        # The verbs that only read open it read-only (they said "not writable" too).
        listed = perflab("results", "list", "--db", str(db))
        listed.succeeds()
        assert "/bin/true" in listed.stdout and " 3 " in listed.stdout
        perflab("results", "show", "1", "--db", str(db)).succeeds()
        perflab("detect", "--db", str(db)).succeeds()
        assert sorted(p.name for p in mnt.iterdir()) == ["r.sqlite"]  # nothing written beside
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        assert counts(db).runs == 3


# -- a full disk ---------------------------------------------------------------------------------

def test_disk_full_mid_measurement(perflab: Perflab, tmp_path: Path) -> None:
    """The disk fills while runs are being stored: one line naming the full disk; every run
    stored before is kept and readable; the result does not stay 'running'."""
    with tmpfs(tmp_path / "small", "2m") as mnt:
        db = mnt / "r.sqlite"
        perflab("stat", "--db", str(db), *QUICK).succeeds()
        # Fill the disk, then give back a few pages: some runs fit, then it is full.
        filler = mnt / "filler"
        with filler.open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        os.truncate(filler, max(0, filler.stat().st_size - 6 * 4096))
        out = perflab("stat", "--db", str(db), "-r", "500", "-w", "0", "--no-counters", "--",
                      "/bin/true")
        out.fails(2, "full", str(db), fix="free some space")
        filler.unlink()  # space again: the store must be intact and readable
        c = counts(db)
        assert c.runs >= 3
        listed = perflab("results", "list", "--db", str(db))
        listed.succeeds()
        assert "running" not in listed.stdout
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()


def test_checkpoint_cut_short_by_a_full_disk_is_not_corruption(perflab: Perflab,
                                                                  tmp_path: Path) -> None:
    """A full disk during a WAL checkpoint leaves the main file shorter than its header says
    while the -wal file still holds every page: a healthy database (SQLite's integrity check
    says ok), which perflab once called truncated, advising to move it aside.  Built here as
    the checkpoint leaves it: the main file of the first result, the header and the first
    pages of the second written back, the rest still only in the WAL."""
    src = tmp_path / "src"
    src.mkdir()
    db = src / "r.sqlite"
    perflab("stat", "--db", str(db), *QUICK).succeeds()
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    before = db.stat().st_size
    holder = sqlite3.connect(db)  # an open reader: the writer's close cannot checkpoint
    holder.execute("SELECT count(*) FROM runs").fetchone()
    perflab("stat", "--db", str(db), "-r", "300", "-w", "0", "--no-counters", "--",
            "/bin/true").succeeds()
    broken = tmp_path / "broken"
    whole = tmp_path / "whole"
    for d in (broken, whole):
        d.mkdir()
        shutil.copy(db, d / "r.sqlite")
        shutil.copy(f"{db}-wal", d / "r.sqlite-wal")
    holder.close()
    con = sqlite3.connect(whole / "r.sqlite")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    full = (whole / "r.sqlite").read_bytes()
    assert len(full) > before + 2 * page, "the second result did not grow the file"
    bad = broken / "r.sqlite"
    bad.write_bytes(full[:before + page])  # header says len(full); the disk took one page more
    assert (broken / "r.sqlite-wal").stat().st_size > 0
    listed = perflab("results", "list", "--db", str(bad))
    listed.succeeds()
    assert "corrupt" not in listed.stderr
    assert counts(bad).runs == 3 + 300  # every run, read through the WAL
    perflab("stat", "--db", str(bad), *QUICK).succeeds()  # and it takes new runs
    con = sqlite3.connect(bad)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


# -- several processes -----------------------------------------------------------------------------

def _start_many(perflab: Perflab, n: int, runs: int) -> list[subprocess.Popen[bytes]]:
    return [perflab.popen("stat", "-r", str(runs), "-w", "0", "--no-counters", "--",
                          "/bin/true") for _ in range(n)]


def _wait_all(procs: list[subprocess.Popen[bytes]]) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        out.append((p.returncode, err.decode(errors="replace")))
    return out


def test_several_processes_first_create_the_same_db(perflab: Perflab) -> None:
    """Six perflabs started at once on a database that does not exist yet."""
    assert not perflab.db.exists()
    results = _wait_all(_start_many(perflab, 6, 3))
    for code, err in results:
        assert code == 0, err
        assert "Traceback" not in err
    c = counts(perflab.db)
    assert (c.results, c.runs, c.statuses) == (6, 18, {"complete": 6})
    con = sqlite3.connect(perflab.db)
    assert con.execute("SELECT count(*) FROM machines").fetchone()[0] == 1
    con.close()


def test_concurrent_writers_lose_nothing(perflab: Perflab, good_db: Path) -> None:
    before = counts(good_db)
    results = _wait_all(_start_many(perflab, 4, 20))
    for code, err in results:
        assert code == 0, err
    c = counts(good_db)
    assert c.results == before.results + 4 and c.runs == before.runs + 80
    assert c.statuses == {"complete": before.results + 4}


def test_reader_while_a_writer_measures(perflab: Perflab, good_db: Path) -> None:
    """The integrity check on open must not mistake a busy database for a damaged one."""
    p = perflab.popen("stat", "-r", "300", "-w", "0", "--no-counters", "--", "/bin/true")
    try:
        for _ in range(5):
            out = perflab("results", "list")
            out.succeeds()
            time.sleep(0.1)
    finally:
        _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert counts(good_db).runs == 306
