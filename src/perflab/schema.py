"""The store's tables: their SQLAlchemy definitions and the schema version they make.

storage reads and writes through them; migrations bring an older database's tables to them.
Nothing here touches a database.
"""

from __future__ import annotations

import sqlalchemy as sa

from perflab.quickread import SCHEMA_VERSION as SCHEMA_VERSION

# SCHEMA_VERSION, the version of the schema this perflab writes, is kept in perflab.quickread,
# which reads a SQLite listing without SQLAlchemy's import.  1: the tables before versioning (a
# database without perflab_meta but with results is taken as 1); 2: perflab_meta and fleet_workers;
# 3: fleet_jobs, results.fleet_job and results.fleet_submission; 4: the ids of the tables that
# grow with every measurement (results, configurations, runs, profiles) 64-bit on PostgreSQL;
# 5: task_clock in seconds like every other time (it was ms); 6: the task_clock samples an
# earlier step 5 left in ms (results whose header did not name the unit) in seconds too.
# Raise it with every change to a table or to what a stored value means; older databases are
# brought up to date by perflab.migrations, one step per version.

metadata = sa.MetaData()

# The id of a table that grows with every measurement: BIGINT on PostgreSQL (a fleet of 50
# machines writing 1,000 jobs a day would run a 32-bit runs.id out in about a year); on SQLite
# INTEGER, which for a primary key is the 64-bit rowid already (BIGINT would not be).  Foreign
# keys to it take its type.
GrowingId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# (table, column) of those ids and of the foreign keys to them: what schema 4 widened.
GROWING = (("results", "id"), ("configurations", "id"), ("configurations", "result_id"),
            ("runs", "id"), ("runs", "configuration_id"), ("profiles", "id"),
            ("profiles", "result_id"), ("profiles", "configuration_id"))

meta = sa.Table(
    "perflab_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

machines = sa.Table(
    "machines", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("fingerprint_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("hostname", sa.String(255)),
    sa.Column("fingerprint", sa.JSON, nullable=False),
)

results = sa.Table(
    "results", metadata,
    sa.Column("id", GrowingId, primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("label", sa.Text, default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("machine_id", sa.ForeignKey("machines.id")),
    # The environment as measured at the start of this result set (load, governor...), which
    # varies per result even on one machine; the machine row holds the stable part.
    sa.Column("fingerprint", sa.JSON),
    sa.Column("commit", sa.String(64)),
    sa.Column("dirty", sa.Boolean),
    sa.Column("repo", sa.Text),
    sa.Column("perflab_version", sa.String(32)),
    sa.Column("settings", sa.JSON),
    sa.Column("metrics", sa.JSON),  # name -> MetricInfo dict
    sa.Column("notes", sa.JSON),
    # Set when a fleet worker measured it: the queue's job id and the submission it belongs to.
    sa.Column("fleet_job", sa.BigInteger, index=True),
    sa.Column("fleet_submission", sa.String(32), index=True),
)

configurations = sa.Table(
    "configurations", metadata,
    sa.Column("id", GrowingId, primary_key=True),
    sa.Column("result_id", sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("command", sa.JSON, nullable=False),
    sa.Column("shell", sa.Boolean, default=False),
    sa.Column("env", sa.JSON),
    sa.Column("benchmark", sa.Text, nullable=False, index=True),
    sa.Column("params", sa.JSON),
    sa.Column("cell", sa.Text, nullable=False),  # canonical params, for grouping and series
    sa.Column("is_baseline", sa.Boolean, default=False),
    sa.Column("commit", sa.String(64)),
)

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", GrowingId, primary_key=True),
    sa.Column("configuration_id", sa.ForeignKey("configurations.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("warmup", sa.Boolean, default=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("exit_code", sa.Integer),
    sa.Column("started_at", sa.Float),
    sa.Column("load1", sa.Float),
    sa.Column("error", sa.Text),
    sa.Column("values", sa.JSON, nullable=False),  # metric -> value
)

# Benchmark hosts that have announced themselves with `perflab worker` (the fleet).  One row per
# worker name; `machine_id` links it to the results it wrote.
workers = sa.Table(
    "fleet_workers", metadata,
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("machine_id", sa.ForeignKey("machines.id")),
    sa.Column("hostname", sa.String(255)),
    sa.Column("fingerprint", sa.JSON),
    sa.Column("tags", sa.JSON),  # list of strings
    sa.Column("queue", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer),
    sa.Column("started_at", sa.Float),
    sa.Column("last_heartbeat", sa.Float),
    sa.Column("state", sa.String(16)),  # idle | busy | stopped
    sa.Column("current_job", sa.BigInteger),
)

# What `perflab fleet submit` queued: one row per (submission, machine); the queue's own job
# (procrastinate_jobs, same id) holds the state, this row what a person asks about.
fleet_jobs = sa.Table(
    "fleet_jobs", metadata,
    sa.Column("job_id", sa.BigInteger, primary_key=True),
    sa.Column("submission", sa.String(32), nullable=False, index=True),
    sa.Column("machine", sa.String(255), nullable=False),
    sa.Column("argv", sa.JSON, nullable=False),
    sa.Column("submitted_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float),
    sa.Column("finished_at", sa.Float),
    sa.Column("attempts", sa.Integer, default=0),
    sa.Column("state", sa.String(16)),  # queued | running | done | failed
    sa.Column("error", sa.Text),
    sa.Column("result_ids", sa.JSON),
)

profiles = sa.Table(
    "profiles", metadata,
    sa.Column("id", GrowingId, primary_key=True),
    sa.Column("result_id", sa.ForeignKey("results.id", ondelete="SET NULL"), index=True),
    sa.Column("configuration_id", sa.ForeignKey("configurations.id", ondelete="SET NULL")),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("machine_id", sa.ForeignKey("machines.id")),
    sa.Column("name", sa.Text),
    sa.Column("command", sa.JSON),
    sa.Column("sampler", sa.String(64)),  # perf event used (cpu-clock, cycles)
    sa.Column("call_graph", sa.String(16)),  # fp | dwarf | none
    sa.Column("data_path", sa.Text),  # where perf.data / folded stacks live
    sa.Column("summary", sa.JSON),  # top symbols, sample count, warnings
)


def chunks(ids: list[int], size: int = 500) -> list[list[int]]:
    """``ids`` in slices small enough for one ``IN (...)`` of a query."""
    return [ids[i:i + size] for i in range(0, len(ids), size)]
