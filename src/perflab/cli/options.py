"""The options more than one verb takes, declared once so every verb spells them the same way.

typer's ``Annotated`` form: a verb writes ``db: Db = None`` and gets the option, its flags, its
help and (for --db) the PERFLAB_DB fallback.  An option only one verb has stays with that verb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

# -- where results live ---------------------------------------------------------------------------
# str, not Path: a Path would fold postgresql://host/db into postgresql:/host/db.
Db = Annotated[str | None, typer.Option(
    "--db", envvar="PERFLAB_DB", help="Result database: a SQLite file or a postgresql:// URL "
    "(default: $PERFLAB_DB or the user data directory).")]
FleetDb = Annotated[str | None, typer.Option(
    "--db", envvar="PERFLAB_DB", help="The fleet's PostgreSQL URL: postgresql://USER@HOST/DB.")]

# -- what to measure ------------------------------------------------------------------------------
Workload = Annotated[list[str] | None, typer.Option(
    "--workload", "-W", help="A workload by name, optionally with k=v parameters: "
    "'eh/cpp depth=10' (repeatable).")]
Param = Annotated[list[str] | None, typer.Option(
    "--param", "-p", help="k=v for every workload given (repeatable).")]
OneWorkload = Annotated[str | None, typer.Option(
    "--workload", "-w", help="A workload (see `perflab workloads list`).")]
WorkloadParam = Annotated[list[str] | None, typer.Option(
    "--param", "-p", help="Workload parameter NAME=VALUE (repeatable).")]
Shell = Annotated[bool, typer.Option("--shell", help="Run commands through /bin/sh -c.")]
Env = Annotated[list[str] | None, typer.Option("--env", help="K=V for the command (repeatable).")]
Pin = Annotated[str | None, typer.Option("--pin", help="CPUs for the command: 0 | 0,1 | 0-3.")]
Timeout = Annotated[float | None, typer.Option("--timeout", help="Kill a run after SECONDS.")]

# -- how much to measure --------------------------------------------------------------------------
Warmup = Annotated[int, typer.Option("--warmup", "-w", min=0, help="Warm-up runs per command.")]
Runs = Annotated[int | None, typer.Option("--runs", "-r", min=1,
                                          help="Exactly N measured runs (no adaptive stop).")]
MinRuns = Annotated[int | None, typer.Option(
    "--min-runs", min=2, help="Adaptive: at least N runs (default: what the estimator needs, "
    "6 for the default trimmed mean).")]
MaxRuns = Annotated[int, typer.Option("--max-runs", min=2, help="Adaptive: at most N runs.")]
Budget = Annotated[float | None, typer.Option(
    "--budget", help="Adaptive: stop after SECONDS in all (default: 10 s per configuration).")]
Precision = Annotated[float | None, typer.Option(
    "--precision", help="Adaptive: also stop when every configuration's 95% CI is within +-P "
    "(0.01 = 1%); compare stops when the verdicts are decided, stat at 1% by default.")]
IgnoreFailure = Annotated[bool, typer.Option("--ignore-failure", help="Keep going when a run "
                                             "exits non-zero; failed runs are left out.")]
NoCounters = Annotated[bool, typer.Option("--no-counters", help="Do not open perf counters.")]
RegionSymbol = Annotated[str | None, typer.Option(
    "--region-symbol", help="callgrind: count only inside this function (glob).")]
Seed = Annotated[int | None, typer.Option("--seed", help="Seed for the run order.")]

# -- how to judge ---------------------------------------------------------------------------------
Metric = Annotated[str | None, typer.Option(
    "--metric", "-m", help="Primary metric (wall_time, task_clock, instructions, a workload key). "
    "Default: CPU time (task_clock, or cpu_time without perf events; cpu_ns_per_op for a "
    "workload's ns_per_op) when the warm-up shows CPU-bound work, else wall time; the choice "
    "and its reason are printed.")]
EstimatorOpt = Annotated[str | None, typer.Option(
    "--estimator", help="median | mean | trim | trim:LOW:HIGH (trimmed mean leaving out the "
    "lowest LOW and highest HIGH fraction of runs; default trim = trim:0.2:0.2).")]
Threshold = Annotated[list[str] | None, typer.Option(
    "--threshold", help="Equivalence band: +-T (default 0.01 = 1% for times), or one metric's "
    "or kind's band, repeatable: max_rss=64KiB, memory=0.5%, page_faults=3events, "
    "task_clock=2% (defaults: memory 0.2%, counts 1% or 0.5 events; `results show` and "
    "`report` use the bands stored with the result).")]
Correction = Annotated[str | None, typer.Option(
    "--correction", help="holm | bh | none for the primary metric's family (default holm; "
    "other metrics: one bh family).")]
FailOnRegression = Annotated[bool, typer.Option(
    "--fail-on-regression", help="Exit with status 1 on a regression (slower, or larger "
    "memory/counts): compare: in the primary metric of any configuration; detect: a change "
    "point not ignored.")]

# -- what the result is stored with ---------------------------------------------------------------
Label = Annotated[str, typer.Option("--label", help="A note stored with the result.")]
CommitOpt = Annotated[str | None, typer.Option("--commit", help="Commit of the code measured "
                                               "(default: the working directory's).")]
RepoOpt = Annotated[Path | None, typer.Option("--repo", help="Git repository of the code "
                                              "measured (default: the working directory).")]

Quiet = Annotated[bool, typer.Option(
    "--quiet", "-q", help="Print the tables only: no progress, header, notes, warnings or story "
    "(they are still stored with the result; errors still print).")]

# -- exports: one --export-FORMAT option per entry of reports.export.EXPORTERS --------------------
def export_options() -> list[tuple[str, Any, Any]]:
    """(parameter, annotated type, default) of each exporter's option, for cli/measure._with."""
    from perflab.reports.export import EXPORTERS

    return [(f"export_{name}", Annotated[Path | None, typer.Option(e.option, help=e.help)], None)
            for name, e in EXPORTERS.items()]


# -- history ----------------------------------------------------------------------------------
OrderRepo = Annotated[Path | None, typer.Option(
    "--repo", help="Order points by this repository's commit graph.")]
BenchmarkGlob = Annotated[str | None, typer.Option("--benchmark", "-b",
                                                   help="Only these (glob).")]
Since = Annotated[str | None, typer.Option(
    "--since", help="Only results from then on: an age (30d, 12h, 2w) or a date (2026-11-01, "
    "UTC); read by the database, so a long history is not read whole.")]
Machine = Annotated[str | None, typer.Option(
    "--machine", help="Machine name (the worker's --name or the host name), or its id.")]
DetectConfig = Annotated[Path | None, typer.Option(
    "--config", "-c", help="Detect settings TOML (default .perflab/detect.toml).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

# -- profiles and listings -------------------------------------------------------------------------
Top = Annotated[int, typer.Option("--top", "-n", help="Rows to show.")]
Svg = Annotated[Path | None, typer.Option("--svg", help="Also copy the flame graph to this path.")]
Sort = Annotated[str, typer.Option("--sort", help="Order rows by self or total share.")]
ProfileName = Annotated[str, typer.Option("--name", help="A name for the profile.")]
CallGraph = Annotated[str, typer.Option("--call-graph", "-g",
                                        help="fp (frame pointers), dwarf, or none.")]
Limit = Annotated[int, typer.Option("--limit", min=1, help="How many to list.")]
ListAll = Annotated[bool, typer.Option("--all", help="List every one (no --limit).")]
