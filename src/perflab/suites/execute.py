"""Run a plan cell by cell: one measure() call per cell with all its configurations.

measure() interleaves the configurations of the cell and saves every run as it completes.  After
each finished cell its key is recorded in the result's settings (``suite.done``), so
``--resume`` knows exactly which cells to skip.  A cell interrupted half-way keeps its runs in
the store, but its configurations are listed in ``suite.superseded`` and the cell is measured
again from the start: reports drop superseded configurations, so no cell counts twice and none
is lost.  The resume says so, in its output and in the result's notes.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from perflab.console import stderr_console
from perflab.errors import PerflabError, printable
from perflab.format import fmt_duration
from perflab.model import Configuration, ResultSet, Settings
from perflab.storage import Store
from perflab.suites.calibrate import CalibrationFailed, calibrate
from perflab.suites.plan import Cell, Speed, SuitePlan, history_key, probe_key


class _Remaining(ProgressColumn):
    """The suite bar: "cells" and the time left; measure()'s own bar: its runs and status.

    The time left is the plan's estimate of what is left (cells, then the report) at the pace
    of the cells measured so far in this session (time_left), steadier than a rate over a
    short window."""

    progress: Progress | None = None  # the bar's own Progress: measure()'s run counter

    def render(self, task: Task) -> Text:
        f = task.fields
        if "left_est" not in f:
            return Text(f"runs {f.get('status', '')}", style="dim")
        est = time_left(task.elapsed or 0.0, f["elapsed_done"], f["done_est"], f["cur_est"],
                        f["left_est"], self._runs_done())
        return Text(f"cells, about {fmt_duration(est)} left", style="cyan")

    def _runs_done(self) -> float | None:
        """The share of the group in flight's runs made (measure()'s own task), None before
        its runs start (calibration) or when their number is not fixed."""
        runs = [t for t in (self.progress.tasks if self.progress else [])
                if "left_est" not in t.fields and t.total]
        return min(1.0, runs[-1].completed / runs[-1].total) if runs else None  # type: ignore


def time_left(elapsed: float, elapsed_done: float, done_est: float, cur_est: float,
              left_est: float, runs_done: float | None = None) -> float:
    """Seconds a suite run has left.

    ``elapsed``: seconds since this session started measuring; ``elapsed_done``: at the end of
    the last group finished in this session, whose plan estimates add up to ``done_est``;
    ``cur_est``: the plan's estimate of the group in flight; ``left_est``: of everything left,
    the group in flight and the report included.  The pace (actual over estimated seconds) is
    the finished groups'; before the first ends, the plan's (1), and never less than the group
    in flight shows once it outlasts its estimate: a busy machine read "1/3 cells, about 1s
    left" with 15 s left (issue 25).  Nor is the group in flight done while ``runs_done`` (the
    share of its runs made) is below 1: what it has left is at least that share of its
    estimate, at the pace."""
    pace = elapsed_done / done_est if done_est > 0 else 1.0
    if done_est + cur_est > 0:
        pace = max(pace, elapsed / (done_est + cur_est))
    in_flight = elapsed - elapsed_done
    cur_left = max(pace * cur_est - in_flight, 0.0)
    if runs_done is not None:
        cur_left = max(cur_left, pace * cur_est * (1.0 - runs_done))
    return cur_left + pace * max(left_est - cur_est, 0.0)


def measure_options(plan: SuitePlan) -> Any:
    from perflab.runner import MeasureOptions

    suite = plan.suite
    m = dict(suite.measure)
    m.pop("expected_run_s", None)
    m.pop("calibrate", None)  # resolved per cell by run_plan (suites/calibrate.py)
    m.pop("calibrate_on", None)
    budget = m.pop("budget", None)
    if suite.primary:
        m["primary_metric"] = suite.primary
    else:  # no primary named: CPU time for CPU-bound work, wall time where it waits
        m["auto_primary"] = True
    opts = MeasureOptions(**m)
    if budget is not None:
        opts.budget = budget
    opts.threshold, opts.correction = suite.threshold, suite.correction
    opts.bands = dict(suite.bands)
    opts.estimator = suite.estimator
    # The primary metric is one family across the matrix: the stop rule of each cell decides at
    # the level the whole family will be judged at.
    opts.family_size = max(1, sum(len(c.configs) - 1 for c in plan.cells))
    return opts


def suite_settings(plan: SuitePlan) -> Settings:
    s = plan.suite
    return Settings(
        suite={
            "name": s.name, "path": str(s.path), "text": s.text, "plan": plan.fingerprint(),
            "baseline": s.baseline, "threshold": s.threshold, "correction": s.correction,
            "estimator": s.estimator,
            "metrics": s.metrics, "primary": s.primary, "report": s.report,
            "skipped": plan.skipped, "cells": [c.key for c in plan.cells],
            "calibrate": plan.calibrate, "calibrated": {},
            "done": [], "superseded": [],
        },
    )


@dataclass
class SuiteOutcome:
    """What run_plan did (collectors.process.RunOutcome is one run of a command)."""

    rs: ResultSet
    measured: int  # cells measured in this invocation
    skipped_done: int  # cells already done (resume)
    interrupted: bool


def _info(rs: ResultSet) -> dict[str, Any]:
    info = rs.settings.suite
    info.setdefault("done", [])
    info.setdefault("superseded", [])
    return info


def run_plan(plan: SuitePlan, store: Store, *, resume: int | None = None,
             console: Console | None = None, progress: bool = True,
             opts: Any = None, estimates: dict[str, float] | None = None,
             speed: Speed | None = None, report_s: float = 0.0) -> SuiteOutcome:
    """Measure the plan's cells not done yet (all, or those --resume has left); the progress
    bar's time left comes from the plan's estimate of each group (``estimates``: earlier runs,
    ``speed``: the machine now) and of the report after them (``report_s``)."""
    from perflab.runner import RunFailed, measure

    console = console or stderr_console()
    opts = opts if opts is not None else measure_options(plan)
    if resume is not None:
        rs = store.load(resume)
        info = rs.settings.suite
        if rs.kind != "suite" or not info:
            raise PerflabError(f"result {resume} is not a suite run",
                               "pass the id printed by 'perflab run' (perflab results list)")
        if info.get("plan") != plan.fingerprint():
            raise PerflabError(
                f"result {resume} was planned from a different suite (its cells or commands "
                "differ from this file's)",
                "resume with the suite file as it was, or start a new run without --resume")
        info = _info(rs)
        done = set(info["done"])
        # Configurations of a cell that never finished: keep their runs, drop them from reports.
        superseded = set(info["superseded"])
        partial: dict[str, int] = {}
        for c in rs.configurations:
            if c.cell not in done and c.id is not None:
                if c.id not in superseded:
                    info["superseded"].append(c.id)
                partial[c.cell] = partial.get(c.cell, 0) + len(c.runs)
        for cell_key, n in partial.items():
            if n == 0:
                continue
            # Superseded, not reused: the partial runs come from an earlier session (another
            # load, another round order), and mixing sessions in one cell would unpair them.
            note = (f"resumed: the {n} runs of unfinished cell {cell_key} from the interrupted "
                    "session are superseded (kept in the store, left out of the analysis); the "
                    "cell is measured again from the start")
            if note not in rs.notes:
                rs.notes.append(note)
            console.print(note, highlight=False, soft_wrap=True)
        rs.configurations = [c for c in rs.configurations if c.cell in done]
        info["failed"] = []  # failed cells are not done: they are measured again now
        rs.status = "running"
        store.update_result(rs)
    else:
        from perflab.fingerprint import machine_fingerprint

        rs = ResultSet(kind="suite", fingerprint=machine_fingerprint(), label=plan.suite.name,
                       settings=suite_settings(plan), created_at=time.time())
        store.begin_result(rs)
        info = _info(rs)
        done = set()
    todo = [c for c in plan.cells if c.key not in done]
    if resume is not None:
        console.print(f"resuming run {rs.id}: {len(done)} of {len(plan.cells)} cells done, "
                      f"{len(todo)} to go", highlight=False)
    interrupted = False
    measured = 0
    remaining = _Remaining()
    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        remaining, TimeElapsedColumn(),
        console=console, disable=not progress, transient=False)
    remaining.progress = prog
    groups = plan.groups(todo)
    group_est = [sum(plan.cell_seconds(c, estimates, speed) for c in g) for g in groups]
    left_est = sum(group_est) + report_s
    try:
        with prog:
            task = prog.add_task(escape(printable(f"{plan.suite.name} (run {rs.id})")),
                                 total=len(plan.cells), completed=len(done),
                                 elapsed_done=0.0, done_est=0.0, left_est=left_est,
                                 cur_est=group_est[0] if group_est else 0.0)
            for group, est in zip(groups, group_est, strict=True):
                # Matrix values come from the suite file: escaped, as every printed string is
                # (a progress line is not printed through the console's render_str).
                prog.update(task, cur_est=est, description=escape(printable(
                    f"{plan.suite.name} {_short(group[0].params)}"
                    + (f" (+{len(group) - 1} cells in the same rounds)" if len(group) > 1
                       else ""))))
                outcome = _measure_group(plan, group, rs, store, info, opts, prog, console,
                                         measure, RunFailed)
                measured += outcome.measured
                t = next(x for x in prog.tasks if x.id == task)
                prog.update(task, advance=outcome.ended, elapsed_done=t.elapsed or 0.0,
                            done_est=t.fields["done_est"] + est,
                            left_est=t.fields["left_est"] - est)
                if outcome.stop:
                    interrupted = rs.status == "interrupted"
                    break
    except KeyboardInterrupt:
        # Ctrl-C between two cells (measure() handles it during one): the cell in flight is
        # not marked done, so --resume supersedes and redoes it.
        interrupted = True
        rs.status = "interrupted"
        store.update_result(rs)
    if not interrupted:
        complete = len(set(info["done"])) == len(plan.cells)
        rs.status = "complete" if complete else "failed" if info.get("failed") else "interrupted"
        store.update_result(rs)
    return SuiteOutcome(rs=rs, measured=measured, skipped_done=len(done), interrupted=interrupted)


@dataclass
class _GroupOutcome:
    measured: int  # cells measured
    ended: int  # cells measured or failed (the progress bar's advance)
    stop: bool  # interrupted or failed for good: no further group


def _measure_group(plan: SuitePlan, group: list[Cell], rs: ResultSet, store: Store,
                   info: dict[str, Any], opts: Any, prog: Progress, console: Console,
                   measure: Any, run_failed: type[Exception]) -> _GroupOutcome:
    """Measure the cells of one group (SuitePlan.groups) in one measurement: their configurations
    alternate in the same rounds.  A cell whose calibration fails is left out of it; a run
    that fails fails the group's cells (--resume retries them)."""
    cells: list[Cell] = []
    configs: list[Configuration] = []
    failed = 0
    for cell in group:
        try:
            argvs = _calibrated_commands(plan, cell, opts, info)
        except CalibrationFailed as e:
            _cell_failed(rs, store, info, cell, e.line(), console)
            failed += 1
            continue
        cells.append(cell)
        configs += [Configuration(name=p.name, command=argvs[p.name], benchmark=p.benchmark,
                                  params=dict(cell.params), is_baseline=p.is_baseline,
                                  shell=p.shell, env=dict(p.env)) for p in cell.configs]
    if not cells:
        return _GroupOutcome(0, failed, False)
    failure = ""
    before = len(rs.configurations)
    try:
        measure(rs, configs, opts, store=store, progress=prog)
    except KeyboardInterrupt:
        rs.status = "interrupted"
    except run_failed as e:
        # One broken cell (a crash, a timeout) must not cost the rest of the study: record
        # it, keep its runs out of the analysis, go on; --resume retries it.
        failure = e.line()  # type: ignore[attr-defined]
        rs.status = "running"
    except PerflabError:
        # A mistake that every cell would repeat (an unknown primary metric): stop.
        rs.status = "failed"
        _supersede(info, configs)
        store.update_result(rs)
        raise
    # measure() appends the configurations; be tolerant if it did not.
    for c in configs:
        if not any(x is c for x in rs.configurations[before:]):
            rs.configurations.append(c)
    if failure or rs.status in ("interrupted", "failed"):
        _supersede(info, configs)
        rs.configurations = [c for c in rs.configurations if not any(c is x for x in configs)]
        if failure:
            for cell in cells:
                _cell_failed(rs, store, info, cell, failure, console)
            return _GroupOutcome(0, failed + len(cells), False)
        store.update_result(rs)
        return _GroupOutcome(0, failed, True)
    info["done"] += [c.key for c in cells]
    if len(cells) > 1:  # measured in the same rounds: stats.axis_comparisons pairs them
        info.setdefault("groups", []).append([c.key for c in cells])
    rs.status = "running"
    store.update_result(rs)
    return _GroupOutcome(len(cells), failed + len(cells), False)


def _supersede(info: dict[str, Any], configs: list[Configuration]) -> None:
    for c in configs:
        if c.id is not None and c.id not in info["superseded"]:
            info["superseded"].append(c.id)


def _calibrated_commands(plan: SuitePlan, cell: Cell, opts: Any,
                         info: dict[str, Any]) -> dict[str, list[str]]:
    """Each configuration's command for this cell: with [measure] calibrate, the iteration
    count that gives the target timed region, resolved now and fixed for the cell's runs."""
    out = {p.name: list(p.argv) for p in cell.configs}
    target = plan.calibrate
    if not target:
        return out
    counts: dict[str, int] = {}
    probe_s: dict[str, float] = {}
    todo = [p for p in cell.configs if p.calibratable()]
    shared = plan.suite.measure.get("calibrate_on") == "baseline"
    if shared:
        # One count for the whole cell (the same work in every configuration, e.g. the same
        # prefix of a seeded sequence, so checksums agree), found on the baseline.
        todo.sort(key=lambda p: not p.is_baseline)
    for p in todo:
        if shared and counts:
            n = next(iter(counts.values()))
        else:
            got = calibrate(p.argv_with, p.env, p.start_iterations(), target,
                            p.workload.params["iterations"], p.name, opts.timeout)
            n = got.iterations
            probe_s[p.name] = round(got.seconds, 4)
        counts[p.name] = n
        out[p.name] = p.argv_with(n)
    info.setdefault("calibrated", {})[cell.key] = counts
    info.setdefault("calibration_s", {})[cell.key] = probe_s  # for the next run's estimate
    return out


def _cell_failed(rs: ResultSet, store: Store, info: dict[str, Any], cell: Cell,
                 failure: str, console: Console) -> None:
    """Record a cell that could not be measured (its calibration or a run failed), say so in
    one line, and go on with the study (--resume retries it)."""
    info.setdefault("failed", []).append({"cell": cell.key, "error": failure})
    console.print(f"[red]cell {_short(cell.params)} failed:[/] {failure}", highlight=False,
                  soft_wrap=True)
    store.update_result(rs)


def _short(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def describe_plan(plan: SuitePlan, per_run: dict[str, float] | None = None,
                  speed: Speed | None = None, *, report: bool = True) -> list[str]:
    """The --dry-run text: cells, configurations, commands and the estimated time."""
    s = plan.suite
    lines = [f"suite {s.name} ({s.path}): {len(plan.cells)} cells, {plan.n_configs} "
             f"configuration series, baseline {s.baseline}"]
    for msg in plan.skipped:
        lines.append(f"  note: {msg}")
    for cell in plan.cells:
        lines.append(f"  cell {_short(cell.params) or '(single)'}")
        for p in cell.configs:
            mark = " (baseline)" if p.is_baseline else ""
            lines.append(f"    {p.name}{mark}: {shlex.join(p.argv)}")
    m = s.measure
    per = (f"{m['runs']} runs" if "runs" in m else
           f"adaptive {m.get('min_runs', 6)}..{m.get('max_runs', 1000)} runs until the "
           "primary comparisons are decided"
           + (f" or every CI is within +-{m['precision']:.1%}" if "precision" in m else ""))
    budget = (f", budget {m['budget']:.0f}s a cell" if "budget" in m else
              "" if "runs" in m else ", budget 10 s per configuration")
    est = plan.estimate_seconds(per_run, speed)
    rep = plan.report_seconds(speed) if report else 0.0
    cal = (f"iterations calibrated per cell to {plan.calibrate * 1e3:g} ms of timed region a "
           "run, then " if plan.calibrate else "")
    known = sum(1 for c in plan.cells for p in c.configs
                if per_run and (history_key(p.name, c.key) in per_run
                                or shlex.join(p.argv) in per_run))
    basis = [f"from earlier runs for {known} of {plan.n_configs} configuration series"
             if known else "no earlier runs"]
    if speed is not None:
        if speed.start_s:
            n = len(speed.start_s)
            basis.append(f"start-up measured now for {n} configuration{'s' * (n != 1)}")
        basis.append(f"this machine now runs a thread at {1 / speed.slowdown:.0%} of a CPU")
    what = (f"{fmt_duration(est)} measuring + {fmt_duration(rep)} report ({plan.report_plots()} "
            "plots)" if report else "")
    lines.append(f"per configuration: {cal}{m.get('warmup', 1)} warm-up + {per}{budget}; "
                 f"estimated time {fmt_duration(est + rep)}"
                 + (f" = {what}" if what else "") + f" ({'; '.join(basis)})")
    return lines


def history_per_run(store: Store, plan: SuitePlan) -> dict[str, float]:
    """Median wall time per command from earlier results in the store, for estimates.

    Keyed by the exact command line: the same workload with another iteration count is a
    different command and takes a different time."""
    import statistics

    wanted = {_cmd_key(p.argv) for c in plan.cells for p in c.configs}
    wanted_cells = {history_key(p.name, c.key) for c in plan.cells for p in c.configs}
    found: dict[str, list[float]] = {}
    try:
        ids = store.result_ids()[-20:]
    except PerflabError:
        return {}
    for rid in reversed(ids):
        try:
            rs = store.load(rid)
        except PerflabError:
            continue
        info = rs.settings.suite
        # The same suite with the same calibration target: the same configuration in the same
        # cell runs as long as it did then, whatever iteration count calibration picks.
        same_suite = (rs.kind == "suite" and info.get("name") == plan.suite.name
                      and info.get("calibrate") == plan.calibrate)
        superseded = set(info.get("superseded") or [])
        if same_suite:
            for cell_key, by_config in (info.get("calibration_s") or {}).items():
                for name, secs in by_config.items():
                    found.setdefault(probe_key(name, cell_key), [float(secs)])
        for c in rs.configurations:
            if c.id in superseded:
                continue
            samples = c.samples("wall_time")
            key = _cmd_key(c.command)
            if key in wanted:
                found.setdefault(key, []).extend(samples)
            hkey = history_key(c.name, c.cell)
            if same_suite and hkey in wanted_cells and hkey not in found:
                found[hkey] = list(samples)  # the newest run of the suite only
    return {k: statistics.median(v) for k, v in found.items() if v}


def _cmd_key(argv: list[str]) -> str:
    return shlex.join(argv)
