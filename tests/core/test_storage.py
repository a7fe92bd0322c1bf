"""The store on both backends (a SQLite file and a real PostgreSQL server): round trips, per-run
saving, idempotent and race-safe schema creation, concurrent writers, the schema version, and
each database fault as one line."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from perflab.errors import PerflabError
from perflab.format import redact_url
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import (
    SCHEMA_VERSION,
    Outage,
    Store,
    StoreUnreachable,
    configurations,
    machines,
    meta,
    runs,
)
from perflab.storefaults import connection_lost, server_error

pytestmark = pytest.mark.system


def make_result(host: str = "h") -> ResultSet:
    rs = ResultSet(kind="compare", fingerprint={"hostname": host, "cpu_model": "X",
                                                "cpu_count": 2},
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]}, commit="abc123",
                   dirty=False, settings={"interleaved": True}, notes=["a note"])
    for name, base in (("A", True), ("B", False)):
        cfg = Configuration(name=name, command=["prog", name], benchmark="prog",
                            params={"depth": 10}, is_baseline=base, cell="{}")
        cfg.runs = [Run(seq=i, values={"wall_time": 1.0 + i / 10}, warmup=i == 0)
                    for i in range(4)]
        rs.configurations.append(cfg)
    return rs


def count(store: Store, table: sa.Table) -> int:
    return int(store.read(lambda c: c.execute(sa.select(sa.func.count()).select_from(table))
                          .scalar()))


def test_round_trip_keeps_everything(store_url: str) -> None:
    store = Store(store_url)
    rs = make_result()
    rid = store.save(rs)
    back = store.load(rid)
    assert back.kind == "compare" and back.commit == "abc123" and back.notes == ["a note"]
    assert [c.name for c in back.configurations] == ["A", "B"]
    a = back.configurations[0]
    assert a.is_baseline and a.params == {"depth": 10} and a.cell == "{}"
    assert a.samples("wall_time") == [1.1, 1.2, 1.3]  # the warm-up run is kept but not analysed
    assert len(a.runs) == 4 and a.runs[0].warmup
    assert back.metrics["wall_time"].unit == "s"
    listed = store.list_results()
    # The measured runs (6 of the 8 stored; 2 are warm-up), as `results show` counts them.
    assert listed[0]["id"] == rid and listed[0]["runs"] == 6 and listed[0]["names"] == ["A", "B"]
    assert store.result_ids() == [rid] and store.result_ids(kind="stat") == []


def test_one_machine_row_per_machine(store_url: str) -> None:
    store = Store(store_url)
    a, b = store.save(make_result()), store.save(make_result())
    c = store.save(make_result(host="other"))
    ma, mb, mc = (store.load(x).fingerprint.machine_id for x in (a, b, c))
    assert ma == mb != mc
    assert count(store, machines) == 2


def test_a_worker_name_is_part_of_the_machine_identity(store_url: str) -> None:
    store = Store(store_url)
    plain, named = make_result(), make_result()
    named.fingerprint.machine_name = "bench-1"
    a, b = store.save(plain), store.save(named)
    assert store.load(a).fingerprint.machine_id != store.load(b).fingerprint.machine_id


def test_unknown_id_is_a_clear_error(store_url: str) -> None:
    with pytest.raises(PerflabError, match="no result with id 99"):
        Store(store_url).load(99)


def test_runs_are_stored_one_by_one(store_url: str) -> None:
    """An interrupted measurement keeps the runs finished before it: each is its own commit."""
    store = Store(store_url)
    rs = make_result()
    rid = store.begin_result(rs)
    cid = store.add_configuration(rid, rs.configurations[0])
    store.add_run(cid, rs.configurations[0].runs[0])
    store.add_run(cid, rs.configurations[0].runs[1])
    other = Store(store_url)  # another process's view
    back = other.load(rid)
    assert back.status == "running" and [r.seq for r in back.configurations[0].runs] == [0, 1]


def test_schema_creation_is_idempotent(store_url: str) -> None:
    store = Store(store_url, create=True)
    rid = store.save(make_result())
    for _ in range(3):
        again = Store(store_url, create=True)
        again.ensure_schema(create=True)
    assert again.schema_version() == SCHEMA_VERSION
    assert again.load(rid).configurations[1].samples("wall_time") == [1.1, 1.2, 1.3]
    assert count(again, meta) == 1


def test_a_newer_schema_is_refused_in_one_line(store_url: str) -> None:
    store = Store(store_url)
    rid = store.save(make_result())
    store.write(lambda c: c.execute(meta.update().values(value=str(SCHEMA_VERSION + 3))))
    with pytest.raises(PerflabError) as e:
        Store(store_url)
    assert e.value.line() == (
        f"the result database {redact_url(store_url)} was written by a newer "
        f"perflab (schema {SCHEMA_VERSION + 3} > {SCHEMA_VERSION}) -- upgrade perflab or use "
        "another --db")
    store.write(lambda c: c.execute(meta.update().values(value=str(SCHEMA_VERSION))))
    assert Store(store_url).load(rid).kind == "compare"  # nothing was touched



def test_a_database_from_before_versioning_is_brought_up_to_date(store_url: str) -> None:
    """A schema-1 database (no version table, no fleet columns): a SQLite file is upgraded on
    first use; a server database is refused in one line naming `perflab fleet init`, which
    upgrades it.  Nothing stored is lost either way."""
    store = Store(store_url)
    rid = store.save(make_result())
    store.write(lambda c: c.execute(sa.text("DROP TABLE perflab_meta")))
    store.write(lambda c: c.execute(sa.text("DROP TABLE fleet_workers")))
    store.write(lambda c: c.execute(sa.text("DROP INDEX ix_results_fleet_job")))
    store.write(lambda c: c.execute(sa.text("DROP INDEX ix_results_fleet_submission")))
    store.write(lambda c: c.execute(sa.text("ALTER TABLE results DROP COLUMN fleet_job")))
    store.write(lambda c: c.execute(sa.text("ALTER TABLE results DROP COLUMN fleet_submission")))
    assert store.schema_version() == 1
    if not store.is_sqlite:
        with pytest.raises(PerflabError) as e:
            Store(store_url)
        assert e.value.line() == (
            f"the database {redact_url(store_url)} has perflab schema 1, this perflab needs "
            f"{SCHEMA_VERSION} -- run 'perflab fleet init --db {store_url}' once to upgrade it")
        assert store.schema_version() == 1  # refused untouched
    again = Store(store_url, create=True)  # what `perflab fleet init` does on a server
    assert again.schema_version() == SCHEMA_VERSION
    assert again.load(rid).configurations[0].samples("wall_time") == [1.1, 1.2, 1.3]
    assert Store(store_url).load(rid).kind == "compare"


GROWING_IDS = ("results.id", "configurations.id", "configurations.result_id", "runs.id",
               "runs.configuration_id", "profiles.id", "profiles.result_id",
               "profiles.configuration_id")


def _id_types(store: Store) -> dict[str, str]:
    def go(conn: sa.Connection) -> dict[str, str]:
        insp = sa.inspect(conn)
        return {f"{t}.{c['name']}": str(c["type"]) for t in ("results", "configurations", "runs",
                                                             "profiles")
                for c in insp.get_columns(t) if f"{t}.{c['name']}" in GROWING_IDS}

    return store.read(go)  # type: ignore[no-any-return]


def test_a_schema_3_database_gets_64_bit_ids(store_url: str) -> None:
    """Schema 4 widens the ids that grow with every run to 64 bits: a schema-3 server database
    (32-bit ids, 32-bit sequences) is upgraded by `fleet init` and then stores runs past 2^31;
    a SQLite file's INTEGER PRIMARY KEY is 64-bit already and stays as it is."""
    store = Store(store_url)
    rid = store.save(make_result())
    pg = not store.is_sqlite
    if pg:  # back to schema 3 as it was made: INTEGER columns, serial sequences of integer
        def downgrade(conn: sa.Connection) -> None:
            for name in GROWING_IDS:
                table, col = name.split(".")
                conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {col} TYPE INTEGER"))
                if col == "id":
                    conn.execute(sa.text(f"ALTER SEQUENCE {table}_id_seq AS INTEGER"))
        store.write(downgrade)
        assert set(_id_types(store).values()) == {"INTEGER"}
    store.write(lambda c: c.execute(meta.update().values(value="3")))
    if pg:
        with pytest.raises(PerflabError, match="has perflab schema 3, this perflab needs "):
            Store(store_url)
    again = Store(store_url, create=True)  # what `perflab fleet init` does on a server
    assert again.schema_version() == SCHEMA_VERSION
    assert set(_id_types(again).values()) == ({"BIGINT"} if pg else {"INTEGER"})
    # ids past 2^31: the sequences (PostgreSQL) or the rowid (SQLite) go on from there
    big = 2**31 + 5
    if pg:
        again.write(lambda c: [c.execute(sa.text(f"ALTER SEQUENCE {t}_id_seq RESTART WITH {big}"))
                               for t in ("results", "configurations", "runs")])
    else:
        again.write(lambda c: c.execute(runs.insert().values(
            id=big, configuration_id=1, seq=99, status="ok", values={})))
    rid2 = again.save(make_result())
    ids = again.read(lambda c: c.execute(sa.select(sa.func.max(runs.c.id))).scalar())
    assert ids > big
    assert again.load(rid2).configurations[1].samples("wall_time") == [1.1, 1.2, 1.3]
    assert again.load(rid).configurations[0].samples("wall_time") == [1.1, 1.2, 1.3]


# -- several processes at once ------------------------------------------------------------------
def _open_and_write(url: str, host: str, n: int, barrier: multiprocessing.synchronize.Barrier
                    ) -> None:
    barrier.wait()  # all processes meet the empty database at the same moment
    store = Store(url, create=True)
    for i in range(n):
        rs = make_result(host=host if i % 2 else "shared")
        store.save(rs)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_first_use_and_writers_lose_nothing(backend: str, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    """Six processes open a database nobody has set up and write at once: one schema, one row
    per machine, every run stored exactly once."""
    url = (str(tmp_path / "c.sqlite") if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    procs_n, per_proc = 6, 5
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(procs_n)
    procs = [ctx.Process(target=_open_and_write, args=(url, f"host{i}", per_proc, barrier))
             for i in range(procs_n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * procs_n
    store = Store(url)
    assert store.schema_version() == SCHEMA_VERSION
    assert len(store.result_ids()) == procs_n * per_proc
    assert count(store, configurations) == procs_n * per_proc * 2
    assert count(store, runs) == procs_n * per_proc * 2 * 4
    # "shared" plus one per process (each writes its own host on odd i)
    assert count(store, machines) == procs_n + 1
    seqs = store.read(lambda c: c.execute(
        sa.select(runs.c.configuration_id, runs.c.seq)).all())
    assert len(set(seqs)) == len(seqs)  # no run stored twice


# -- faults, one line each ----------------------------------------------------------------------
@pytest.mark.unit
def test_corrupt_database_is_named_with_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(PerflabError) as e:
        Store(bad)
    assert "corrupt" in e.value.problem and "move it aside" in e.value.fix
    assert bad.read_bytes().startswith(b"this is not")  # nothing was overwritten


@pytest.mark.unit
def test_locked_database_is_named_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = Store(path, lock_timeout=0.2)
    rid = store.save(make_result())
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(PerflabError, match="locked"):
            store.save(make_result())
    finally:
        holder.rollback()
        holder.close()
    assert store.load(rid).configurations[1].samples("wall_time") == [1.1, 1.2, 1.3]


@pytest.mark.unit
def test_unreachable_server_is_one_line() -> None:
    from perflab.fleet.localpg import free_port

    url = f"postgresql://perflab@127.0.0.1:{free_port()}/perflab"
    with pytest.raises(PerflabError) as e:
        Store(url)
    assert e.value.problem.startswith("cannot reach the database server of "
                                      + url.replace("perflab@", "***@"))  # format.redact_url
    assert "PostgreSQL is running" in e.value.fix and "\n" not in e.value.line()
    assert isinstance(e.value, StoreUnreachable)  # a fault to ride out (storage.ride_out)


@pytest.mark.unit
@pytest.mark.parametrize(("text", "lost"), [
    ("connection failed: connection to server at \"127.0.0.1\", port 5 failed: Connection "
     "refused", True),
    ("terminating connection due to administrator command", True),  # a restart (-m fast)
    ("FATAL:  the database system is starting up", True),
    ("FATAL:  the database system is shutting down", True),
    ("consuming input failed: server closed the connection unexpectedly", True),
    ("the connection is lost", True),
    ("couldn't get a connection after 5.00 sec", True),  # psycopg_pool's timeout
    ("FATAL:  sorry, too many clients already", True),  # every slot taken, for a moment
    ("FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute",
     True),
    ("FATAL:  password authentication failed for user \"x\"", False),  # waiting won't fix it
    ('FATAL:  database "x" does not exist', False),
    ("permission denied for table runs", False),
])
def test_a_lost_connection_is_told_from_a_refusal(text: str, lost: bool) -> None:
    assert connection_lost(text) is lost
    err = server_error("postgresql://h/db", text, text)
    assert isinstance(err, StoreUnreachable) is lost


@pytest.mark.unit
def test_an_outage_is_said_once_and_its_end_once() -> None:
    said: list[str] = []
    outage = Outage(said.append)
    outage.back()  # nothing was lost: nothing to say
    for _ in range(3):  # the heartbeat, the job and the queue loop all notice it
        outage.lost("cannot reach the database server of X")
    outage.back()
    outage.back()
    assert [ln.split(" (")[0].split(" after")[0] for ln in said] == [
        "database lost", "database back"]


def test_wrong_credentials_are_one_line_without_the_password(pg_server, pg_url: str) -> None:
    pg_server.add_password_user("pw_user", "right")
    url = pg_url.replace("postgres@", "pw_user:wrong@")
    with pytest.raises(PerflabError) as e:
        Store(url)
    assert "refused the credentials" in e.value.problem and "wrong" not in e.value.line()
    assert "postgresql://***@" in e.value.problem and "\n" not in e.value.line()
    assert "pw_user" not in e.value.problem.split(" (")[0]  # the URL's user is masked too
    with pytest.raises(PerflabError, match="has no perflab schema"):  # past the login
        Store(pg_url.replace("postgres@", "pw_user:right@"))


def test_server_database_without_schema_names_fleet_init(pg_url: str) -> None:
    with pytest.raises(PerflabError) as e:
        Store(pg_url)
    assert e.value.line() == (f"the database {redact_url(pg_url)} has no perflab schema -- run "
                              f"'perflab fleet init --db {pg_url}' once to create it")
    assert "results" not in sa.inspect(sa.create_engine(
        pg_url.replace("postgresql://", "postgresql+psycopg://"))).get_table_names()


def test_missing_database_on_the_server_is_one_line(pg_server) -> None:
    url = pg_server.url("no_such_db")
    with pytest.raises(PerflabError, match="does not exist") as e:
        Store(url)
    assert "createdb" in e.value.fix


def test_two_stores_never_share_a_reports_folder(store_url: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Report folders are named by result id: run-1 of one store must not overwrite run-1 of
    # another (it did, under <data dir>/reports, for every database).
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    default = Store(tmp_path / "data" / "perflab" / "results.sqlite")
    other = Store(tmp_path / "elsewhere" / "mine.sqlite")
    given = Store(store_url)
    dirs = [default.reports_dir(), other.reports_dir(), given.reports_dir()]
    assert dirs[0] == tmp_path / "data" / "perflab" / "reports"  # where it always was
    assert dirs[1] == (tmp_path / "elsewhere" / "mine-reports").resolve()
    assert len(set(dirs)) == 3


@pytest.mark.unit
def test_from_db_says_when_a_metric_was_measured_two_ways(tmp_path: Path) -> None:
    # region task_clock against whole-process task_clock: labelled once, kept in the notes;
    # two workloads' own JSON figures are measured alike and merge silently
    from perflab import session
    from perflab.metrics import MetricInfo

    store = Store(tmp_path / "r.sqlite")
    ids = []
    for src in ("perf_event_open, timed region only", "perf_event_open"):
        rs = ResultSet(kind="stat", status="complete", fingerprint={"hostname": "h"},
                       metrics={"task_clock": MetricInfo("task_clock", "ms", src),
                                "ns_per_op": MetricInfo("ns_per_op", "ns",
                                                        f"workload JSON (eh/{len(ids)})")})
        cfg = Configuration(name="x", command=["x"])
        cfg.runs = [Run(seq=i, values={"task_clock": 1.0, "ns_per_op": 5.0}) for i in range(6)]
        rs.configurations.append(cfg)
        ids.append(store.save(rs))
    said: list[str] = []
    merged = session.merge_from_db(store, ids, None, False, warn=said.append)
    assert len(said) == 1 and "task_clock was measured differently" in said[0]
    assert "timed region only" in said[0] and "ns_per_op" not in said[0]
    assert any("task_clock was measured differently" in n for n in merged.notes)


def test_a_server_lost_after_it_was_reached_is_waited_for() -> None:
    """Every read and write of a store whose server was reached waits for it when it is lost
    (a restart), with one line when it is lost and one when it is back; ``wait=False`` tries
    once (Ctrl-C paths)."""
    import threading

    from perflab.fleet.localpg import LocalPostgres, pg_bindir

    if pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with LocalPostgres(fsync=False) as pg:
        store = Store(pg.create_database("lost"), create=True)
        said: list[str] = []
        store.outage.speak(said.append)
        pg.stop_server("fast")
        with pytest.raises(StoreUnreachable):
            store.read(lambda c: c.execute(sa.text("SELECT 1")).scalar(), wait=False)
        back = threading.Timer(2.0, pg.start_server)
        back.start()
        try:
            assert store.write(lambda c: c.execute(sa.text("SELECT 41 + 1")).scalar()) == 42
        finally:
            back.join()
        store.engine.dispose()
    assert [ln.split(" (")[0].split(" after")[0] for ln in said] == [
        "database lost", "database back"]
