"""The listing of a SQLite result store read with the standard library's sqlite3, for
``perflab results list``.

perflab.storage reads and writes every store through SQLAlchemy, whose package loads its
engine, SQL compiler and schema modules whatever is asked of it: 165-190 ms of CPU
(``python -X importtime``), 1.3 times numpy's whole import, so a listing through it cannot
come near numpy's cost (docs/benchmarks.md).  A listing is one query, so it is made here with
sqlite3 (5 ms to import) when the store is a plain SQLite file of this perflab's schema, sound
and not in the middle of a run; anything else (a server URL, a missing, older, newer or damaged
file, a result still marked running, whose owner must be checked) is answered None, and the
caller asks perflab.storage, which opens, upgrades, checks and explains as always.
test_quickread checks that both give the same listing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

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


def list_results(db: str | Path | None, limit: int | None) -> tuple[list[dict[str, Any]],
                                                                     int] | None:
    """(the newest ``limit`` results, newest first, as Store.list_results gives them; how many
    are stored), or None when the store is not one this can read (see the module)."""
    path = Path(db) if db is not None else default_path()
    if "://" in str(db or "") or str(db or "").startswith("sqlite:") or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                               timeout=10.0)
    except sqlite3.Error:
        return None
    try:
        with contextlib.closing(conn):
            return _read(conn, limit)
    except sqlite3.Error:
        return None


def _read(conn: sqlite3.Connection, limit: int | None) -> tuple[list[dict[str, Any]],
                                                                 int] | None:
    version = conn.execute("SELECT value FROM perflab_meta WHERE key = 'schema_version'"
                           ).fetchone()
    if version is None or int(version[0]) != SCHEMA_VERSION:
        return None
    if [r[0] for r in conn.execute("PRAGMA quick_check(5)")] != ["ok"]:
        return None  # damaged: perflab.storage names it, with its fix
    conn.row_factory = sqlite3.Row
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
