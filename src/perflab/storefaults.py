"""A result store's faults in words, without a database library: a lost server ridden out
(StoreUnreachable, Outage, ride_out), a database server's error, schema or address as one
line (server_error, schema_problem, host_port_problem), and a SQLite file's fault as one line
(sqlite_fault).

perflab.storage (SQLAlchemy), perflab.quickwrite (sqlite3) and perflab.fleet.conn (psycopg)
all use them, and the runner rides out a lost server through them without loading a store.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from perflab.errors import EXIT_STORE_UNREACHABLE, PerflabError
from perflab.format import fmt_fixed, fmt_plain
from perflab.quickread import SCHEMA_VERSION


class StoreUnreachable(PerflabError):
    """The database server cannot be reached or dropped the connection (down, restarting,
    unreachable): a transient fault that a writer may ride out (``ride_out``).  A verb it ends
    exits with errors.EXIT_STORE_UNREACHABLE (a fleet job is retried on it)."""

    def __init__(self, problem: str, fix: str = "",
                 exit_code: int = EXIT_STORE_UNREACHABLE) -> None:
        super().__init__(problem, fix, exit_code)


# What libpq and the server say when the connection is lost or cannot be made: the server down
# or restarting (57P01 "terminating connection due to administrator command", 57P03 "the
# database system is starting up / shutting down"), a refused or timed-out connect, a socket
# closed under a query.  Credentials, a missing database and permissions are not in this list:
# waiting does not fix them.
_LOST_WORDS = ("connection refused", "could not connect", "could not translate",
               "timeout expired", "name or service not known", "no route", "connection failed",
               "server closed the connection", "terminating connection due to administrator",
               "the database system is starting up", "the database system is shutting down",
               "the database system is in recovery mode", "consuming input failed",
               "the connection is lost", "the connection is closed", "connection is bad",
               "couldn't get a connection",
               # every connection slot taken (53300): connections come and go (a fleet's jobs
               # hold theirs only while they write), so a slot is waited for like a restart
               "too many clients already", "remaining connection slots are reserved")


def connection_lost(text: str) -> bool:
    """Does this driver message say the server is unreachable or the connection was lost?"""
    low = text.lower()
    return any(w in low for w in _LOST_WORDS)


class Outage:
    """One line when the store's server is lost and one when it answers again, however many
    operations notice it, from any thread (the worker's heartbeat, its job, its queue loop)."""

    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        import threading

        self.say = say or (lambda _line: None)
        self.voiced = say is not None
        self.since: float | None = None
        self._lock = threading.Lock()

    def speak(self, say: Callable[[str], None]) -> None:
        """Give a silent outage a voice (the first caller that has a console)."""
        if not self.voiced:
            self.say, self.voiced = say, True

    def lost(self, why: str) -> None:
        with self._lock:
            if self.since is not None:
                return
            self.since = time.monotonic()
        self.say(f"database lost ({why}); waiting for it to come back")

    def back(self) -> None:
        with self._lock:
            if self.since is None:
                return
            took, self.since = time.monotonic() - self.since, None
        self.say(f"database back after {fmt_fixed(took)} s")


def outage_limit() -> float:
    """How long perflab waits for a lost database server before it gives up (seconds):
    PERFLAB_DB_WAIT, default 300."""
    try:
        return max(0.0, float(os.environ.get("PERFLAB_DB_WAIT", "300")))
    except ValueError:
        return 300.0


def backoff() -> Iterator[float]:
    """The waits between tries while the database is away: 0.2 s, doubling to 5 s (ride_out,
    and the fleet worker's async twins of it)."""
    delay = 0.2
    while True:
        yield delay
        delay = min(delay * 2, 5.0)


def ride_out(op: Callable[[], Any], outage: Outage | None = None,
             limit: float | None = None) -> Any:
    """``op()``, retried with backoff (0.2 s doubling to 5 s) while the server is unreachable,
    for up to ``limit`` seconds (default ``outage_limit()``; ``math.inf``: for good).  Past
    the limit: one StoreUnreachable line saying how long it waited.  ``op`` must be safe to
    run again after a failure (a transaction that did not commit, or an idempotent write).

    Written here because neither layer retries for us: SQLAlchemy's pool_pre_ping replaces a
    dead connection at checkout but does not retry a statement, and psycopg's pool only
    reconnects in the background."""
    outage = outage or Outage()
    limit = outage_limit() if limit is None else limit
    start = time.monotonic()
    delays = backoff()
    while True:
        try:
            result = op()
        except StoreUnreachable as e:
            outage.lost(e.problem)
            waited, delay = time.monotonic() - start, next(delays)
            if waited + delay > limit:
                raise StoreUnreachable(
                    f"{e.problem}; still unreachable after {fmt_fixed(waited)} s of retrying",
                    "start the database server (or raise PERFLAB_DB_WAIT, now "
                    f"{fmt_plain(limit)} s), then run again") from e
            time.sleep(delay)
            continue
        outage.back()
        return result


def server_error(location: str, text: str, first: str) -> PerflabError:
    """A database server's fault as one line with the fix."""
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low or (
            "authentication" in low and "failed" in low):
        return PerflabError(f"the database server refused the credentials for {location} "
                            f"({first})", "check the user and password in the URL (or ~/.pgpass)")
    if "does not exist" in low and "database" in low:
        return PerflabError(f"the database in {location} does not exist ({first})",
                            "create it (createdb NAME) and run 'perflab fleet init --db URL'")
    if connection_lost(text):
        return StoreUnreachable(f"cannot reach the database server of {location} ({first})",
                                "check the host and port in the URL and that PostgreSQL is "
                                "running and accepts connections from here")
    if "permission denied" in low:
        return PerflabError(f"the database user may not do this in {location} ({first})",
                            "grant the user rights on perflab's tables, or use the owner's URL")
    return PerflabError(f"the result database {location} failed: {first}",
                        "check the URL and the server's log, or pass another --db")


def schema_problem(location: str, pasteable: str, version: int | None,
                   may_create: bool) -> PerflabError | None:
    """What is wrong with a database whose perflab schema is ``version`` (None: it has none),
    or None when this perflab may use it (current) or make it current (``may_create``, for an
    older or missing one).  ``pasteable``: the store as a fix line's --db names it."""
    if version is not None and version > SCHEMA_VERSION:
        return PerflabError(
            f"the result database {location} was written by a newer perflab "
            f"(schema {version} > {SCHEMA_VERSION})",
            "upgrade perflab or use another --db")
    if version == SCHEMA_VERSION or may_create:
        return None
    if version is None:
        return PerflabError(f"the database {location} has no perflab schema",
                            f"run 'perflab fleet init --db {pasteable}' once to create it")
    return PerflabError(
        f"the database {location} has perflab schema {version}, this perflab "
        f"needs {SCHEMA_VERSION}",
        f"run 'perflab fleet init --db {pasteable}' once to upgrade it")


def host_port_problem(url: str, shown: str) -> PerflabError:
    """A server URL whose HOST[:PORT] part does not parse, as one line naming that part and
    the fix (``shown``: the URL as printed)."""
    authority = re.sub(r"^[^:]*://", "", url).split("/")[0].split("?")[0].rpartition("@")[2]
    host, _, port = authority.rpartition(":")
    part = (f"the port {port!r} is not a number" if host and port and "]" not in port
            and not port.isdigit() else f"the host and port {authority!r} cannot be read")
    return PerflabError(f"{shown}: {part}",
                        "write the URL as postgresql://USER@HOST:PORT/DB, PORT a number "
                        "(5432 if left out); an IPv6 host goes in brackets, [::1]")


def sqlite_fault(location: str, text: str) -> PerflabError:
    """A SQLite store's fault (the driver's message ``text``) as one line with the fix."""
    if "locked" in text:
        return PerflabError(
            f"the result database {location} is locked by another process",
            "wait for the other perflab to finish, or pass --db with another file",
        )
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return PerflabError(
            f"the result database {location} is corrupt ({text})",
            "move it aside (mv it to a .bak file) and run again, or pass --db with another "
            "file",
        )
    if "no column named" in text or "no such column" in text:
        return PerflabError(
            f"the result database {location} lacks a column this perflab needs "
            f"({text}): written by another perflab version, or altered",
            "move it aside (mv it to a .bak file) and run again, or pass --db with another "
            "file")
    if "full" in text or ("disk I/O error" in text and _low_space(Path(location))):
        return PerflabError(
            f"the disk holding the result database {location} is full ({text}); "
            "the runs stored before this point are kept",
            "free some space, or pass --db with a file on another disk")
    why = _diagnose_sqlite_path(Path(location))
    if why:
        return PerflabError(f"cannot write the result database {location}: {why}",
                            "pass --db with a file in a writable directory, or fix the "
                            "permissions")
    return PerflabError(f"the result database {location} failed: {text}",
                        "check the path and its permissions, or pass --db")


def _low_space(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent if str(path.parent) else ".").free < 1 << 20
    except OSError:
        return False


def _diagnose_sqlite_path(path: Path) -> str:
    """Why SQLite could not open or write ``path``, in words ('' when nothing obvious)."""
    d = path.parent if str(path.parent) else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable (read-only file or file system)"
    if not os.access(d, os.W_OK):
        return (f"its directory {d} is not writable (SQLite needs to create {path.name}-wal "
                "and -shm there)")
    return ""

