"""SQL lives only in the store modules.  schema.py (the tables), storage.py (results and runs),
migrations.py (the schema's steps from one version to the next), quickread.py (a SQLite
store's listing through sqlite3 alone, without SQLAlchemy's import), quickwrite.py (what a
measurement stores, through sqlite3 alone), fleet/conn.py (what ``fleet status`` and ``fleet
submit`` read and write through psycopg alone, for the same reason) and one ``store.py`` per
stage (fleet/, history/, profiles/) hold every query; the rest of
perflab calls their functions.  A module elsewhere that imports SQLAlchemy or psycopg, or
holds SQL text, fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import perflab

pytestmark = pytest.mark.unit

SRC = Path(perflab.__file__).parent
# fleet/localpg.py starts a throwaway PostgreSQL server for tests and benchmarks and creates
# its databases (CREATE DATABASE needs autocommit, outside any store): server administration,
# not perflab's data.
ADMIN = {"fleet/localpg.py"}
DRIVERS = {"sqlalchemy", "sqlite3"}
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+"
                      r"(TABLE|INDEX|DATABASE)|ALTER\s+TABLE|DROP\s+TABLE)\b")


def _is_store(rel: str) -> bool:
    return (rel in ("storage.py", "schema.py", "migrations.py", "quickread.py", "quickwrite.py",
                    "fleet/conn.py")
            or rel.endswith("/store.py"))


def offenders() -> list[str]:
    found = []
    for f in sorted(SRC.rglob("*.py")):
        rel = f.relative_to(SRC).as_posix()
        if _is_store(rel) or rel in ADMIN:
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                found += [f"{rel}:{node.lineno}: imports {n}" for n in names
                          if n.split(".")[0] in DRIVERS]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and SQL_TEXT.match(node.value):
                found.append(f"{rel}:{node.lineno}: SQL text {node.value[:40]!r}")
    return found


def test_sql_only_in_the_store_modules() -> None:
    assert offenders() == [], "move these into storage.py or the stage's store.py"


def test_the_check_sees_sql_and_drivers(tmp_path: Path) -> None:
    """The check itself: SQL text and a driver import are caught, prose is not."""
    assert SQL_TEXT.match("SELECT id FROM results")
    assert SQL_TEXT.match("  delete from runs".upper())
    assert not SQL_TEXT.match("Select the metric to report")
    assert not SQL_TEXT.match("update the README")
