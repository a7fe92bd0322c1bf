"""The history's queries: every SQL statement history/ runs (SQL lives only in store
modules).  Each function takes the store, runs one query through Store.read (which rides out
a server's restart) and returns plain Python values; what the rows mean is series.py's and
filing.py's business."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from perflab.model import Owner, Settings
from perflab.owner import effective_status
from perflab.schema import configurations, results, runs
from perflab.storage import Store

EXCLUDED_KINDS = ("bisect",)


def glob_like(glob: str) -> str:
    """A SQL LIKE pattern (escape character ``\\``) selecting at least what the fnmatch glob
    matches: ``*`` and ``?`` translate; a ``[...]`` class does not, so the pattern stops there
    with ``%``.  LIKE is also case-insensitive on SQLite, so callers match the glob again."""
    out = []
    for ch in glob:
        if ch == "[":
            return "".join(out) + "%"
        out.append("%" if ch == "*" else "_" if ch == "?"
                   else "\\" + ch if ch in "\\%_" else ch)
    return "".join(out)


def run_rows(store: Store, benchmark: str | None = None, config: str | None = None,
             machine: int | None = None, since: float | None = None) -> list[dict[str, Any]]:
    """Every measured run (warm-ups, failed runs, bisects and abandoned fleet attempts left
    out) with its result's and configuration's columns, in time order.  The filters are the
    database's, so a large store is not read whole; a glob ``benchmark`` selects a superset
    (glob_like), to be matched again by the caller."""

    def go(conn: sa.Connection) -> list[dict[str, Any]]:
        q = (sa.select(results.c.id.label("rid"), results.c.kind, results.c.created_at,
                       results.c.commit.label("rcommit"), results.c.dirty, results.c.machine_id,
                       results.c.metrics, results.c.status,
                       results.c.settings["owner"].label("owner"),
                       configurations.c.id.label("cid"),
                       configurations.c.name, configurations.c.benchmark,
                       configurations.c.params, configurations.c.cell,
                       configurations.c.commit.label("ccommit"), runs.c["values"])
             .select_from(results.join(configurations).join(runs))
             .where(runs.c.warmup.is_(False), runs.c.status == "ok",
                    results.c.kind.notin_(EXCLUDED_KINDS),
                    # a fleet job's attempt lost with its worker: measured again in full
                    results.c.status != "abandoned")
             .order_by(results.c.created_at, results.c.id, configurations.c.id, runs.c.seq))
        if benchmark and not any(ch in benchmark for ch in "*?["):
            q = q.where(configurations.c.benchmark == benchmark)
        elif benchmark:
            q = q.where(configurations.c.benchmark.like(glob_like(benchmark), escape="\\"))
        if since is not None:
            q = q.where(results.c.created_at >= since)
        if config:
            q = q.where(configurations.c.name == config)
        if machine is not None:
            q = q.where(results.c.machine_id == machine)
        rows = [dict(r) for r in conn.execute(q).mappings()]
        for r in rows:  # a running result whose perflab is gone reads interrupted
            owner = r.pop("owner")
            r["status"] = effective_status(
                r["status"], Owner.from_dict(owner) if isinstance(owner, dict) else None)
        return rows

    return store.read(go)


def import_sources(store: Store, machine: int | None = None,
                   since: float | None = None) -> dict[int, str]:
    """Imported result id -> the tool its figures came from (hyperfine, pyperf, ...)."""

    def go(conn: sa.Connection) -> dict[int, str]:
        q = sa.select(results.c.id, results.c.settings).where(results.c.kind == "import")
        if since is not None:
            q = q.where(results.c.created_at >= since)
        if machine is not None:
            q = q.where(results.c.machine_id == machine)
        return {r.id: str(Settings.from_dict(r.settings).import_format or "import")
                for r in conn.execute(q)}

    return store.read(go)


def benchmarks(store: Store) -> list[str]:
    """Every stored benchmark name, sorted."""

    def go(conn: sa.Connection) -> list[str]:
        q = sa.select(configurations.c.benchmark).distinct().order_by(configurations.c.benchmark)
        return [str(x) for x in conn.execute(q).scalars()]

    return store.read(go)


def configuration_command(store: Any, result_id: int,
                          name: str) -> tuple[list[str], bool, dict[str, str]]:
    """The command of configuration ``name`` in result ``result_id``, whether it runs through
    the shell, and the environment it was given; ([], False, {}) when there is none."""
    row = store.read(lambda c: c.execute(
        sa.select(configurations.c.command, configurations.c.shell, configurations.c.env)
        .where(configurations.c.result_id == result_id)
        .where(configurations.c.name == name)).first())
    if row is None:
        return [], False, {}
    return list(row[0] or []), bool(row[1]), dict(row[2] or {})


def result_origin(store: Any, result_id: int) -> tuple[Settings, str | None]:
    """One result's stored settings (empty when none) and the repository it was measured in
    (None when not recorded)."""
    row = store.read(lambda c: c.execute(
        sa.select(results.c.settings, results.c.repo).where(results.c.id == result_id)).first())
    if row is None:
        return Settings(), None
    return Settings.from_dict(row[0]), row[1]
