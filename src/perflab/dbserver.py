"""A database server's faults as one line each, whichever library met them: SQLAlchemy in
perflab.storage, psycopg in perflab.fleet.conn (which loads no SQLAlchemy).  A server that
cannot be reached is StoreUnreachable, a transient fault a writer may ride out
(perflab.storage.ride_out); credentials, a missing database or schema are problems to fix."""

from __future__ import annotations

import re

from perflab.errors import EXIT_STORE_UNREACHABLE, PerflabError
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
