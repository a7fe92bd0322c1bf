"""A result's stored settings and fingerprint are read through their typed records only (issue
24): no ``.get(``, ``.setdefault(`` or ``["key"]`` on a result's settings, its suite entry, its
plan, owner or fingerprint anywhere in src/perflab except the records' own ``from_json`` /
``from_dict``, which read every stored version once.

What counts as a record: an attribute or a raw row column named like one (``rs.settings``,
``rs.settings.suite``, ``rs.fingerprint``, ``row["settings"]``, ``d.pop("settings")``), ``x or
{}`` of one, and a local name bound to one (``info = rs.settings.suite``).  Free-form tables a
record carries (a suite's ``report``, ``Settings.extra``: what only one kind of result keeps)
are dicts by design and not checked.  An ast walk over the standard library's ``ast``, as
test_import_graph.py does: a linter plugin for one rule is not worth a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"
RECORDS = ("settings", "fingerprint", "suite", "comparison", "owner", "primary_choice", "stop")
READERS = ("from_json", "from_dict")  # where a record reads what was stored


def _key(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _is_record(e: ast.expr, bound: set[str]) -> bool:
    while isinstance(e, ast.BoolOp) and isinstance(e.op, ast.Or):  # `x or {}` reads x
        e = e.values[0]
    if isinstance(e, ast.Attribute):  # not a table's column in SQL (results.c.settings)
        column = isinstance(e.value, ast.Attribute) and e.value.attr == "c"
        return e.attr in RECORDS and not column
    if isinstance(e, ast.Name):
        return e.id in bound
    if isinstance(e, ast.Subscript):  # a raw row's column: row["settings"]
        return _key(e.slice) in RECORDS
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.args:
        return e.func.attr in ("get", "pop") and _key(e.args[0]) in RECORDS
    return False


def untyped_reads(source: str, where: str = "<src>") -> list[str]:
    """Every dict-style read of a stored record outside its readers: "where:line: code"."""
    out: set[str] = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.name in READERS:
            continue
        bound = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign)
                 and _is_record(n.value, set()) for t in n.targets if isinstance(t, ast.Name)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                bad = n.func.attr in ("get", "setdefault") and _is_record(n.func.value, bound)
            elif isinstance(n, ast.Subscript):
                bad = isinstance(_key(n.slice), str) and _is_record(n.value, bound)
            else:
                continue
            if bad:
                out.add(f"{where}:{n.lineno}: {ast.unparse(n)[:90]}")
    return sorted(out)


def test_src_reads_stored_settings_and_fingerprints_typed() -> None:
    found = [line for p in sorted(SRC.rglob("*.py"))
             for line in untyped_reads(p.read_text(), str(p.relative_to(SRC)))]
    assert found == [], "read these through the typed record (model.Settings, SuiteRecord, " \
                        "Fingerprint, judging.Plan):\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_untyped_read() -> None:
    bad = '''
def show(rs, row, d):
    a = rs.settings.suite.get("baseline")
    b = rs.fingerprint.get("cpu_count") or 1
    info = rs.settings.suite
    c = info.get("done")
    fp = rs.fingerprint or {}
    e = fp["hostname"]
    f = (d.pop("settings") or {}).get("owner")
    g = row["settings"]["comparison"]
    rs.fingerprint.setdefault("runtimes", {})
    h = rs.settings.comparison["threshold"]
'''
    found = untyped_reads(bad)
    assert sorted(int(line.split(":")[1]) for line in found) == [3, 4, 6, 8, 9, 10, 11, 12], found


def test_the_readers_and_free_form_tables_pass() -> None:
    ok = '''
class Settings:
    @classmethod
    def from_dict(cls, data):
        return data.get("suite"), data["owner"]

def show(rs, info):
    title = (rs.settings.suite.report or {}).get("title")
    where = rs.settings.extra.get("file")
    n = rs.fingerprint.cpu_count
    q = sa.select(results.c.settings["owner"])
    return info.get("done"), rs.metrics.get("wall_time")
'''
    assert untyped_reads(ok) == []
