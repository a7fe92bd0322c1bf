"""Verbs of the measurement core: `stat`, `compare`, `results list|show`.

Thin adapters: options in, perflab.session's use cases, tables out.  stat and compare take the
same measurement options; they are declared once (MEASURE, EXPORT) and added to both verbs'
signatures by ``_with`` (typer reads ``__signature__``), so the two cannot drift apart.

The statistics, the runner, the tables and the store are imported inside the verbs: they load
numpy, scipy and SQLAlchemy (about 2 s on this project's VM), which `perflab stat --help` and
a refused option do not need (tests/core/test_cli_startup.py).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from perflab import session
from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console, warning
from perflab.errors import PerflabError
from perflab.format import fmt_seconds, status_phrase
from perflab.metrics import BUILTIN_METRICS
from perflab.reports.export import STDOUT
from perflab.validate import thresholds

# perflab.model at run time only where a verb needs it: `results list` loads no model (with
# its judging, 15-17 ms of CPU)
if TYPE_CHECKING:
    from perflab.model import ResultSet
    from perflab.reports.analysis import Analysis
    from perflab.stats import Comparison
    from perflab.storage import Store

# Piped output (files, CI logs) gets a wide table rather than one folded to 80 columns.
console = stdout_console()
err = stderr_console()
# What is said beside the tables (header, notes, warnings, story, how verdicts were reached):
# silenced by --quiet, sent to stderr with the tables when an export has stdout.
aside = stdout_console()
err_quiet = stderr_console()  # the measurement's progress and outage lines (runner)

# (name, option type, default): what stat and compare both take.
MEASURE: list[tuple[str, Any, Any]] = [
    ("workload", o.Workload, None), ("param", o.Param, None), ("warmup", o.Warmup, 1),
    ("runs", o.Runs, None), ("min_runs", o.MinRuns, None), ("max_runs", o.MaxRuns, 1000),
    ("budget", o.Budget, None), ("precision", o.Precision, None), ("metric", o.Metric, None),
    ("estimator", o.EstimatorOpt, None), ("pin", o.Pin, None), ("timeout", o.Timeout, None),
    ("env", o.Env, None), ("shell", o.Shell, False), ("ignore_failure", o.IgnoreFailure, False),
    ("no_counters", o.NoCounters, False), ("region_symbol", o.RegionSymbol, None),
    ("db", o.Db, None), ("label", o.Label, ""), ("commit", o.CommitOpt, None),
    ("repo", o.RepoOpt, None), ("seed", o.Seed, None),
]
# One --export-FORMAT per exporter of reports.export.EXPORTERS (tests/core/test_exports.py).
EXPORT: list[tuple[str, Any, Any]] = [*o.export_options(), ("quiet", o.Quiet, False)]


def _with(*groups: list[tuple[str, Any, Any]]) -> Callable[[Callable[..., None]], Any]:
    """Add the option groups to a verb's signature; the verb receives them in ``**kw``."""
    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()
               if p.kind is not inspect.Parameter.VAR_KEYWORD]
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                   annotation=kind)
                 for group in groups for name, kind, default in group]
        fn.__signature__ = inspect.Signature(own + added)  # type: ignore[attr-defined]
        return fn
    return wrap


def _outputs(kw: dict[str, Any]) -> dict[str, Path | None]:
    """Where the verb's output goes: --export-FORMAT options -> {format: path}, checked
    writable before anything runs; with an export to standard output the tables move to
    stderr; --quiet silences what is said beside them.  _export undoes it at the end."""
    paths = {name.removeprefix("export_"): kw.pop(name) for name, _, _ in EXPORT
             if name != "quiet"}
    session.check_exports(paths)
    # An export to standard output ("-") has it alone: the tables and notes go to stderr.
    to_stderr = err.file if any(str(p) == STDOUT for p in paths.values()) else None
    console.file = aside.file = to_stderr  # type: ignore[assignment]
    aside.quiet = err_quiet.quiet = bool(kw.pop("quiet", False))
    return paths


def _export(a: Analysis, paths: dict[str, Path | None]) -> None:
    try:
        for p in session.export(a, paths):
            err.print(f"wrote {p}")
    finally:
        console.file = aside.file = None  # type: ignore[assignment]  # stdout again (_outputs)
        aside.quiet = err_quiet.quiet = False


def _warn(line: str) -> None:
    err.print(line, highlight=False)


def _note(line: str) -> None:
    """How a command was read, when not as typed (stderr, as it is: no markup)."""
    err.print(line, highlight=False, soft_wrap=True, markup=False)


def _quiet_note(line: str) -> None:
    """A note of the measurement (a repeated command named by position): --quiet silences it."""
    err_quiet.print(line, highlight=False, soft_wrap=True, markup=False)


def _print_notes(a: Analysis) -> None:
    from perflab.reports.warnings import result_warning_lines, result_warning_list

    for n in a.rs.notes:
        aside.print(f"[dim]note:[/] {n}", highlight=False)
    for w in result_warning_lines(a, result_warning_list(a)):
        aside.print(warning(w), highlight=False)


def _header(rs: ResultSet, location: str) -> None:
    phrase = status_phrase(rs.status)
    colour = {"interrupted": "yellow", "failed": "red"}.get(rs.status)
    state = "" if not phrase else (f" [{colour}]({phrase})[/]" if colour else f" ({phrase})")
    aside.print(f"[dim]result {rs.id} in {location}{state}[/]", highlight=False)
    runtimes = rs.fingerprint.runtimes or {}
    if runtimes:  # what the workloads said they ran on (e.g. Mono or CoreCLR and its version)
        seen = set(runtimes.values())
        names = dict.fromkeys(c.name for c in rs.configurations if c.name in runtimes)
        text = (next(iter(seen)) if len(seen) == 1
                else "; ".join(f"{name}: {runtimes[name]}" for name in names))
        aside.print(f"[dim]runtime: {text}[/]", highlight=False, markup=True)


def _request(kw: dict[str, Any]) -> session.MeasureRequest:
    """How to measure, from the MEASURE values in ``kw`` (what the verb has not taken out)."""
    schedule = session.Schedule(**{n: kw[n] for n in (
        "warmup", "runs", "min_runs", "max_runs", "budget", "precision", "seed")})
    setup = session.RunSetup(pin=kw["pin"], timeout=kw["timeout"], env=kw["env"],
                             ignore_failure=kw["ignore_failure"],
                             no_counters=kw["no_counters"], region_symbol=kw["region_symbol"])
    return session.MeasureRequest(schedule, setup, metric=kw["metric"],
                                  estimator=kw["estimator"], repo=kw["repo"],
                                  commit=kw["commit"], label=kw["label"])


@_with(MEASURE, EXPORT)
def stat(
    command: Annotated[list[str] | None, typer.Argument(help="The command and its arguments.")]
    = None,
    name: Annotated[str | None, typer.Option(
        "--name", "-n", help="The benchmark's name: its history key (history, detect, the "
        "stored primary metric) instead of the command's text, so builds at other paths stay "
        "one series.")] = None,
    **kw: Any,
) -> None:
    """Run a command (or a workload) repeatedly and report every metric, like perf stat -r.

    \b
    The command, either way:
      perflab stat -- ./prog --size 10    argv (perf's way)
      perflab stat './prog --size 10'     one quoted string (hyperfine's way)
      perflab stat -W eh/cpp -p depth=10  a workload
    """
    from perflab.reports.analysis import Analysis
    from perflab.reports.terminal import metrics_to_show, runs_line, stat_table
    est = session.check_plan(kw["estimator"], None, kw["runs"], verdict=False,
                             warn=_warn) if kw["estimator"] else None
    if bool(command) == bool(kw["workload"]):
        raise PerflabError("give either a COMMAND or --workload NAME",
                           "e.g. perflab stat -- ./prog arg, or perflab stat -W eh/cpp")
    if kw["workload"] and len(kw["workload"]) > 1:
        raise PerflabError("stat measures one workload", "use `perflab compare` for several")
    if command and not command[0].strip():
        raise PerflabError("an empty command was given", "give the program to run after --")
    exports = _outputs(kw)
    how = _request(kw)
    cfg, default_primary, rsym = session.stat_config(
        command, kw["workload"], kw["param"], how.metric, kw["shell"], name, note=_note)
    rs, store = session.measure_stat(cfg, default_primary, rsym, how, kw["db"],
                                     console=err_quiet)
    _header(rs, store.location)
    a = Analysis.of(rs)  # nothing compared: the summaries and warnings every view shows
    stat_table(a, cfg, metrics_to_show(rs), est).print(console)
    aside.print(f"[dim]{runs_line(cfg, time.time() - rs.created_at)}[/]")
    _print_notes(a)
    _export(a, exports)
    if rs.status == "interrupted":
        raise typer.Exit(130)
    session.require_successful_runs(rs, store)


# compare's own options (only compare takes them: they stay with the verb, cli/options.py).
Commands = Annotated[list[str] | None, typer.Argument(
    help="Commands, each ONE argument (quote it): 'prog -x' 'prog -y'.")]
Names = Annotated[list[str] | None, typer.Option(
    "--name", "-n", help="Name per command, in order (repeatable).")]
BaselineName = Annotated[str | None, typer.Option(
    "--baseline", help="Baseline by name (default: the first).")]
FromDb = Annotated[list[int] | None, typer.Option(
    "--from-db", help="Compare stored results by id instead of running (repeatable).")]
ForceMachines = Annotated[bool, typer.Option(
    "--force", help="Compare stored results measured on different machines anyway.")]
ProfileToo = Annotated[bool, typer.Option(
    "--profile", help="Also record a perf profile of each configuration and diff them.")]
HarnessOpt = Annotated[str | None, typer.Option(
    "--harness", help="The commands are builds of a benchmark harness (gobench: a go test "
    "binary; gbench: a Google Benchmark binary), run alternately; every benchmark's figures "
    "are judged: --harness gobench ./old.test ./new.test -- -test.benchtime 20ms.")]
ImportFiles = Annotated[bool, typer.Option(
    "--import", help="Compare files other tools wrote (go test -bench, Google Benchmark, JMH, "
    "criterion, BenchmarkDotNet, ...): the arguments are files, OLD then NEW; every benchmark "
    "in both is judged (docs/imports.md).")]
ImportFormat = Annotated[str | None, typer.Option(
    "--format", "-f", help="With --import: the tool that wrote the files (default: told from "
    "each file's content).")]
Match = Annotated[str | None, typer.Option(
    "--match", help="Judge only the benchmarks whose name this regular expression matches "
    "(--import, --from-db of many benchmarks).")]
Top = Annotated[int | None, typer.Option(
    "--top", min=1, help="Show the N largest changes of each metric (the summary line still "
    "counts every benchmark).")]


@_with(MEASURE, EXPORT)
def compare(
    commands: Commands = None, name: Names = None, baseline: BaselineName = None,
    threshold: o.Threshold = None, correction: o.Correction = None,
    fail_on_regression: o.FailOnRegression = False, from_db: FromDb = None,
    force: ForceMachines = False, profile: ProfileToo = False, harness: HarnessOpt = None,
    import_: ImportFiles = False, import_format: ImportFormat = None, match: Match = None,
    top: Top = None, **kw: Any,
) -> None:
    """Compare commands or workloads side by side: % change with CI and a verdict per metric.

    \b
    One quoted string per command (hyperfine's way; the argv form is stat's and profile's):
      perflab compare './old/prog --size 10' './new/prog --size 10'
      perflab compare --shell 'cd a && ./prog' 'cd b && ./prog'
      perflab compare -W 'eh/cpp depth=10' -W 'eh/rust depth=10'
      perflab compare --import old.txt new.txt   two harness files, every benchmark judged
    Two builds of a harness, its arguments after -- (docs/imports.md):
      perflab compare --harness gobench ./old.test ./new.test -- -test.benchtime 20ms
    """
    metric, estimator = kw["metric"], kw["estimator"]
    apart = bool(from_db) or import_  # results measured apart: nothing is run
    session.check_plan(estimator, correction, kw["runs"], verdict=not apart, warn=_warn)
    exports = _outputs(kw)
    if fail_on_regression:
        session.check_can_regress(metric)
    # A measurement is written through sqlite3 where it can be (session.open_writer); stored
    # results and profiles are read and recorded through the whole store.
    store = (session.open_store(kw["db"]) if apart or profile
             else session.open_writer(kw["db"]))
    if apart:
        loaded = (session.import_files([Path(c) for c in commands or []], import_format)
                  if import_ else [store.load(i) for i in from_db or []])
        if import_ and from_db:
            raise PerflabError("--import and --from-db both name what to compare",
                               "give files with --import, or result ids with --from-db")
        thr, bands = thresholds(threshold, {m: i for r in loaded for m, i in r.metrics.items()})
        if not force and _per_machine(loaded, exports, store, fail_on_regression, metric=metric,
                                      threshold=thr, bands=bands, correction=correction,
                                      baseline=baseline):
            return
        rs = _merged(loaded, store, from_db, name, force, match)
        rs.settings.comparison = _plan(rs, threshold=thr, bands=bands, correction=correction,
                                       estimator=estimator)
        if correction is None and _many(rs) and all(r.kind == "import" for r in loaded):
            # Harness files of many benchmarks: false discoveries controlled (BH) per metric,
            # as simulated in docs/imports.md; Holm's power falls as benchmarks grow.
            rs.settings.comparison.correction = "bh"
    else:
        what = session.CompareTargets(commands or [], name, kw["workload"], kw["param"],
                                      kw["shell"], harness)
        rs = session.measure_compare(what, _request(kw), threshold, correction, store,
                                     note=_quiet_note, console=err_quiet)
    session.set_baseline(rs, baseline)
    if not apart:
        _header(rs, store.location)
    a = _show_comparisons(rs, metric, measured=not apart, top=top)
    if rs.id is not None and not apart:
        store.update_result(rs)
    _export(a, exports)
    if profile:
        _profiles(rs, store)
    if rs.status == "interrupted":
        raise typer.Exit(130)
    session.require_successful_runs(rs, None if apart else store)
    if fail_on_regression:
        _gate(session.regression(rs, a.comparisons))


def _per_machine(loaded: list[ResultSet], exports: dict[str, Path | None], store: Store,
                 fail_on_regression: bool, **judge: Any) -> bool:
    """Stored results from several machines: shown side by side, each judged on its own
    samples (never pooled); True when they were (False: one machine, compared as one)."""
    from perflab.fleet.permachine import build, machines_differ, show

    if not machines_differ(loaded):
        return False
    if any(exports.values()):
        raise PerflabError("--export-* writes one result's comparisons; these results "
                           "come from several machines, judged one by one",
                           "export each machine's result (results show ID --export-*), "
                           "or read the per-machine HTML page without --export-*")
    ids = "-".join(str(r.id) for r in loaded)
    pm = build(loaded, **judge)
    pm.name_store(store)  # the reproduce lines' --db
    show(pm, console, store.reports_dir() / f"machines-{ids}")
    if fail_on_regression:
        _gate(session.machine_regression(pm))
    return True


def _merged(loaded: list[ResultSet], store: Store, from_db: list[int] | None,
            name: list[str] | None, force: bool, match: str | None) -> ResultSet:
    """The results to compare, merged by benchmark (session.merge_results); --match keeps the
    benchmarks it matches, and the ones in only one result are said in a note."""
    if from_db:
        rs = session.merge_from_db(store, from_db, name, force, warn=_warn)
    else:
        files = ", ".join(str(r.settings.file) for r in loaded)
        rs = session.merge_results(loaded, name, force, _warn, f"compared from files {files}")
    session.keep_compared(rs, match)
    return rs


def _many(rs: ResultSet) -> bool:
    from perflab.reports.benchmarks import is_many

    return is_many(rs)


def _plan(rs: ResultSet, **override: Any) -> Any:
    from perflab.judging import Plan

    return Plan.of(rs, **override)


def _show_comparisons(rs: ResultSet, metric: str | None, measured: bool,
                      top: int | None = None) -> Analysis:
    """Judge the result (its one Analysis) and print its tables, how the measurement stopped
    (``measured``: a new result), the correction line, the counters' stories and the notes."""
    from perflab.reports import benchmarks
    from perflab.reports.analysis import Analysis
    from perflab.reports.terminal import (
        compare_tables,
        correction_line,
        metrics_to_show,
        stat_table,
    )

    shown = metrics_to_show(rs, [metric] if metric and metric not in rs.metrics else None)
    many = benchmarks.is_many(rs)
    if many and metric in rs.metrics:
        shown = [metric]  # one metric's table (its alloc/op column still beside it)
    if many and benchmarks.ALLOC_METRIC in rs.metrics and benchmarks.ALLOC_METRIC not in shown:
        shown.append(benchmarks.ALLOC_METRIC)
    a = Analysis.judge(rs, shown)  # once: every table, warning and export below reads it
    if many:  # two results of many benchmarks: a row per benchmark
        for m in dict.fromkeys(c.metric for c in a.comparisons):
            benchmarks.table(a, m, top).print(console)
            aside.print(benchmarks.summary_line(a, m), highlight=False)
        aside.print(f"[dim]{benchmarks.verdicts_line(a)}[/]", highlight=False)
        _print_notes(a)
        return a
    for cell in rs.cells():  # one cell, except --from-db of results with several names
        if len(rs.configurations_in(cell)) > 1:
            for table in compare_tables(a, shown, cell, console.width):
                table.print(console)
        else:
            stat_table(a, rs.configurations_in(cell)[0], shown).print(console)
    stop = rs.settings.stop if measured else None
    if stop and stop.reason:
        aside.print(f"[dim]{stop.rounds} runs per configuration in "
                    f"{fmt_seconds(stop.seconds)}: stopped because {stop.reason}[/]",
                    highlight=False)
    primary = rs.settings.primary_metric or "wall_time"
    aside.print(f"[dim]{correction_line(a, primary)}[/]", highlight=False)
    _print_stories(rs, list(a.comparisons))
    _print_notes(a)
    return a


def _gate(regressed: str | None) -> None:
    """--fail-on-regression: exit 1 saying what regressed (session.regression)."""
    if regressed:
        err.print(f"[red]regression:[/] {regressed}", highlight=False)
        raise typer.Exit(1)


def _print_stories(rs: ResultSet, comps: list[Comparison]) -> None:
    from perflab.profiles import counter_story

    for line in counter_story(rs, comps):
        aside.print(f"[bold]story:[/] {line}", highlight=False)


def _profiles(rs: ResultSet, store: Store) -> None:
    """--profile: a profile of each configuration, each diffed against the first's."""
    from perflab.profiles.api import profile_configurations
    from perflab.reports.profiles import diff_note, diff_table

    diffs = profile_configurations(
        rs, store, recorded=lambda pid, name: err.print(f"profile {pid}: {name}"))
    for d in diffs:
        diff_table(d, 15).print(console)
        console.print(diff_note(d))
        for line in d.warnings:
            err.print(warning(line), highlight=False, soft_wrap=True)
        if d.svg is not None:
            console.print(f"differential flame graph: {d.svg}")


results_app = typer.Typer(help="Stored results: list and show.", no_args_is_help=True)


@results_app.command("list")
def results_list(db: o.Db = None, limit: o.Limit = 30, all_: o.ListAll = False) -> None:
    """List stored results, newest first (the newest 30 unless --limit or --all)."""
    from perflab import quickread
    from perflab.reports.results import results_table

    quick = quickread.list_results(db, None if all_ else limit)  # a SQLite file: no SQLAlchemy
    if quick is None:
        store = session.open_store(db, read_only=True)
        quick = store.list_results(None if all_ else limit), store.count_results()
    listed, stored = quick
    results_table(listed).print(console)
    if len(listed) < stored:
        aside.print(f"[dim]showing {len(listed)} of {stored} (use --limit N or --all)[/]",
                    highlight=False)


@results_app.command("show")
@_with(EXPORT)
def results_show(
    result_id: Annotated[int, typer.Argument(help="Result id (see `results list`).")],
    db: o.Db = None, threshold: o.Threshold = None, correction: o.Correction = None,
    estimator: o.EstimatorOpt = None, **kw: Any,
) -> None:
    """Show a stored result: its tables, environment and notes (verdicts with the threshold,
    correction and estimator stored with it, unless overridden)."""
    from rich.markup import escape

    from perflab import quickread
    from perflab.judging import Plan
    from perflab.reports.analysis import Analysis
    from perflab.reports.terminal import (
        compare_tables,
        correction_line,
        metrics_to_show,
        origin_line,
        stat_table,
    )

    session.check_plan(estimator, correction, None, verdict=False, warn=_warn)
    exports = _outputs(kw)
    quick = quickread.load_result(db, result_id)  # a SQLite file: no SQLAlchemy
    if quick is None:
        store = session.open_store(db, read_only=True)
        quick = store.load(result_id), store.location
    rs, location = quick
    thr, bands = thresholds(threshold, rs.metrics)
    if estimator:  # a trim the stored runs cannot carry: one line, as on compare and stat
        fewest = min((len(c.measured_runs()) for c in rs.configurations), default=0)
        session.check_plan(estimator, correction, fewest, verdict=False, warn=_warn)
    _header(rs, location)
    aside.print(f"[dim]{escape(origin_line(rs))}[/]", highlight=False)
    shown = metrics_to_show(rs)
    plan = Plan.of(rs, threshold=thr, bands=bands, correction=correction, estimator=estimator)
    a = Analysis.judge(rs, shown, plan)
    for cell in rs.cells():
        if len(rs.configurations_in(cell)) == 1:
            cfg = rs.configurations_in(cell)[0]
            stat_table(a, cfg, shown).print(console)
        else:
            for table in compare_tables(a, shown, cell, console.width):
                table.print(console)
    if a.comparisons:
        aside.print(f"[dim]{correction_line(a, rs.settings.primary_metric)}[/]",
                    highlight=False)
    _print_notes(a)
    _export(a, exports)


def register(app: typer.Typer) -> None:
    ctx = {"allow_interspersed_args": False}
    app.command("stat", context_settings=ctx)(stat)
    app.command("compare")(compare)
    app.add_typer(results_app, name="results")


__all__ = ["register", "BUILTIN_METRICS"]
