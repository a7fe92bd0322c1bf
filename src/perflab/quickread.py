"""A SQLite result store read with the standard library's sqlite3: the listing of
``perflab results list`` and the result of ``perflab results show``.

perflab.storage reads and writes every store through SQLAlchemy, whose package loads its
engine, SQL compiler and schema modules whatever is asked of it: 165-190 ms of CPU
(``python -X importtime``), 1.3 times numpy's whole import, so a listing or one result read
through it cannot come near numpy's cost (docs/benchmarks.md).  Each is a few queries, so they
are made here with sqlite3 (5 ms to import) when the store is a plain SQLite file of this
perflab's schema, sound and not in the middle of a run; anything else (a server URL, a missing,
older or newer file, one it cannot open read-only, a result still marked running, whose owner
must be checked, an id it does not hold) is answered None, and the caller asks
perflab.storage, which opens, upgrades, checks and explains as always.  The integrity check of
a SQLite file before it is opened is kept here, for both, and so is the one builder of a
ResultSet from its stored rows (result_from_rows), which Store.load calls too.  The tables are
schema.py's; _JSON and _BOOLEAN name the columns whose values SQLAlchemy decodes, and
test_quickread checks them against schema.py and that both paths give the same listing and
the same result, field by field.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from perflab.errors import PerflabError

if TYPE_CHECKING:
    from perflab.model import ResultSet

T = TypeVar("T")

# The version of the store's tables this perflab reads and writes (perflab.storage imports it
# from here).  Raise it with every change to a table or to what a stored value means; older
# databases are brought up to date by perflab.migrations, one step per version.
SCHEMA_VERSION = 6

_LIST = """
SELECT r.id, r.kind, r.label, r.created_at, r.status, r."commit", r.machine_id,
       count(DISTINCT c.id) AS configs,
       count(u.id) FILTER (WHERE NOT coalesce(u.warmup, 0)) AS runs
FROM results AS r
LEFT OUTER JOIN configurations AS c ON r.id = c.result_id
LEFT OUTER JOIN runs AS u ON c.id = u.configuration_id
GROUP BY r.id ORDER BY r.id DESC LIMIT ?
"""


def default_path() -> Path:
    """The store a verb uses without --db: $PERFLAB_DB, else results.sqlite in the user data
    directory (perflab.storage.default_db_path)."""
    env = os.environ.get("PERFLAB_DB")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("perflab")) / "results.sqlite"


# The columns schema.py declares sa.JSON (stored as JSON text) and sa.Boolean (stored as 0/1),
# per table, of the tables a result is read from: what SQLAlchemy decodes and sqlite3 does not.
_JSON = {"results": ("fingerprint", "settings", "metrics", "notes"),
         "configurations": ("command", "env", "params"), "runs": ("values",)}
_BOOLEAN = {"results": ("dirty",), "configurations": ("shell", "is_baseline"),
            "runs": ("warmup",)}


def list_results(db: str | Path | None, limit: int | None) -> tuple[list[dict[str, Any]],
                                                                     int] | None:
    """(the newest ``limit`` results, newest first, as Store.list_results gives them; how many
    are stored), or None when the store is not one this can read (see the module)."""
    path = _located(db)
    return None if path is None else _reading(path, lambda conn: _list(conn, limit))


def load_result(db: str | Path | None, result_id: int) -> tuple[ResultSet, str] | None:
    """(result ``result_id`` as Store.load gives it, the store's location as Store names it),
    or None when the store is not one this can read, or the result is still marked running or
    not there (see the module)."""
    path = _located(db)
    loaded = None if path is None else _reading(path, lambda conn: _load(conn, result_id))
    return None if loaded is None else (loaded, str(path))


def _located(db: str | Path | None) -> Path | None:
    """The SQLite file ``db`` names (None: the default store), or None for a URL or no file."""
    path = Path(db) if db is not None else default_path()
    if "://" in str(db or "") or str(db or "").startswith("sqlite:") or not path.is_file():
        return None
    return path


def _reading(path: Path, read: Callable[[sqlite3.Connection], T | None]) -> T | None:
    """``read`` of the SQLite file ``path`` opened read-only, in one transaction (one snapshot),
    when it is sound and of this perflab's schema; None otherwise or when a query fails."""
    check_sqlite_integrity(path)  # a damaged file: the line perflab.storage gives, untouched
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                               timeout=10.0)
    except sqlite3.Error:
        return None
    try:
        with contextlib.closing(conn):
            conn.execute("BEGIN")
            version = conn.execute(
                "SELECT value FROM perflab_meta WHERE key = 'schema_version'").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                return None
            conn.row_factory = sqlite3.Row
            return read(conn)
    except sqlite3.Error:
        return None


def _list(conn: sqlite3.Connection, limit: int | None) -> tuple[list[dict[str, Any]],
                                                                 int] | None:
    listed = []
    for row in conn.execute(_LIST, (-1 if limit is None else limit,)):
        if row["status"] == "running":
            return None  # whether its owner still lives is perflab.storage's to say
        d = dict(row)
        d["names"] = [n for (n,) in conn.execute(
            "SELECT DISTINCT name FROM configurations WHERE result_id = ?", (d["id"],))]
        listed.append(d)
    stored = conn.execute("SELECT count(*) FROM results").fetchone()[0]
    return listed, int(stored)


def _load(conn: sqlite3.Connection, result_id: int) -> ResultSet | None:
    row = conn.execute("SELECT * FROM results WHERE id = ?", (result_id,)).fetchone()
    if row is None or row["status"] == "running":
        return None  # the line naming a missing id, and a running owner: perflab.storage's
    cfg_rows = conn.execute("SELECT * FROM configurations WHERE result_id = ? ORDER BY id",
                            (result_id,)).fetchall()
    run_rows = conn.execute(
        "SELECT runs.* FROM runs JOIN configurations AS c ON c.id = runs.configuration_id "
        "WHERE c.result_id = ? ORDER BY runs.seq, runs.id", (result_id,))
    return result_from_rows(_decoded("results", row),
                            [_decoded("configurations", c) for c in cfg_rows],
                            (_decoded("runs", r) for r in run_rows))


def _decoded(table: str, row: sqlite3.Row) -> dict[str, Any]:
    """A row as SQLAlchemy gives it: JSON text decoded, 0/1 as bool (NULL stays None)."""
    d = dict(row)
    for name in _JSON[table]:
        if d[name] is not None:
            d[name] = json.loads(d[name])
    for name in _BOOLEAN[table]:
        if d[name] is not None:
            d[name] = bool(d[name])
    return d


def result_from_rows(row: Mapping[str, Any], cfg_rows: Iterable[Mapping[str, Any]],
                     run_rows: Iterable[Mapping[str, Any]]) -> ResultSet:
    """The ResultSet of a result's stored rows, decoded (its results row, its configurations
    rows in id order, their runs rows in seq order): for Store.load and load_result alike.  The
    status is the stored one; whether a running result's owner still lives is the caller's."""
    from perflab.metrics import MetricInfo
    from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

    rs = ResultSet(
        kind=row["kind"], label=row["label"] or "", created_at=row["created_at"],
        status=row["status"], fingerprint=Fingerprint.from_json(row["fingerprint"]),
        commit=row["commit"], dirty=row["dirty"], repo=row["repo"],
        settings=Settings.from_dict(row["settings"]),
        metrics={k: MetricInfo.from_dict(k, v) for k, v in (row["metrics"] or {}).items()},
        notes=list(row["notes"] or []), id=row["id"])
    if "machine_id" not in rs.fingerprint.stored_keys:
        rs.fingerprint.machine_id = row["machine_id"]
    by_id: dict[int, Configuration] = {}
    for c in cfg_rows:
        cfg = Configuration(
            name=c["name"], command=list(c["command"]), benchmark=c["benchmark"],
            params=c["params"] or {}, is_baseline=bool(c["is_baseline"]), commit=c["commit"],
            shell=bool(c["shell"]), env=c["env"] or {}, id=c["id"], cell=c["cell"])
        by_id[c["id"]] = cfg
        rs.configurations.append(cfg)
    for r in run_rows:
        by_id[r["configuration_id"]].runs.append(Run(
            seq=r["seq"], values=dict(r["values"]), status=r["status"],
            exit_code=r["exit_code"], warmup=bool(r["warmup"]),
            started_at=r["started_at"] or 0.0, load1=r["load1"], error=r["error"] or "",
            id=r["id"]))
    rs.name_metrics_of_runs()
    return rs


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_sqlite_integrity(path: Path) -> None:
    """PRAGMA quick_check through a read-only connection: O(pages) but no index cross-check,
    so it stays cheap (docs/reliability.md has its cost), and a damaged file is never written."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # new database: nothing to check
    if size == 0:
        return
    fix = ("move it aside (mv it to a .bak file) and run again, or pass --db with another file; "
           "'sqlite3 FILE .recover' may rescue its rows")
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError as e:
        raise PerflabError(f"cannot read the result database {path} ({e.strerror})",
                           "check its permissions, or pass --db") from None
    if not head.startswith(SQLITE_MAGIC):
        raise PerflabError(f"the result database {path} is corrupt (not a SQLite file)", fix)
    page = int.from_bytes(head[16:18], "big") if len(head) == 100 else 0
    page = 65536 if page == 1 else page
    # The header's page count is valid when its change counter matches (sqlite.org/fileformat).
    pages = int.from_bytes(head[28:32], "big") if head[24:28] == head[92:96] else 0
    # A checkpoint cut short (a full disk) leaves the main file shorter than its header says
    # while the -wal file still holds those pages: SQLite reads them from there, so the file is
    # only judged short when there is no WAL to read; quick_check below decides otherwise.
    try:
        wal_frames = Path(f"{path}-wal").stat().st_size > 32  # more than the WAL header
    except OSError:
        wal_frames = False
    short = size < pages * page and not wal_frames
    if len(head) < 100 or page < 512 or size % page or short:
        raise PerflabError(f"the result database {path} is corrupt (truncated: {size} bytes"
                           + (f" of {pages * page}" if pages * page > size else "") + ")", fix)
    # A WAL database opened even read-only gets -wal and -shm files; if we refuse it, remove
    # the ones we made, so a refused database is left exactly as it was found.
    made = [p for p in (Path(f"{path}-wal"), Path(f"{path}-shm")) if not p.exists()]
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.Error:
        return  # not openable read-only (permissions): the engine says why, below
    problem = ""
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
        if rows != ["ok"]:
            first = rows[0].replace("*** in database main ***", "").strip().splitlines()[0]
            problem = f"damaged pages: {first}"
    except sqlite3.DatabaseError as e:
        text = str(e)
        # Only damage counts here; a lock, a full disk or a read-only place is the engine's to
        # name below, with its own fix.
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            problem = text
    finally:
        conn.close()
    if problem:
        for p in made:
            with contextlib.suppress(OSError):
                if p.name.endswith("-shm") or p.stat().st_size == 0:
                    p.unlink()  # an index we made, or a log with nothing in it
        raise PerflabError(f"the result database {path} is corrupt ({problem})", fix)
