"""Verbs of the measurement core: `stat`, `compare`, `results list|show`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from perflab.cmdline import forgiving_argv
from perflab.console import stdout_console
from perflab.errors import PerflabError
from perflab.fingerprint import differences, machine_fingerprint, pmu_status
from perflab.model import BUILTIN_METRICS, Configuration, ResultSet, metric_direction
from perflab.reports.export import EXPORTERS, export_all
from perflab.reports.format import fmt_seconds
from perflab.reports.terminal import (
    compare_table,
    correction_line,
    fit,
    metrics_to_show,
    stat_table,
)
from perflab.reports.warnings import result_warnings
from perflab.runner import MeasureOptions, measure
from perflab.stats import (
    CORRECTIONS,
    DEFAULT_CORRECTION,
    DEFAULT_THRESHOLD,
    ESTIMATOR_CHOICES,
    MIN_RUNS,
    Comparison,
    Estimator,
    Plan,
    check_estimator_runs,
    compare_result,
    parse_estimator,
)
from perflab.storage import Store
from perflab.validate import fraction, parse_cpus, positive, split_command, writable_file

# Piped output (files, CI logs) gets a wide table rather than one folded to 80 columns.
console = stdout_console()
err = Console(stderr=True)

# Shared option types, so stat and compare spell them the same way.
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
EstimatorOpt = Annotated[str | None, typer.Option(
    "--estimator", help="median | mean | trim | trim:LOW:HIGH (trimmed mean leaving out the "
    "lowest LOW and highest HIGH fraction of runs; default trim = trim:0.2:0.2).")]
Threshold = Annotated[float | None, typer.Option(
    "--threshold", help="Equivalence band: +-T (default 0.01 = 1%; "
    "`results show` and `report` use the one stored with the result).")]
Correction = Annotated[str | None, typer.Option(
    "--correction", help="holm | bh | none for the primary metric's family (default holm; "
    "other metrics: bh per metric).")]
Metric = Annotated[str | None, typer.Option(
    "--metric", "-m", help="Primary metric (wall_time, task_clock, instructions, a workload key). "
    "Default: CPU time (task_clock, or cpu_time without perf events; cpu_ns_per_op for a "
    "workload's ns_per_op) when the warm-up shows CPU-bound work, else wall time; the choice "
    "and its reason are printed.")]
Pin = Annotated[str | None, typer.Option("--pin", help="CPUs for the command: 0 | 0,1 | 0-3.")]
Timeout = Annotated[float | None, typer.Option("--timeout", help="Kill a run after SECONDS.")]
Env = Annotated[list[str] | None, typer.Option("--env", help="K=V for the command (repeatable).")]
Shell = Annotated[bool, typer.Option("--shell", help="Run commands through /bin/sh -c.")]
IgnoreFailure = Annotated[bool, typer.Option("--ignore-failure", help="Keep going when a run "
                                             "exits non-zero; failed runs are left out.")]
NoCounters = Annotated[bool, typer.Option("--no-counters", help="Do not open perf counters.")]
RegionSymbol = Annotated[str | None, typer.Option(
    "--region-symbol", help="callgrind: count only inside this function (glob).")]
ExportJson = Annotated[Path | None, typer.Option("--export-json", help="Write the JSON schema.")]
ExportCsv = Annotated[Path | None, typer.Option("--export-csv", help="Write summaries as CSV.")]
ExportMd = Annotated[Path | None, typer.Option("--export-markdown", help="Write a Markdown table.")]
ExportHyperfine = Annotated[Path | None, typer.Option(
    "--export-hyperfine", help="Write hyperfine's --export-json layout (wall times per run).")]
ExportPyperf = Annotated[Path | None, typer.Option(
    "--export-pyperf", help="Write pyperf's JSON (for `python -m pyperf compare_to`).")]
# str, not Path: a Path would fold postgresql://host/db into postgresql:/host/db.
Db = Annotated[str | None, typer.Option("--db", envvar="PERFLAB_DB",
                                         help="Result database (default: user data dir).")]
Workload = Annotated[list[str] | None, typer.Option(
    "--workload", "-W", help="A workload by name, optionally with k=v parameters: "
    "'eh/cpp depth=10' (repeatable).")]
Param = Annotated[list[str] | None, typer.Option(
    "--param", "-p", help="k=v for every workload given (repeatable).")]
Label = Annotated[str, typer.Option("--label", help="A note stored with the result.")]
CommitOpt = Annotated[str | None, typer.Option("--commit", help="Commit of the code measured "
                                               "(default: the working directory's).")]
RepoOpt = Annotated[Path | None, typer.Option("--repo", help="Git repository of the code "
                                              "measured (default: the working directory).")]
Seed = Annotated[int | None, typer.Option("--seed", help="Seed for the run order.")]


def parse_env(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise PerflabError(f"--env {item!r} is not K=V", "write e.g. --env OMP_NUM_THREADS=1")
        out[k] = v
    return out


def workload_config(spec: str, common: dict[str, str], name: str | None,
                    valgrind: bool) -> tuple[Configuration, Any]:
    """'eh/cpp depth=10 threads=2' -> a Configuration running that workload."""
    from perflab.workloads.registry import get, parse_assignments

    parts = split_command(spec, "--workload")
    w = get(parts[0])
    params = {**common, **parse_assignments(parts[1:])}
    if valgrind and "iterations" in w.params and str(params.get("iterations", "0")) == "0":
        # A calibrated iteration count depends on timing, which would make instruction counts
        # differ from run to run: pin it for counting.
        params["iterations"] = "20000"
    argv, typed = w.command(params)
    label = name or " ".join([w.name] + [f"{k}={v}" for k, v in parse_assignments(parts[1:])
                                         .items()])
    return Configuration(name=label, command=argv, benchmark=w.name, params=typed), w


def _git(repo: Path | None, commit: str | None) -> tuple[str | None, bool | None, str | None]:
    """The commit measured: the working directory's, or --commit resolved in --repo."""
    from perflab.history.git import git_state

    return git_state(repo, commit)


def check_plan(estimator: str | None, correction: str | None, runs: int | None,
               verdict: bool) -> Estimator:
    """Validate --estimator / --correction / --runs before anything runs: one clear line each."""
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
                err.print(f"[yellow]warning:[/] --runs {runs} is below the {MIN_RUNS} runs a "
                          "verdict needs: the comparisons will be labelled inconclusive (too "
                          "few runs)", highlight=False)
        elif why and estimator:  # stat too: a trimmed mean's CI needs MIN_RUNS kept
            raise PerflabError(f"--estimator {why}", "raise --runs or choose a lighter trim")
        elif why and verdict:
            err.print(f"[yellow]warning:[/] the default estimator ({est.label}) needs "
                      f"{est.min_runs()} runs: with --runs {runs} the comparisons will be "
                      "inconclusive (too few runs); raise --runs or pass --estimator median",
                      highlight=False)
    return est


def build_options(*, warmup: int, runs: int | None, min_runs: int | None, max_runs: int,
                  budget: float | None, precision: float | None, metric: str | None,
                  pin: str | None, timeout: float | None, env: list[str] | None,
                  ignore_failure: bool, no_counters: bool, region_symbol: str | None,
                  seed: int | None, default_primary: str = "wall_time",
                  estimator: str | None = None, threshold: float | None = None,
                  correction: str | None = None) -> MeasureOptions:
    primary = metric or default_primary
    positive(budget, "--budget", "60")
    positive(timeout, "--timeout", "30")
    if precision is not None:
        fraction(precision, "--precision", "0.01")
    instructions = None
    if primary in ("instructions", "instructions_per_op") and "instructions" not in \
            pmu_status()["hardware"]:
        instructions = "valgrind"
    return MeasureOptions(
        warmup=warmup, runs=runs, min_runs=min_runs, max_runs=max(max_runs, min_runs or 0),
        budget=budget, precision=precision, primary_metric=primary, auto_primary=metric is None,
        pin=parse_cpus(pin), estimator=str(parse_estimator(estimator)),
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
        correction=correction or DEFAULT_CORRECTION,
        timeout=timeout, ignore_failure=ignore_failure,
        counters="none" if no_counters else "auto", instructions=instructions,
        region_symbol=region_symbol, seed=seed, env=parse_env(env))


def _check_exports(paths: dict[str, Path | None]) -> None:
    """Refuse an export path that cannot be written before measuring, not after."""
    for fmt, path in paths.items():
        writable_file(path, EXPORTERS[fmt].option)


def _require_successful_runs(rs: ResultSet, store: Store | None) -> None:
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


def _export(rs: ResultSet, comps: list[Comparison], plan: Plan,
            paths: dict[str, Path | None]) -> None:
    try:
        written = export_all(rs, comps, plan, paths)
    except OSError as e:
        raise PerflabError(f"cannot write {e.filename}: {e.strerror} (the result is stored as "
                           f"{rs.id})", f"export it again: perflab results show {rs.id} "
                           "--export-...") from None
    for p in written:
        err.print(f"wrote {p}")


def _print_notes(rs: ResultSet) -> None:
    for n in rs.notes:
        console.print(f"[dim]note:[/] {n}", highlight=False)
    for w in result_warnings(rs):
        console.print(f"[yellow]warning:[/] {w}", highlight=False)


def _header(rs: ResultSet, store: Store) -> None:
    state = {"complete": "", "interrupted": " [yellow](interrupted: partial)[/]",
             "failed": " [red](failed)[/]"}.get(rs.status, f" ({rs.status})")
    console.print(f"[dim]result {rs.id} in {store.location}{state}[/]", highlight=False)


def stat(
    command: Annotated[list[str] | None, typer.Argument(help="The command and its arguments.")]
    = None,
    workload: Workload = None, param: Param = None, warmup: Warmup = 1, runs: Runs = None,
    min_runs: MinRuns = None, max_runs: MaxRuns = 1000, budget: Budget = None,
    precision: Precision = None, metric: Metric = None, pin: Pin = None, timeout: Timeout = None,
    env: Env = None, shell: Shell = False, ignore_failure: IgnoreFailure = False,
    no_counters: NoCounters = False, region_symbol: RegionSymbol = None,
    export_json: ExportJson = None, export_csv: ExportCsv = None, export_markdown: ExportMd = None,
    export_hyperfine: ExportHyperfine = None, export_pyperf: ExportPyperf = None,
    db: Db = None, label: Label = "", commit: CommitOpt = None, repo: RepoOpt = None,
    seed: Seed = None, estimator: EstimatorOpt = None,
) -> None:
    """Run a command (or a workload) repeatedly and report every metric, like perf stat -r.

    \b
    The command, either way:
      perflab stat -- ./prog --size 10    argv (perf's way)
      perflab stat './prog --size 10'     one quoted string (hyperfine's way)
      perflab stat -W eh/cpp -p depth=10  a workload
    """
    est = check_plan(estimator, None, runs, verdict=False) if estimator else None
    if bool(command) == bool(workload):
        raise PerflabError("give either a COMMAND or --workload NAME",
                           "e.g. perflab stat -- ./prog arg, or perflab stat -W eh/cpp")
    if workload and len(workload) > 1:
        raise PerflabError("stat measures one workload", "use `perflab compare` for several")
    if command and not command[0].strip():
        raise PerflabError("an empty command was given", "give the program to run after --")
    exports = {"json": export_json, "csv": export_csv, "markdown": export_markdown,
               "hyperfine": export_hyperfine, "pyperf": export_pyperf}
    _check_exports(exports)
    default_primary, rsym = "wall_time", region_symbol
    if workload:
        probe_valgrind = (metric or "") in ("instructions", "instructions_per_op") and \
            "instructions" not in pmu_status()["hardware"]
        cfg, w = workload_config(workload[0], _assign(param), None, probe_valgrind)
        default_primary, rsym = w.primary or "wall_time", rsym or w.region_symbol
    else:
        assert command is not None
        command, note = forgiving_argv(list(command), shell=shell)
        if note:
            err.print(note, highlight=False, soft_wrap=True, markup=False)
        cfg = Configuration(name=" ".join(command), command=list(command), shell=shell,
                            benchmark=" ".join(command))
    opts = build_options(warmup=warmup, runs=runs, min_runs=min_runs, max_runs=max_runs,
                         budget=budget, precision=precision, metric=metric, pin=pin,
                         timeout=timeout, env=env, ignore_failure=ignore_failure,
                         no_counters=no_counters, region_symbol=rsym, seed=seed,
                         default_primary=default_primary, estimator=estimator)
    cfg.is_baseline = True
    store = Store(db)
    c, dirty, r = _git(repo, commit)
    rs = ResultSet(kind="stat", fingerprint=machine_fingerprint(), commit=c, dirty=dirty,
                   repo=r, label=label, created_at=time.time(),
                   settings={"options": _opts_dict(opts)})
    t0 = time.monotonic()
    measure(rs, [cfg], opts, store=store)
    _header(rs, store)
    console.print(fit(stat_table(rs, cfg, metrics_to_show(rs), est), console))
    console.print(f"[dim]{len(cfg.runs)} runs in {fmt_seconds(time.monotonic() - t0)}[/]")
    _print_notes(rs)
    _export(rs, [], Plan.of(rs), exports)
    if rs.status == "interrupted":
        raise typer.Exit(130)
    _require_successful_runs(rs, store)


def _assign(items: list[str] | None) -> dict[str, str]:
    from perflab.workloads.registry import parse_assignments

    return parse_assignments(items)


def _opts_dict(o: MeasureOptions) -> dict[str, Any]:
    return {k: v for k, v in vars(o).items() if k not in ("backend",)}


def compare(
    commands: Annotated[list[str] | None, typer.Argument(
        help="Commands, each ONE argument (quote it): 'prog -x' 'prog -y'.")] = None,
    name: Annotated[list[str] | None, typer.Option("--name", "-n", help="Name per command, "
                                                   "in order (repeatable).")] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Baseline by name "
                                                 "(default: the first).")] = None,
    threshold: Threshold = None, correction: Correction = None,
    estimator: EstimatorOpt = None,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 when the primary metric of any is a regression "
        "(slower, or larger memory/counts).")] = False,
    from_db: Annotated[list[int] | None, typer.Option(
        "--from-db", help="Compare stored results by id instead of running (repeatable).")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="Compare stored results measured on "
                                        "different machines anyway.")] = False,
    profile: Annotated[bool, typer.Option("--profile", help="Also record a perf profile of "
                                          "each configuration and diff them.")] = False,
    workload: Workload = None, param: Param = None, warmup: Warmup = 1, runs: Runs = None,
    min_runs: MinRuns = None, max_runs: MaxRuns = 1000, budget: Budget = None,
    precision: Precision = None, metric: Metric = None, pin: Pin = None, timeout: Timeout = None,
    env: Env = None, shell: Shell = False, ignore_failure: IgnoreFailure = False,
    no_counters: NoCounters = False, region_symbol: RegionSymbol = None,
    export_json: ExportJson = None, export_csv: ExportCsv = None, export_markdown: ExportMd = None,
    export_hyperfine: ExportHyperfine = None, export_pyperf: ExportPyperf = None,
    db: Db = None, label: Label = "", commit: CommitOpt = None, repo: RepoOpt = None,
    seed: Seed = None,
) -> None:
    """Compare commands or workloads side by side: % change with CI and a verdict per metric.

    \b
    One quoted string per command (hyperfine's way; the argv form is stat's and profile's):
      perflab compare './old/prog --size 10' './new/prog --size 10'
      perflab compare --shell 'cd a && ./prog' 'cd b && ./prog'
      perflab compare -W 'eh/cpp depth=10' -W 'eh/rust depth=10'
    """
    check_plan(estimator, correction, runs, verdict=not from_db)
    if threshold is not None:
        fraction(threshold, "--threshold", "0.01")
    exports = {"json": export_json, "csv": export_csv, "markdown": export_markdown,
               "hyperfine": export_hyperfine, "pyperf": export_pyperf}
    _check_exports(exports)
    if fail_on_regression and metric and metric_direction(metric) == "none":
        raise PerflabError(f"--fail-on-regression: {metric} has no direction (neither lower nor "
                           "higher is better), so it cannot regress",
                           "use --metric with a time, memory or count metric")
    store = Store(db)
    if from_db and not force:
        loaded = [store.load(i) for i in from_db]
        from perflab.fleet.permachine import machines_differ, show

        if machines_differ(loaded):
            # Several machines: side by side, each judged on its own samples (never pooled).
            show(loaded, console, out=None, metric=metric, threshold=threshold,
                 correction=correction, baseline=baseline)
            return
    if from_db:
        rs = _from_db(store, from_db, name, force)
        rs.settings["comparison"] = Plan.of(rs, threshold=threshold, correction=correction,
                                            estimator=estimator).to_dict()
    else:
        rs = _run_compare(store, commands or [], name, workload, param, shell, warmup=warmup,
                          runs=runs, min_runs=min_runs, max_runs=max_runs, budget=budget,
                          precision=precision, metric=metric, pin=pin, timeout=timeout, env=env,
                          ignore_failure=ignore_failure, no_counters=no_counters,
                          region_symbol=region_symbol, seed=seed, label=label, commit=commit,
                          repo=repo, estimator=estimator, threshold=threshold,
                          correction=correction)
    _set_baseline(rs, baseline)
    if from_db is None:
        _header(rs, store)
    shown = metrics_to_show(rs, [metric] if metric and metric not in rs.metrics else None)
    plan = Plan.of(rs)
    comps = compare_result(rs, shown, plan=plan)
    for cell in rs.cells():  # one cell, except --from-db of results with several names
        if len(rs.configurations_in(cell)) > 1:
            console.print(fit(compare_table(rs, comps, shown, cell), console))
        else:
            console.print(fit(stat_table(rs, rs.configurations_in(cell)[0], shown), console))
    stop = rs.settings.get("stop") if from_db is None else None
    if stop and stop.get("reason"):
        console.print(f"[dim]{stop['rounds']} runs per configuration in "
                      f"{fmt_seconds(stop['seconds'])}: stopped because {stop['reason']}[/]",
                      highlight=False)
    primary = rs.settings.get("primary_metric", "wall_time")
    console.print(f"[dim]{correction_line(comps, plan, primary)}[/]", highlight=False)
    _print_stories(rs, comps)
    _print_notes(rs)
    if rs.id is not None and from_db is None:
        store.update_result(rs)
    _export(rs, comps, plan, exports)
    if profile:
        _profiles(rs, store)
    if rs.status == "interrupted":
        raise typer.Exit(130)
    _require_successful_runs(rs, store if from_db is None else None)
    if fail_on_regression:
        info = rs.metrics.get(primary)
        if info is not None and info.direction == "none":
            raise PerflabError(f"--fail-on-regression: the primary metric {primary} has no "
                               "direction, so it cannot regress",
                               "use --metric with a time, memory or count metric")
        bad = [c for c in comps if c.metric == primary and c.regression]
        if bad:
            err.print(f"[red]regression:[/] {primary} is {bad[0].verdict} "
                      f"({', '.join(c.candidate for c in bad)})", highlight=False)
            raise typer.Exit(1)


def _print_stories(rs: ResultSet, comps: list[Comparison]) -> None:
    from perflab.profiles import counter_story

    for line in counter_story(rs, comps):
        console.print(f"[bold]story:[/] {line}", highlight=False)


def _profiles(rs: ResultSet, store: Store) -> None:
    from perflab.profiles import record_profile
    from perflab.profiles.cli import diff_cmd

    ids = []
    for cfg in rs.configurations:
        argv = ["/bin/sh", "-c", " ".join(cfg.command)] if cfg.shell else cfg.command
        pid = record_profile(argv, env=cfg.env or None, name=cfg.name, store=store,
                             result_id=rs.id, configuration_id=cfg.id)
        err.print(f"profile {pid}: {cfg.name}")
        ids.append(pid)
    for other in ids[1:]:
        diff_cmd(ids[0], other, store, 15, None)


def _run_compare(store: Store, commands: list[str], names: list[str] | None,
                 workloads: list[str] | None, param: list[str] | None, shell: bool,
                 label: str, commit: str | None, repo: Path | None, **kw: Any) -> ResultSet:
    names = list(names or [])
    configs: list[Configuration] = []
    default_primary, rsym = "wall_time", kw["region_symbol"]
    metric = kw["metric"]
    valgrind = (metric or "") in ("instructions", "instructions_per_op") and \
        "instructions" not in pmu_status()["hardware"]
    for i, spec in enumerate(workloads or []):
        cfg, w = workload_config(spec, _assign(param), names[i] if i < len(names) else None,
                                 valgrind)
        default_primary, rsym = w.primary or default_primary, rsym or w.region_symbol
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
    seen: set[str] = set()
    for c in configs:
        if c.name in seen:
            raise PerflabError(f"two configurations are named {c.name!r}",
                               "name them with -n/--name")
        seen.add(c.name)
        c.cell = "{}"  # one comparison: every configuration against the baseline
    configs[0].is_baseline = True
    kw["region_symbol"] = rsym
    opts = build_options(default_primary=default_primary, **kw)
    c, dirty, r = _git(repo, commit)
    rs = ResultSet(kind="compare", fingerprint=machine_fingerprint(), commit=c, dirty=dirty,
                   repo=r, label=label, created_at=time.time(),
                   settings={"options": _opts_dict(opts)})
    measure(rs, configs, opts, store=store)
    return rs


def _set_baseline(rs: ResultSet, baseline: str | None) -> None:
    if baseline is None:
        return
    names = [c.name for c in rs.configurations]
    if baseline not in names:
        raise PerflabError(f"--baseline {baseline!r} is not one of the configurations",
                           f"choose one of: {', '.join(names)}")
    for c in rs.configurations:
        c.is_baseline = c.name == baseline


def _from_db(store: Store, ids: list[int], names: list[str] | None, force: bool) -> ResultSet:
    """A new in-memory comparison of configurations from stored results (nothing re-run)."""
    if len(ids) < 2:
        raise PerflabError("--from-db needs at least two result ids",
                           "e.g. --from-db 3 --from-db 7")
    loaded = [store.load(i) for i in ids]
    first = loaded[0]
    for other in loaded[1:]:
        diff = differences(first.fingerprint, other.fingerprint)
        if diff:
            what = "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in diff.items())
            if not force:
                raise PerflabError(
                    f"results {first.id} and {other.id} were measured on different machines "
                    f"({what})", "compare results from one machine, or pass --force")
            err.print(f"[bold red]WARNING:[/] results {first.id} and {other.id} come from "
                      f"different machines ({what}): the comparison mixes machines")
    sources = {r.id: r.source for r in loaded}
    if len(set(sources.values())) > 1:
        err.print("warning: these results come from different tools ("
                  + ", ".join(f"result {i}: {s}" for i, s in sources.items())
                  + "), which time different things (launcher, fork/exec, in-process loop): "
                  "a difference may be the tools', not the code's; verdicts are labelled "
                  "not interleaved")
    rs = ResultSet(kind="compare", fingerprint=first.fingerprint, settings=dict(first.settings),
                   status="complete")
    names = list(names or [])
    # Results of one configuration each are compared with each other (A vs B); results of
    # several (pyperf suites, suites, compares) are paired by configuration name, so that
    # "join" is compared with "join" and never with "sort".
    by_name = any(len(r.configurations) > 1 for r in loaded)
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
            rs.metrics.setdefault(m, info)
        rs.notes += [n for n in src.notes if n not in rs.notes]
    rs.settings["interleaved"] = False  # different sessions: no pairing
    # Each stored result was judged with its own looks: the comparison keeps the most.
    rs.settings["comparison"] = Plan.of(first, looks=max(Plan.of(r).looks for r in loaded)
                                        ).to_dict()
    rs.notes.append(f"compared from the store (results {', '.join(map(str, ids))}); measured at "
                    "different times, so drift between them is not controlled")
    for cell in rs.cells():
        rs.configurations_in(cell)[0].is_baseline = True  # the first result's, in each cell
    return rs


results_app = typer.Typer(help="Stored results: list and show.", no_args_is_help=True)


@results_app.command("list")
def results_list(db: Db = None, limit: Annotated[int, typer.Option("--limit")] = 30) -> None:
    """List stored results, newest first."""
    from rich.table import Table

    store = Store(db)
    t = Table(header_style="bold")
    for col in ("id", "kind", "when", "status", "configurations", "runs", "commit", "label"):
        t.add_column(col)
    for r in store.list_results(limit):
        t.add_row(str(r["id"]), r["kind"], time.strftime("%Y-%m-%d %H:%M",
                                                         time.localtime(r["created_at"])),
                  r["status"], ", ".join(r["names"])[:60], str(r["runs"]),
                  (r["commit"] or "")[:10], r["label"] or "")
    console.print(t)


@results_app.command("show")
def results_show(
    result_id: Annotated[int, typer.Argument(help="Result id (see `results list`).")],
    db: Db = None, threshold: Threshold = None, correction: Correction = None,
    estimator: EstimatorOpt = None,
    export_json: ExportJson = None, export_csv: ExportCsv = None,
    export_markdown: ExportMd = None, export_hyperfine: ExportHyperfine = None,
    export_pyperf: ExportPyperf = None,
) -> None:
    """Show a stored result: its tables, environment and notes (verdicts with the threshold,
    correction and estimator stored with it, unless overridden)."""
    check_plan(estimator, correction, None, verdict=False)
    if threshold is not None:
        fraction(threshold, "--threshold", "0.01")
    exports = {"json": export_json, "csv": export_csv, "markdown": export_markdown,
               "hyperfine": export_hyperfine, "pyperf": export_pyperf}
    _check_exports(exports)
    store = Store(db)
    rs = store.load(result_id)
    _header(rs, store)
    fp = rs.fingerprint
    console.print(f"[dim]{fp.get('cpu_model')} x{fp.get('cpu_count')}, kernel {fp.get('kernel')}, "
                  f"PMU: {'yes' if fp.get('pmu') else 'no'}, commit {rs.commit or '-'}[/]",
                  highlight=False)
    shown = metrics_to_show(rs)
    plan = Plan.of(rs, threshold=threshold, correction=correction, estimator=estimator)
    comps = compare_result(rs, shown, plan=plan)
    for cell in rs.cells():
        if len(rs.configurations_in(cell)) == 1:
            cfg = rs.configurations_in(cell)[0]
            console.print(fit(stat_table(rs, cfg, shown), console))
        else:
            console.print(fit(compare_table(rs, comps, shown, cell), console))
    if comps:
        console.print(f"[dim]{correction_line(comps, plan, rs.settings.get('primary_metric'))}[/]",
                      highlight=False)
    _print_notes(rs)
    _export(rs, comps, plan, exports)


def register(app: typer.Typer) -> None:
    ctx = {"allow_interspersed_args": False}
    app.command("stat", context_settings=ctx)(stat)
    app.command("compare")(compare)
    app.add_typer(results_app, name="results")


__all__ = ["register", "BUILTIN_METRICS"]
