"""The environment perflab runs in: perf missing, perf_event_paranoid raised, HOME unset or
unwritable, LANG=C, no terminal, a 40-column terminal, and the PostgreSQL server going away in
the middle of a measurement."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from faults.helpers import ANSI, Perflab, as_nobody, counts
from perflab.errors import EXIT_STORE_UNREACHABLE

if TYPE_CHECKING:
    from perflab.fleet.localpg import LocalPostgres

pytestmark = pytest.mark.system

QUICK = ("-r", "3", "-w", "0", "--", "/bin/true")


def path_without(tmp: Path, tool: str) -> str:
    """A PATH holding everything of /usr/bin and /bin except ``tool``."""
    d = tmp / f"bin-without-{tool}"
    d.mkdir()
    for src in (Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin")):
        if not src.is_dir():
            continue
        for f in src.iterdir():
            if f.name != tool and not (d / f.name).exists():
                (d / f.name).symlink_to(f)
    return str(d)


# -- perf ----------------------------------------------------------------------------------------

def test_perf_missing_stat_still_measures(perflab: Perflab, tmp_path: Path) -> None:
    """stat opens counters itself (perf_event_open); the perf tool is not needed."""
    path = path_without(tmp_path, "perf")
    out = perflab("stat", *QUICK, env={"PATH": path})
    out.succeeds()
    assert perflab.counts().runs == 3


def test_perf_missing_profile_names_the_package(perflab: Perflab, tmp_path: Path) -> None:
    path = path_without(tmp_path, "perf")
    out = perflab("profile", "--", "/bin/true", env={"PATH": path})
    out.fails(2, "perf is not installed", fix="apt-get install linux-perf")
    assert perflab.counts().runs == 0


@pytest.mark.measure
def test_perf_event_paranoid_raised(shared_dir: Path) -> None:
    """An unprivileged user on a machine with perf_event_paranoid=3: no counters, said once in
    a note; wall and CPU times are still measured and stored."""
    knob = Path("/proc/sys/kernel/perf_event_paranoid")
    try:
        old = knob.read_text().strip()
        knob.write_text("3\n")
    except OSError:
        pytest.skip("cannot set perf_event_paranoid here")
    try:
        db = shared_dir / "data" / "r.sqlite"
        out = as_nobody(["stat", "-r", "3", "-w", "0", "--", "/bin/true"],
                        {"PERFLAB_DB": str(db), "PERFLAB_CACHE": str(shared_dir / "cache"),
                         "HOME": str(shared_dir / "data")}, shared_dir)
        out.succeeds()
        assert "counters unavailable" in out.stdout
        assert "wall_time" in out.stdout
    finally:
        knob.write_text(old + "\n")
    c = counts(db)
    assert (c.runs, c.statuses) == (3, {"complete": 1})


# -- HOME ------------------------------------------------------------------------------------------

def test_home_unset(perflab: Perflab) -> None:
    out = perflab("stat", *QUICK, env={"HOME": None})
    out.succeeds()
    assert perflab.counts().runs == 3


def test_home_unset_for_a_user_without_a_home(shared_dir: Path) -> None:
    """nobody's home (/nonexistent) cannot hold the launcher cache: one line, with the fix."""
    out = as_nobody(["stat", *QUICK], {"HOME": None, "PERFLAB_CACHE": None,
                                       "XDG_CACHE_HOME": None,
                                       "PERFLAB_DB": str(shared_dir / "data" / "r.sqlite")},
                    shared_dir)
    out.fails(2, "cannot create perflab's cache directory", fix="PERFLAB_CACHE")
    assert counts(shared_dir / "data" / "r.sqlite").runs == 0


def test_unwritable_home(shared_dir: Path) -> None:
    home = shared_dir / "home"
    home.mkdir(mode=0o755)  # root's: nobody cannot write here
    out = as_nobody(["stat", *QUICK], {"HOME": str(home), "PERFLAB_DB": None,
                                       "XDG_DATA_HOME": None,
                                       "PERFLAB_CACHE": str(shared_dir / "cache")}, shared_dir)
    out.fails(2, "cannot create the directory", str(home), fix="--db")
    assert list(home.iterdir()) == []  # no database anywhere under HOME


def test_unwritable_home_with_db_elsewhere_works(shared_dir: Path) -> None:
    home = shared_dir / "home"
    home.mkdir(mode=0o755)
    db = shared_dir / "data" / "r.sqlite"
    out = as_nobody(["stat", *QUICK], {"HOME": str(home), "PERFLAB_DB": str(db),
                                       "PERFLAB_CACHE": str(shared_dir / "cache")}, shared_dir)
    out.succeeds()
    assert counts(db).runs == 3


# -- locale and terminals --------------------------------------------------------------------------

def test_lang_c_with_non_ascii_names(perflab: Perflab) -> None:
    env = {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": None, "PYTHONUTF8": None}
    out = perflab("stat", "-r", "3", "-w", "0", "--label", "größe ünïcödé ✓", "--",
                  "/bin/echo", "héllo wörld", env=env)
    out.succeeds()
    listed = perflab("results", "list", env=env)
    listed.succeeds()
    assert perflab.counts().runs == 3


def test_no_terminal_no_escape_sequences(perflab: Perflab, tmp_path: Path) -> None:
    """Piped, with no controlling terminal and a colour-capable TERM: plain text only."""
    env = {"TERM": "xterm-256color", "NO_COLOR": None, "FORCE_COLOR": None}
    out = perflab("stat", *QUICK, env=env, stdin="")
    out.succeeds()
    assert not ANSI.search(out.stdout) and not ANSI.search(out.stderr)
    bad = perflab("stat", "-r", "2", "--", "/nonexistent", env=env)
    bad.fails(2, "command not found")
    assert not ANSI.search(bad.stderr)


def run_in_pty(argv: list[str], env: dict[str, str], cols: int,
               timeout: float = 120) -> tuple[int, str]:
    """Run ``argv`` on a real pseudo-terminal ``cols`` wide; return its exit code and output."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    p = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
    os.close(slave)
    chunks = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    code = p.wait(timeout=30)
    return code, ANSI.sub("", b"".join(chunks).decode(errors="replace"))


def test_forty_column_terminal_stat(perflab: Perflab) -> None:
    env = {**perflab.env, "COLUMNS": "40", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    code, text = run_in_pty([sys.executable, "-m", "perflab", "stat", *QUICK], env, cols=40)
    assert code == 0, text
    assert "Traceback" not in text
    # A table too wide for 40 columns is printed stacked ("median: 1.2 ms" per line), never
    # with its figures cut to "…".
    medians = [ln for ln in text.splitlines() if "median" in ln]
    assert medians and all(any(ch.isdigit() for ch in ln) for ln in medians), text
    assert "wall_time" in text and "…" not in "".join(medians), text
    assert perflab.counts().runs == 3


# -- PostgreSQL going away -------------------------------------------------------------------------

def _stored(url: str) -> tuple[int, int]:
    """(runs, distinct (configuration, seq)) in the store at ``url``."""
    import sqlalchemy as sa

    eng = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with eng.connect() as c:
            row = c.execute(sa.text(
                "SELECT count(*), count(DISTINCT (configuration_id, seq)) FROM runs")).one()
            return int(row[0]), int(row[1])
    finally:
        eng.dispose()


def _measuring(url: str, at_least: int) -> None:
    deadline = time.monotonic() + 60
    while _stored(url)[0] < at_least and time.monotonic() < deadline:
        time.sleep(0.1)


def test_postgresql_server_goes_away_mid_run(perflab: Perflab, own_pg: LocalPostgres) -> None:
    """The server crashes and stays down longer than perflab waits (PERFLAB_DB_WAIT): one
    line, and every run acknowledged before is on the server."""
    from perflab.storage import Store

    url = own_pg.create_database("gone")
    Store(url, create=True).engine.dispose()  # the schema, as `perflab fleet init` makes it
    p = perflab.popen("stat", "--db", url, "-r", "400", "-w", "0", "--no-counters", "--",
                      "/bin/sleep", "0.02", env={"PERFLAB_DB_WAIT": "2"})
    _measuring(url, 5)
    own_pg.stop_server("immediate")
    try:
        _, err_b = p.communicate(timeout=120)
    finally:
        own_pg.start_server()
    err = err_b.decode()
    assert p.returncode == EXIT_STORE_UNREACHABLE, f"{err}\nstored: {_stored(url)}"
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("perflab:")]
    assert len(lines) == 1 and "database server" in lines[0] and " -- " in lines[0], err
    assert "still unreachable after" in lines[0] and "PERFLAB_DB_WAIT" in lines[0]
    kept, distinct = _stored(url)
    assert kept >= 5 and kept == distinct  # every run acknowledged before is there, once
    listed = perflab("results", "list", "--db", url)
    listed.succeeds()
    assert "running" not in listed.stdout  # the dead writer's result reads interrupted


def _restart_during(p: subprocess.Popen[bytes], own_pg: LocalPostgres) -> str:
    """Stop the server for 4 s while ``p`` (a perflab verb) measures; its stderr, once it
    exited 0."""
    own_pg.stop_server("fast")
    time.sleep(4)
    own_pg.start_server()
    _, err_b = p.communicate(timeout=120)
    err = err_b.decode()
    assert p.returncode == 0, err
    return str(err)


def test_postgresql_server_restarted_mid_run_loses_no_run(perflab: Perflab,
                                                          own_pg: LocalPostgres) -> None:
    """A server restart (pg_ctl stop -m fast, down 4 s) while stat measures: the rounds
    measured meanwhile stay in memory and are stored once the server is back; stat ends
    complete with every one of its runs stored exactly once, and says one line when the
    database is lost and one when it is back (was: 58 of 88 runs stored, exit 2)."""
    from perflab.storage import Store

    url = own_pg.create_database("restarted")
    Store(url, create=True).engine.dispose()
    runs_n = 150
    p = perflab.popen("stat", "--db", url, "-r", str(runs_n), "-w", "0", "--no-counters", "--",
                      "/bin/sleep", "0.02")
    _measuring(url, 5)
    err = _restart_during(p, own_pg)
    assert "Traceback" not in err and "perflab:" not in err, err
    assert err.count("database lost") == 1 and err.count("database back") == 1, err
    assert _stored(url) == (runs_n, runs_n), err
    listed = perflab("results", "list", "--db", url)
    listed.succeeds()
    assert "complete" in listed.stdout


def test_postgresql_server_restarted_mid_suite_loses_no_run(perflab: Perflab,
                                                            own_pg: LocalPostgres,
                                                            tmp_path: Path) -> None:
    """The same restart under `perflab run`: the suite goes on (the runs wait in memory, the
    suite's own writes wait for the server too: Store.write), and ends complete, every cell
    with exactly its runs, none superseded (was: exit 2 at the restart, to be resumed by
    hand)."""
    from cli_helpers import two_config_suite
    from perflab.storage import Store

    url = own_pg.create_database("suite")
    Store(url, create=True).engine.dispose()
    values, runs_n = [1, 2, 3, 4, 5, 6, 7, 8], 6
    suite = tmp_path / "s.toml"
    suite.write_text(two_config_suite("restart", runs_n, values, ["/bin/sleep", "0.0{n}"],
                                      ["/bin/sleep", "0.0{n}"]))
    p = perflab.popen("run", str(suite), "--db", url, "--no-report", "--no-progress")
    _measuring(url, 2 * runs_n + 1)  # past the first cell
    err = _restart_during(p, own_pg)
    assert err.count("database lost") == 1 and err.count("database back") == 1, err
    assert _stored(url) == (2 * runs_n * len(values),) * 2, err
    store = Store(url)
    (rid,) = store.result_ids()
    rs = store.load(rid)
    assert rs.status == "complete" and not rs.settings.suite.superseded
    assert sorted(len(c.runs) for c in rs.configurations) == [runs_n] * 2 * len(values)
