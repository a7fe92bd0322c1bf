"""The use cases the verbs share, below the command line and above the stages.

A verb (perflab.cli.*) parses its options, calls a use case and prints; the use cases live
here: opening the store, turning workload specs and commands into configurations, checking and
building the measurement options, measuring a stat or a compare (measure_stat,
measure_compare), creating a result set, merging stored results (``compare --from-db``),
refusing a configuration with no successful run, and writing exports.  Nothing
here imports typer, so the same calls serve a script or a test without a command line.

Warnings that do not stop anything go to ``warn`` (stderr by default), as one line each.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab import notes as said
from perflab.errors import PerflabError
from perflab.validate import (
    fraction,
    parse_cpus,
    positive,
    split_command,
    thresholds,
    writable_file,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from perflab.fleet.permachine import PerMachine
    from perflab.judging import Estimator, Plan
    from perflab.model import Configuration, ResultSet
    from perflab.quickwrite import ResultWriter
    from perflab.reports.analysis import Analysis
    from perflab.runner import MeasureOptions
    from perflab.stats import Comparison
    from perflab.storage import Store

Warn = Callable[[str], None]


def _stderr(line: str) -> None:
    from perflab.console import stderr_console

    stderr_console().print(line, highlight=False, soft_wrap=True)


# -- the store ------------------------------------------------------------------------------------
def open_store(db: str | Path | None, *, read_only: bool = False) -> Store:
    """The result store at ``db`` (a SQLite path or a URL; None: $PERFLAB_DB or the user's);
    ``read_only`` for verbs that only read (an archive on a read-only mount opens).
    Imported here, not at the top, so a verb that never stores loads no SQLAlchemy."""
    from perflab.storage import Store

    return Store(db, read_only=read_only)


def open_writer(db: str | Path | None) -> ResultWriter:
    """The store at ``db`` for a measurement to write: a current SQLite file through sqlite3
    alone (perflab.quickwrite: no SQLAlchemy to import), any other through open_store."""
    from perflab.quickwrite import open_quick

    return open_quick(db) or open_store(db)


# -- what to run ----------------------------------------------------------------------------------
def parse_env(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise PerflabError(f"--env {item!r} is not K=V", "write e.g. --env OMP_NUM_THREADS=1")
        out[k] = v
    return out


def counts_with_valgrind(metric: str | None) -> bool:
    """Instructions asked for where no hardware counter gives them: valgrind counts them."""
    from perflab.fingerprint import pmu_status

    return (metric or "") in ("instructions", "instructions_per_op") and \
        "instructions" not in pmu_status()["hardware"]


def workload_config(spec: str, common: dict[str, str], name: str | None,
                    valgrind: bool) -> tuple[Configuration, Any]:
    """'eh/cpp depth=10 threads=2' -> (a Configuration running that workload, its Resolved)."""
    from perflab.model import Configuration
    from perflab.workloads import parse_assignments, resolve

    parts = split_command(spec, "--workload")
    own = parse_assignments(parts[1:])
    params: dict[str, Any] = {**common, **own}
    r = resolve(parts[0], params)
    if valgrind and r.params.get("iterations") == 0:
        # A calibrated iteration count depends on timing, which would make instruction counts
        # differ from run to run: pin it for counting.
        r = resolve(parts[0], {**params, "iterations": "20000"})
    label = name or " ".join([r.workload.name] + [f"{k}={v}" for k, v in own.items()])
    return Configuration(name=label, command=r.argv, benchmark=r.workload.name,
                         params=r.params), r


def compare_configs(commands: list[str], names: list[str] | None, workloads: list[str] | None,
                    param: list[str] | None, shell: bool, metric: str | None,
                    note: Warn = _stderr) -> tuple[list[Configuration], str, str | None]:
    """The configurations ``compare`` measures, in order (workloads first, then commands), and
    the default primary metric and region symbol the workloads declare.  A repeated command
    is named by its position (``note`` says so)."""
    from perflab.model import Configuration
    from perflab.workloads import parse_assignments

    names = list(names or [])
    configs: list[Configuration] = []
    primary, rsym = "wall_time", None
    valgrind = counts_with_valgrind(metric)
    for i, spec in enumerate(workloads or []):
        cfg, r = workload_config(spec, parse_assignments(param),
                                 names[i] if i < len(names) else None, valgrind)
        primary, rsym = r.primary or primary, rsym or r.region_symbol
        configs.append(cfg)
    offset = len(configs)
    for j, text in enumerate(commands):
        if not text.strip():
            raise PerflabError("an empty command was given",
                               "give the program to run, each command as one quoted argument")
        argv = [text] if shell else split_command(text, "command")
        i = offset + j
        configs.append(Configuration(name=names[i] if i < len(names) else text, command=argv,
                                     shell=shell, benchmark=text))
    if len(configs) < 2:
        raise PerflabError(f"compare needs at least two commands or workloads, got {len(configs)}",
                           "give each command as one quoted argument: perflab compare 'a' 'b'")
    _name_repeats_by_position(configs, len(names), note)
    for c in configs:
        c.cell = "{}"  # one comparison: every configuration against the baseline
    configs[0].is_baseline = True
    return configs, primary, rsym


def harness_configs(harness: str, words: list[str], names: list[str] | None,
                    workloads: list[str] | None, shell: bool, note: Warn = _stderr
                    ) -> tuple[list[Configuration], str, None]:
    """``compare --harness``: the builds (the words before the first that starts with "-")
    as configurations of one cell, each run with the harness arguments (the words from there
    on, given after --) and what perflab adds to read its output (collectors.harness.
    harness_argv); the default primary metric is the harness's (collectors.harness.PRIMARY),
    a family across its benchmarks."""
    import shlex

    from perflab.collectors.harness import HARNESSES, PRIMARY, harness_argv, refused_arg
    from perflab.model import Configuration

    if harness not in HARNESSES:
        raise PerflabError(f"--harness {harness!r} is not a harness perflab runs",
                           f"use one of {', '.join(HARNESSES)}")
    if workloads or shell:
        raise PerflabError("--harness runs builds of a harness, not workloads or shell commands",
                           "leave out -W/--shell: perflab compare --harness gobench ./old.test "
                           "./new.test -- ARGS")
    cut = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
    builds, args = words[:cut], words[cut:]
    why = refused_arg(harness, args)
    if why:
        raise PerflabError(f"--harness {harness}: {why}", "leave that argument out")
    names = list(names or [])
    configs = [Configuration(name=names[i] if i < len(names) else build,
                             command=harness_argv(harness, build, args),
                             benchmark=shlex.join([build, *args]), harness=harness)
               for i, build in enumerate(builds)]
    if len(configs) < 2:
        raise PerflabError(f"--harness compares two or more builds, got {len(configs)}",
                           f"e.g. perflab compare --harness {harness} ./old ./new -- ARGS "
                           "(the harness arguments after --)")
    _name_repeats_by_position(configs, len(names), note)
    for c in configs:
        c.cell = "{}"
    configs[0].is_baseline = True
    return configs, PRIMARY[harness], None


def _name_repeats_by_position(configs: list[Configuration], named: int, note: Warn) -> None:
    """Configurations whose default name (the command, or the workload and its parameters)
    repeats are named by their position, as hyperfine numbers its benchmarks: 'true #1',
    'true #2' (an A/A check, with a note saying so).  The first ``named`` were named with
    -n/--name: two of those with one name are refused."""
    from collections import Counter

    counts = Counter(c.name for c in configs)
    for name in (n for n, k in counts.items() if k > 1):
        twins = [(i, c) for i, c in enumerate(configs) if c.name == name]
        if any(i < named for i, _ in twins):
            raise PerflabError(f"two configurations are named {name!r}",
                               "give each its own name with -n/--name")
        for i, c in twins:
            c.name = f"{name} #{i + 1}"
        if any(counts[c.name] for _, c in twins):
            raise PerflabError(f"two configurations are named {twins[0][1].name!r}",
                               "give each its own name with -n/--name")
        same = len({(tuple(c.command), c.shell) for _, c in twins}) == 1
        note(f"note: {name!r} is given {len(twins)} times"
             + (": identical commands make an A/A check" if same else "")
             + f"; named by position: {', '.join(c.name for _, c in twins)}")


def set_baseline(rs: ResultSet, baseline: str | None) -> None:
    if baseline is None:
        return
    names = [c.name for c in rs.configurations]
    if baseline not in names:
        raise PerflabError(f"--baseline {baseline!r} is not one of the configurations",
                           f"choose one of: {', '.join(names)}")
    for c in rs.configurations:
        c.is_baseline = c.name == baseline


# -- how to measure and judge -------------------------------------------------------------------
def check_can_regress(metric: str | None) -> None:
    """--fail-on-regression with --metric: a metric without a direction cannot regress."""
    from perflab.metrics import metric_direction

    if metric and metric_direction(metric) == "none":
        raise PerflabError(f"--fail-on-regression: {metric} has no direction (neither lower "
                           "nor higher is better), so it cannot regress",
                           "use --metric with a time, memory or count metric")


def check_metric_name(metric: str | None, benchmarks: list[str]) -> None:
    """--metric, before anything runs: a name that is not one a run can produce (a collector's,
    a derived one or one the workload declares) but is close to one is a typo, refused with
    the close names.  A name close to none may still be a key of the JSON object a command or
    workload prints on its last line: the first runs tell (runner's check)."""
    import difflib

    from perflab.runner import known_metrics

    if not metric:
        return
    known = known_metrics(benchmarks)
    if metric in known:
        return
    close = difflib.get_close_matches(metric, known, n=3, cutoff=0.8)
    if close:
        raise PerflabError(f"unknown metric {metric!r} (close: {', '.join(close)})",
                           f"use --metric {close[0]}")


def check_plan(estimator: str | None, correction: str | None, runs: int | None,
               verdict: bool, warn: Warn = _stderr) -> Estimator:
    """Validate --estimator / --correction / --runs before anything runs: one clear line each."""
    from perflab.console import warning
    from perflab.judging import (
        CORRECTIONS,
        ESTIMATOR_CHOICES,
        MIN_RUNS,
        SERIAL_MIN_RUNS,
        SERIAL_RHO_MAX,
        check_estimator_runs,
        parse_estimator,
    )

    try:
        est = parse_estimator(estimator)
    except ValueError as e:
        raise PerflabError(str(e), f"use --estimator with one of: {ESTIMATOR_CHOICES}") from None
    if correction is not None and correction not in CORRECTIONS:
        raise PerflabError(f"--correction {correction!r} is unknown", "use holm, bh or none")
    if runs is not None:
        why = check_estimator_runs(est, runs)
        if runs < MIN_RUNS:
            if verdict:
                warn(warning(f"--runs {runs} is below the {MIN_RUNS} runs a verdict needs: "
                             "the comparisons will be labelled inconclusive (too few runs)"))
        elif why and estimator:  # stat too: a trimmed mean's CI needs MIN_RUNS kept
            raise PerflabError(f"--estimator {why}", "raise --runs or choose a lighter trim")
        elif why and verdict:
            warn(warning(f"the default estimator ({est.label}) needs {est.min_runs()} runs: "
                         f"with --runs {runs} the comparisons will be inconclusive (too few "
                         "runs); raise --runs or pass --estimator median"))
        elif verdict and runs < SERIAL_MIN_RUNS and est.kind != "median":
            warn(warning(f"--runs {runs} is too few to rule out drift (runs correlated in "
                         f"time): below {SERIAL_MIN_RUNS} runs the intervals are widened for a "
                         f"lag-1 correlation of {SERIAL_RHO_MAX}, so only large changes are "
                         f"decided; use --runs {SERIAL_MIN_RUNS} or more"))
    return est


@dataclass(frozen=True)
class Schedule:
    """How many runs, and when measuring stops, as the command line gives them (--warmup,
    --runs, --min-runs, --max-runs, --budget, --precision, --seed)."""

    warmup: int = 1
    runs: int | None = None
    min_runs: int | None = None
    max_runs: int = 1000
    budget: float | None = None
    precision: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class RunSetup:
    """How each run is made, as the command line gives it (--pin, --timeout, --env,
    --ignore-failure, --no-counters, --region-symbol)."""

    pin: str | None = None
    timeout: float | None = None
    env: list[str] | None = None
    ignore_failure: bool = False
    no_counters: bool = False
    region_symbol: str | None = None


def judging_plan(estimator: str | None = None, threshold: float | None = None,
                 correction: str | None = None, bands: dict[str, str] | None = None) -> Plan:
    """How the verdicts are judged (--estimator, --threshold, --correction, --threshold
    METRIC=BAND): the plan the measurement stores, built once here."""
    from perflab.judging import DEFAULT_CORRECTION, DEFAULT_THRESHOLD, Plan, parse_estimator

    return Plan(threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                correction=correction or DEFAULT_CORRECTION,
                estimator=str(parse_estimator(estimator)), bands=dict(bands or {}))


def build_options(schedule: Schedule, setup: RunSetup, plan: Plan, metric: str | None,
                  default_primary: str = "wall_time") -> MeasureOptions:
    """MeasureOptions from the command line's values, each checked (one line per mistake):
    ``metric`` is --metric (None: ``default_primary``, which the warm-up may swap for its
    CPU-time counterpart), ``plan`` is passed through (judging_plan)."""
    from perflab.runner import MeasureOptions

    s = schedule
    primary = metric or default_primary
    positive(s.budget, "--budget", "60")
    positive(setup.timeout, "--timeout", "30")
    if s.precision is not None:
        fraction(s.precision, "--precision", "0.01")
    return MeasureOptions.of(
        metric=metric, default_primary=default_primary, plan=plan,
        warmup=s.warmup, runs=s.runs, min_runs=s.min_runs,
        max_runs=max(s.max_runs, s.min_runs or 0), budget=s.budget, precision=s.precision,
        pin=parse_cpus(setup.pin), timeout=setup.timeout, ignore_failure=setup.ignore_failure,
        counters="none" if setup.no_counters else "auto",
        instructions="valgrind" if counts_with_valgrind(primary) else None,
        region_symbol=setup.region_symbol, seed=s.seed, env=parse_env(setup.env))


def new_result(kind: str, *, repo: Path | None, commit: str | None,
               label: str) -> ResultSet:
    """A result set about to be measured on this machine: its fingerprint and the commit
    measured."""
    from perflab.fingerprint import machine_fingerprint
    from perflab.history.git import git_state
    from perflab.model import ResultSet

    c, dirty, r = git_state(repo, commit)
    # How it is judged (threshold, bands, correction, estimator) is stored once, as the plan
    # (Settings.comparison), by the runner.
    return ResultSet(kind=kind, fingerprint=machine_fingerprint(), commit=c, dirty=dirty,
                     repo=r, label=label, created_at=time.time())


@dataclass(frozen=True)
class MeasureRequest:
    """How stat and compare measure, as their shared options give it: the schedule, how each
    run is made, --metric, --estimator, and what the result is recorded against (--repo,
    --commit, --label)."""

    schedule: Schedule
    setup: RunSetup
    metric: str | None = None
    estimator: str | None = None
    repo: Path | None = None
    commit: str | None = None
    label: str = ""


@dataclass(frozen=True)
class CompareTargets:
    """What compare measures: its commands (each one string; with ``harness``, the builds and
    then the harness arguments), their -n names, the -W workloads with the -p parameters they
    share, and whether the commands run through the shell."""

    commands: list[str]
    names: list[str] | None = None
    workloads: list[str] | None = None
    params: list[str] | None = None
    shell: bool = False
    harness: str | None = None


def stat_config(command: list[str] | None, workload: list[str] | None,
                params: list[str] | None, metric: str | None, shell: bool = False,
                name: str | None = None, note: Warn = _stderr
                ) -> tuple[Configuration, str, str | None]:
    """The one configuration ``stat`` measures (a command's argv or the one workload, as the
    verb checked; named ``name`` when given), the default primary metric and the region
    symbol the workload declares; ``note`` says how a command was read when it differs from
    how it was typed."""
    from perflab.cmdline import forgiving_argv
    from perflab.model import Configuration

    default_primary, rsym = "wall_time", None
    if workload:
        from perflab.workloads import parse_assignments  # a command reads no manifest

        cfg, r = workload_config(workload[0], parse_assignments(params), None,
                                 counts_with_valgrind(metric))
        default_primary, rsym = r.primary or "wall_time", r.region_symbol
    else:
        assert command is not None
        argv, said_how = forgiving_argv(list(command), shell=shell)
        if said_how:
            note(said_how)
        cfg = Configuration(name=" ".join(argv), command=list(argv), shell=shell,
                            benchmark=" ".join(argv))
    if name is not None:
        if not name.strip() or not name.isprintable():
            raise PerflabError(f"--name {name!r} is not a name", "e.g. --name spin-1ms")
        cfg.name = cfg.benchmark = name.strip()
    check_metric_name(metric, [cfg.benchmark_key])
    cfg.is_baseline = True
    return cfg, default_primary, rsym


def measure_stat(cfg: Configuration, default_primary: str, region_symbol: str | None,
                 how: MeasureRequest, db: str | Path | None,
                 console: Any = None) -> tuple[ResultSet, ResultWriter]:
    """``stat``: ``cfg`` measured into a new result of kind stat, stored as it goes in the
    store at ``db`` (opened once the options are checked), and that store; ``region_symbol``
    is the workload's, used when --region-symbol is not given."""
    from dataclasses import replace

    from perflab.runner import Watchers, measure

    setup = replace(how.setup, region_symbol=how.setup.region_symbol or region_symbol)
    opts = build_options(how.schedule, setup, judging_plan(how.estimator), how.metric,
                         default_primary)
    store = open_writer(db)
    rs = new_result("stat", repo=how.repo, commit=how.commit, label=how.label)
    measure(rs, [cfg], opts, store=store, watchers=Watchers(console=console))
    return rs, store


def measure_compare(what: CompareTargets, how: MeasureRequest, threshold: list[str] | None,
                    correction: str | None, store: ResultWriter, *, note: Warn = _stderr,
                    console: Any = None) -> ResultSet:
    """``compare``: the commands or workloads measured interleaved into a new result of kind
    compare, judged by --threshold (METRIC=BAND too) and --correction; ``note`` says what
    was read differently from how it was typed, ``console`` shows the progress."""
    from dataclasses import replace

    from perflab.runner import Watchers, known_metrics, measure

    if what.harness is not None:
        configs, default_primary, rsym = harness_configs(
            what.harness, what.commands, what.names, what.workloads, what.shell, note=note)
    else:
        configs, default_primary, rsym = compare_configs(
            what.commands, what.names, what.workloads, what.params, what.shell, how.metric,
            note=note)
        check_metric_name(how.metric, [c.benchmark_key for c in configs])
    thr, bands = thresholds(threshold, known_metrics([c.benchmark_key for c in configs]))
    plan = judging_plan(how.estimator, thr, correction, bands)
    setup = replace(how.setup, region_symbol=how.setup.region_symbol or rsym)
    opts = build_options(how.schedule, setup, plan, how.metric, default_primary)
    if what.harness is not None:
        opts.auto_primary = False  # the harness's own figures decide (collectors/harness.py)
    rs = new_result("compare", repo=how.repo, commit=how.commit, label=how.label)
    measure(rs, configs, opts, store=store, watchers=Watchers(console=console))
    return rs


def require_successful_runs(rs: ResultSet, store: ResultWriter | None) -> None:
    """A configuration without one successful measured run has no figures and no verdict: the
    command fails (exit 1), so a CI gate never passes on a candidate that only crashed."""
    empty = [c.name for c in rs.configurations if not c.measured_runs()]
    if not empty:
        return
    if store is not None and rs.id is not None and rs.status != "failed":
        rs.status = "failed"
        store.update_result(rs)
    failed = [r for c in rs.configurations if c.name in empty for r in c.runs if r.error]
    why = f" (last error: {failed[-1].error})" if failed else ""
    raise PerflabError(f"{', '.join(empty)}: no successful run, so nothing to compare{why}",
                       "fix the command; --ignore-failure only leaves failed runs out",
                       exit_code=1)


# -- the CI gate (--fail-on-regression) -----------------------------------------------------------
def regression(rs: ResultSet, comps: Sequence[Comparison]) -> str | None:
    """What regressed on the primary metric (its family) of any candidate, as the gate says
    it; None when nothing did.  A primary metric without a direction is refused."""
    from perflab.metrics import in_family

    primary = rs.settings.primary_metric or "wall_time"
    info = rs.metrics.get(primary)
    if info is not None and info.direction == "none":
        raise PerflabError(f"--fail-on-regression: the primary metric {primary} has no "
                           "direction, so it cannot regress",
                           "use --metric with a time, memory or count metric")
    bad = [c for c in comps if in_family(c.metric, primary) and c.regression]
    if not bad:
        return None
    unpaired = "" if bad[0].paired or bad[0].deterministic else ", not interleaved"
    return f"{primary} is {bad[0].verdict} ({', '.join(c.candidate for c in bad)}{unpaired})"


def machine_regression(pm: PerMachine) -> str | None:
    """Results of several machines, each judged on its own: a regression of any machine's
    first metric fails the gate; None when none regressed."""
    bad = [f"{r.machine} ({r.comparison.verdict})" for b in pm.blocks
           for r in b.rows if r.comparison is not None and r.comparison.regression]
    return f"on {len(bad)} machine(s): {', '.join(bad)}" if bad else None


# -- results from the store -----------------------------------------------------------------------
def _how_measured(source: str) -> str:
    """A metric's source without the benchmark it names: eh/cpp's and eh/rust's workload JSON
    are measured alike, a timed region and a whole process are not."""
    return re.sub(r"workload JSON \(.*\)", "workload JSON", source)


def merge_from_db(store: Store, ids: list[int], names: list[str] | None, force: bool,
                  warn: Warn = _stderr) -> ResultSet:
    """A new in-memory comparison of configurations from stored results (nothing re-run)."""
    if len(ids) < 2:
        raise PerflabError("--from-db needs at least two result ids",
                           "e.g. --from-db 3 --from-db 7")
    loaded = [store.load(i) for i in ids]
    return merge_results(loaded, names, force, warn,
                         f"compared from the store (results {', '.join(map(str, ids))})")


def import_files(paths: list[Path], fmt: str | None) -> list[ResultSet]:
    """``compare --import``: each file read by its importer (perflab.imports), in memory
    (nothing stored); ids 1, 2... name them in the merged result."""
    from perflab.imports import import_file

    if len(paths) < 2:
        raise PerflabError("--import compares two or more files",
                           "e.g. perflab compare --import old.txt new.txt")
    out = []
    for i, path in enumerate(paths, start=1):
        rs = import_file(Path(path), fmt)
        rs.id = i
        rs.settings.file = str(path)
        out.append(rs)
    return out


@dataclass(frozen=True)
class ImportRequest:
    """``perflab import``: the files other tools wrote, how to read them (``fmt``, None: told
    from each file's content; ``benchmark``, None: the tool's own name), the commit they
    measured (``commit`` or the HEAD of ``repo``), and ``here``: the files were measured on
    this machine, so its fingerprint is recorded with them."""

    files: list[Path]
    fmt: str | None = None
    benchmark: str | None = None
    commit: str | None = None
    repo: Path | None = None
    here: bool = False


@dataclass(frozen=True)
class ImportWatch:
    """What hears of an import as it stores: ``storing(path, runs)`` before a file is stored
    (it returns the callback told of each batch of runs stored), ``stored(path, rs)`` once
    its transaction is committed (``rs.id`` set)."""

    storing: Callable[[Path, int], Callable[[int], None] | None] | None = None
    stored: Callable[[Path, ResultSet], None] | None = None


def store_imports(req: ImportRequest, db: str | Path | None,
                  watch: ImportWatch | None = None) -> list[ResultSet]:
    """Read every file (one bad file stores nothing), then store each in its own transaction
    (all of it or none of it) with the commit and fingerprint stamped.  Ctrl-C raises one
    PerflabError (exit 130) naming the file not stored and those stored before it."""
    from perflab.imports import import_file

    w = watch or ImportWatch()
    stored: list[str] = []
    current = ""
    try:
        parsed = []
        for f in req.files:
            current = str(f)
            parsed.append(import_file(Path(f), req.fmt, req.benchmark))
        stamp = _import_stamp(req)
        store = open_store(db)
        for f, rs in zip(req.files, parsed, strict=True):
            current = str(f)
            stamp(rs)
            total = sum(len(cfg.runs) for cfg in rs.configurations)
            rid = store.save(rs, progress=w.storing(Path(f), total) if w.storing else None)
            stored.append(f"{f} (result {rid})")
            if w.stored:
                w.stored(Path(f), rs)
    except KeyboardInterrupt:
        kept = f"; stored before it: {', '.join(stored)}" if stored else ""
        raise PerflabError(f"import interrupted: nothing of {current} was stored (each file is "
                           f"stored whole or not at all){kept}",
                           "run the import again for the files not stored",
                           exit_code=130) from None
    return parsed


def _import_stamp(req: ImportRequest) -> Callable[[ResultSet], None]:
    """What an imported result set is stored with: the commit, this machine's fingerprint
    over the file's own (``here``), status complete."""
    from perflab.history.git import git_state
    from perflab.model import Fingerprint

    c, dirty, r = git_state(req.repo, req.commit)
    here_fp: dict[str, Any] = {}
    if req.here:
        from perflab.fingerprint import machine_fingerprint

        here_fp = machine_fingerprint().to_json()

    def stamp(rs: ResultSet) -> None:
        rs.commit, rs.dirty, rs.repo = c, dirty, r
        rs.fingerprint = Fingerprint.from_json({**rs.fingerprint.to_json(), **here_fp})
        rs.status = "complete"
    return stamp


def merge_results(loaded: list[ResultSet], names: list[str] | None, force: bool,
                  warn: Warn = _stderr, origin: str = "") -> ResultSet:
    """A new in-memory comparison of the configurations of ``loaded`` (stored results, or
    files imported in memory): by configuration name when they hold several."""
    from perflab.console import warning
    from perflab.judging import Plan
    from perflab.model import ResultSet

    first = loaded[0]
    for other in loaded[1:]:
        diff = first.fingerprint.differences(other.fingerprint)
        if diff:
            what = "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in diff.items())
            if not force:
                raise PerflabError(
                    f"results {first.id} and {other.id} were measured on different machines "
                    f"({what})", "compare results from one machine, or pass --force")
            warn(f"[bold red]WARNING:[/] results {first.id} and {other.id} come from "
                 f"different machines ({what}): the comparison mixes machines")
    sources = {r.id: r.source for r in loaded}
    if len(set(sources.values())) > 1:
        warn(warning("these results come from different tools ("
                     + ", ".join(f"result {i}: {s}" for i, s in sources.items())
                     + "), which time different things (launcher, fork/exec, in-process "
                     "loop): a difference may be the tools', not the code's; verdicts are "
                     "labelled not interleaved"))
    rs = ResultSet(kind="compare", fingerprint=first.fingerprint, settings=first.settings.copy(),
                   status="complete")
    names = list(names or [])
    # Results of one configuration each are compared with each other (A vs B); results of
    # several (pyperf suites, suites, compares) are paired by configuration name, so that
    # "join" is compared with "join" and never with "sort".
    by_name = any(len(r.configurations) > 1 for r in loaded)
    mixed: dict[str, tuple[str, str]] = {}
    for i, src in enumerate(loaded):
        for cfg in src.configurations:
            cfg.cell = json.dumps({"configuration": cfg.name}) if by_name else "{}"
            cfg.is_baseline = False
            label = names[i] if i < len(names) else f"#{src.id} {cfg.name}"
            if len(src.configurations) > 1:
                label = f"#{src.id} {cfg.name}"
            cfg.name = label
            rs.configurations.append(cfg)
        for m, info in src.metrics.items():
            have = rs.metrics.setdefault(m, info)
            if _how_measured(have.source) != _how_measured(info.source):
                mixed.setdefault(m, (have.source, info.source))
        rs.notes.extend(src.notes)  # each said once
    for m, (a, b) in mixed.items():
        # One metric measured two ways (a timed region against the whole process, a
        # workload's own figure against perflab's): said once, and kept with the result.
        line = said.measured_differently(m, a, b)
        warn(warning(line))
        rs.notes.add(line)
    rs.settings.interleaved = False  # different sessions: no pairing
    # Each stored result was judged with its own looks: the comparison keeps the most, and
    # the strictest level any of them was judged at.
    rs.settings.comparison = Plan.of(first, looks=max(Plan.of(r).looks for r in loaded),
                                     level=min(Plan.of(r).alpha_look for r in loaded))
    rs.notes.add(said.measured_apart(origin))
    for cell in rs.cells():
        rs.configurations_in(cell)[0].is_baseline = True  # the first result's, in each cell
    return rs


def keep_compared(rs: ResultSet, match: str | None) -> None:
    """Of a merged comparison, the benchmarks ``match`` (a regular expression, --match)
    selects; when several are compared, those in one result only are left out and said in a
    note."""
    from perflab.reports.benchmarks import keep_matching

    try:
        alone = keep_matching(rs, match)
    except re.error as e:
        raise PerflabError(f"--match {match!r} is not a regular expression ({e})",
                           "e.g. --match 'Kernel/(sum|fnv)'") from None
    if not rs.configurations:
        raise PerflabError(f"--match {match!r} matches no benchmark", "check the names")
    both = sum(len(rs.configurations_in(cell)) > 1 for cell in rs.cells())
    if alone and both > 1:  # many benchmarks, judged together: the rest is said, not shown
        rs.notes.add(f"{len(alone)} benchmark(s) in one result only, not compared: "
                     + ", ".join(alone[:10]) + (" ..." if len(alone) > 10 else ""))
        rs.configurations = [c for c in rs.configurations
                             if len(rs.configurations_in(c.cell)) > 1]


# -- exports --------------------------------------------------------------------------------------
def check_exports(paths: dict[str, Path | None]) -> None:
    """Refuse an export path that cannot be written before measuring, not after."""
    from perflab.reports.export import EXPORTERS, STDOUT

    to_stdout = [EXPORTERS[f].option for f, p in paths.items() if str(p) == STDOUT]
    if len(to_stdout) > 1:
        raise PerflabError(f"{' and '.join(to_stdout)} both ask for standard output ('-')",
                           "send one of them to a file")
    for fmt, path in paths.items():
        if str(path) != STDOUT:
            writable_file(path, EXPORTERS[fmt].option)


def export(analysis: Analysis, paths: dict[str, Path | None]) -> list[Path]:
    """Write every export asked for (reports.export's registry); the paths written."""
    from perflab.reports.export import export_all

    rs = analysis.rs
    try:
        return list(export_all(analysis, paths))
    except OSError as e:
        raise PerflabError(f"cannot write {e.filename}: {e.strerror} (the result is stored as "
                           f"{rs.id})", f"export it again: perflab results show {rs.id} "
                           "--export-...") from None
