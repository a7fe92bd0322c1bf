"""A throwaway PostgreSQL server in a directory: for the tests, the benchmark and trying a fleet
on one machine.  It is the real server (Debian's ``postgresql`` package), started with
``initdb`` + ``pg_ctl`` on a private port with its socket in the directory, trust auth, and
stopped (``pg_ctl stop -m immediate``) when done.

``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` user and
the commands run through ``runuser``.  Written by hand because pytest-postgresql would tie the
benchmark and docs to pytest; this is the same dance in 60 lines.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from perflab.errors import PerflabError


def pg_bindir() -> Path | None:
    """Where initdb and pg_ctl live: Debian keeps them out of PATH, one directory per version."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0)
    for d in reversed(dirs):
        if (Path(d) / "initdb").exists():
            return Path(d)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """``with LocalPostgres() as pg: pg.create_database("x") -> URL``."""

    def __init__(self, root: Path | None = None, fsync: bool = True,
                 settings: dict[str, str] | None = None) -> None:
        """``settings``: more server settings (``-c NAME=VALUE``), e.g. max_connections."""
        bindir = pg_bindir()
        if bindir is None:
            raise PerflabError("PostgreSQL's server programs (initdb, pg_ctl) are not installed",
                               "apt-get install postgresql (make setup does it as root)")
        self.bindir = bindir
        # Under /tmp, not a pytest tmp dir: the postgres user must be able to enter it.
        self.root = Path(root or tempfile.mkdtemp(prefix="perflab-pg-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.port = free_port()
        self.fsync = fsync
        self.settings = dict(settings or {})
        self.as_root = os.geteuid() == 0
        self.user = "postgres" if self.as_root else os.environ.get("USER", "postgres")

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root)
        if proc.returncode != 0:
            raise PerflabError(f"{args[0]} failed: {(proc.stderr or proc.stdout).strip()}",
                               "see the server log in " + str(self.root / "server.log"))
        return proc

    def start(self) -> LocalPostgres:
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start the server on its data directory and port (again, after ``stop_server``).
        PostgreSQL's default max_connections (100): the tests and the benchmarks meet the
        limit a fleet meets (docs/fleet.md, "Connections")."""
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                f"-c fsync={'on' if self.fsync else 'off'}"
                + "".join(f" -c {k}={v}" for k, v in self.settings.items()))
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l",
                  str(self.root / "server.log"), "-w", "-t", "60", "start")

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server and keep its data: ``fast`` is what a service restart does
        (sessions are told 'terminating connection due to administrator command'),
        ``immediate`` a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def add_password_user(self, user: str, password: str) -> None:
        """A role that must give its password over TCP (the rest keep trust auth)."""
        self.sql(f"CREATE ROLE \"{user}\" LOGIN PASSWORD '{password}'")
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"host all {user} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self._run("pg_ctl", "-D", str(self.data), "reload")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except PerflabError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> None:
        """One statement in autocommit (CREATE DATABASE cannot run in a transaction)."""
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname={database}",
                             autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def create_database(self, name: str) -> str:
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
