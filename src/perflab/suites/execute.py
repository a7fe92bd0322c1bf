"""Run a plan cell by cell: one measure() call per cell with all its configurations.

measure() interleaves the configurations of the cell and saves every run as it completes.  After
each finished cell its key is recorded in the result's settings (``suite.done``), so
``--resume`` knows exactly which cells to skip.  A cell interrupted half-way keeps its runs in
the store, but its configurations are listed in ``suite.superseded`` and the cell is measured
again from the start: reports drop superseded configurations, so no cell counts twice and none
is lost.  The resume says so, in its output and in the result's notes.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
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

from perflab import notes as said
from perflab.console import stderr_console
from perflab.errors import PerflabError, printable
from perflab.format import (
    env_differences,
    fmt_duration,
    fmt_env,
    fmt_fixed,
    fmt_params,
    fmt_plain,
    fmt_share,
)
from perflab.model import Configuration, ResultSet, Settings, SuiteRecord
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
    left" with 15 s left.  Nor is the group in flight done while ``runs_done`` (the
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
    from perflab.judging import Plan
    from perflab.runner import MeasureOptions

    suite = plan.suite
    m = dict(suite.measure)
    m.pop("expected_run_s", None)
    m.pop("calibrate", None)  # resolved per cell by run_plan (suites/calibrate.py)
    m.pop("calibrate_on", None)
    # No primary named: CPU time for CPU-bound work, wall time where it waits.  The primary
    # metric is one family across the matrix: the stop rule of each cell decides at the level
    # the whole family will be judged at.
    return MeasureOptions.of(
        metric=suite.primary or None, default_primary=m.pop("primary_metric", "wall_time"),
        plan=Plan(threshold=suite.threshold, correction=suite.correction,
                  estimator=suite.estimator, bands=dict(suite.bands)),
        family_size=max(1, sum(len(c.configs) - 1 for c in plan.cells)), **m)


@dataclass
class SuiteProgress:
    """How far a suite run got, kept in ``settings.suite`` beside its plan (the keys and shapes
    earlier versions stored there, so their results still resume and report)."""

    done: list[str] = field(default_factory=list)  # cell keys measured to the end
    superseded: list[int] = field(default_factory=list)  # configuration ids left out
    failed: list[dict[str, str]] = field(default_factory=list)  # {"cell", "error"}
    groups: list[list[str]] = field(default_factory=list)  # cells measured in the same rounds
    calibrated: dict[str, dict[str, int]] = field(default_factory=dict)  # cell -> iterations
    calibration_s: dict[str, dict[str, float]] = field(default_factory=dict)  # probe seconds

    @classmethod
    def from_json(cls, info: dict[str, Any]) -> SuiteProgress:
        return cls(done=list(info.get("done") or []),
                   superseded=list(info.get("superseded") or []),
                   failed=list(info.get("failed") or []),
                   groups=[list(g) for g in info.get("groups") or []],
                   calibrated=dict(info.get("calibrated") or {}),
                   calibration_s=dict(info.get("calibration_s") or {}))

    def to_json(self) -> dict[str, Any]:
        return {"done": list(self.done), "superseded": list(self.superseded),
                "failed": list(self.failed), "groups": [list(g) for g in self.groups],
                "calibrated": dict(self.calibrated), "calibration_s": dict(self.calibration_s)}

    def supersede(self, configs: Iterable[Configuration]) -> None:
        """Leave these stored configurations out of every report (their runs are kept)."""
        for c in configs:
            if c.id is not None and c.id not in self.superseded:
                self.superseded.append(c.id)


def suite_settings(plan: SuitePlan) -> Settings:
    s = plan.suite
    return Settings(
        suite=SuiteRecord(
            name=s.name, path=str(s.path), text=s.text, plan=plan.fingerprint(),
            baseline=s.baseline, threshold=s.threshold, correction=s.correction,
            estimator=s.estimator,
            metrics=s.metrics, primary=s.primary, report=s.report,
            skipped=plan.skipped, cells=[c.key for c in plan.cells],
            calibrate=plan.calibrate, **SuiteProgress().to_json(),
        ),
    )


@dataclass
class SuiteOutcome:
    """What run_plan did (collectors.process.RunOutcome is one run of a command)."""

    rs: ResultSet
    measured: int  # cells measured in this invocation
    skipped_done: int  # cells already done (resume)
    interrupted: bool


def run_plan(plan: SuitePlan, store: Store, *, resume: int | None = None,
             console: Console | None = None, progress: bool = True,
             opts: Any = None, estimates: dict[str, float] | None = None,
             speed: Speed | None = None, report_s: float = 0.0) -> SuiteOutcome:
    """Measure the plan's cells not done yet (all, or those --resume has left); the progress
    bar's time left comes from the plan's estimate of each group (``estimates``: earlier runs,
    ``speed``: the machine now) and of the report after them (``report_s``)."""
    run = SuiteRun(plan, store, console=console or stderr_console(),
                   opts=opts if opts is not None else measure_options(plan))
    if resume is not None:
        run.resume(resume)
    else:
        run.start()
    return run.run(progress=progress, estimates=estimates, speed=speed, report_s=report_s)


@dataclass
class _GroupOutcome:
    measured: int  # cells measured
    ended: int  # cells measured or failed (the progress bar's advance)
    stop: bool  # interrupted or failed for good: no further group


class SuiteRun:
    """One suite run: a new result set (start) or an interrupted one (resume), measured group
    by group, its progress saved in the result after every group."""

    def __init__(self, plan: SuitePlan, store: Store, *, console: Console, opts: Any) -> None:
        self.plan, self.store, self.console, self.opts = plan, store, console, opts
        self.rs: ResultSet
        self.progress = SuiteProgress()
        self.done_before: set[str] = set()
        self.resumed = False

    def _save(self) -> None:
        """The progress into the result's settings, and the result into the store."""
        self._sync()
        self.store.update_result(self.rs)

    def _sync(self) -> None:
        self.rs.settings.suite = replace(self.rs.settings.suite, **self.progress.to_json())

    def start(self) -> None:
        from perflab.fingerprint import machine_fingerprint

        self.rs = ResultSet(kind="suite", fingerprint=machine_fingerprint(),
                            label=self.plan.suite.name, settings=suite_settings(self.plan),
                            created_at=time.time())
        self.store.begin_result(self.rs)

    def resume(self, rid: int) -> None:
        """Take up result ``rid``: its done cells are kept; the configurations of a cell that
        never finished keep their runs but are superseded, and the cell is measured again."""
        rs = self.rs = self.store.load(rid)
        info = rs.settings.suite
        if rs.kind != "suite" or not info.to_json():
            raise PerflabError(f"result {rid} is not a suite run",
                               "pass the id printed by 'perflab run' (perflab results list)")
        if info.plan != self.plan.fingerprint():
            raise PerflabError(
                f"result {rid} was planned from a different suite (its cells or commands "
                "differ from this file's)",
                "resume with the suite file as it was, or start a new run without --resume")
        self.resumed = True
        self.progress = SuiteProgress.from_json(info.to_json())
        done = self.done_before = set(self.progress.done)
        unfinished = [c for c in rs.configurations if c.cell not in done]
        self.progress.supersede(unfinished)
        partial: dict[str, int] = {}
        for c in unfinished:
            if c.id is not None:
                partial[c.cell] = partial.get(c.cell, 0) + len(c.runs)
        for cell_key, n in partial.items():
            if n == 0:
                continue
            # Superseded, not reused: the partial runs come from an earlier session (another
            # load, another round order), and mixing sessions in one cell would unpair them.
            note = said.resumed(n, cell_key)
            rs.notes.add(note)
            self.console.print(note, highlight=False, soft_wrap=True)
        rs.configurations = [c for c in rs.configurations if c.cell in done]
        self.progress.failed = []  # failed cells are not done: they are measured again now
        rs.status = "running"
        self._save()

    def run(self, *, progress: bool = True, estimates: dict[str, float] | None = None,
            speed: Speed | None = None, report_s: float = 0.0) -> SuiteOutcome:
        plan, rs, done = self.plan, self.rs, self.done_before
        todo = [c for c in plan.cells if c.key not in done]
        if self.resumed:
            self.console.print(f"resuming run {rs.id}: {len(done)} of {len(plan.cells)} cells "
                               f"done, {len(todo)} to go", highlight=False)
        remaining = _Remaining()
        prog = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            remaining, TimeElapsedColumn(),
            console=self.console, disable=not progress, transient=False)
        remaining.progress = prog
        groups = plan.groups(todo)
        group_est = [sum(plan.cell_seconds(c, estimates, speed) for c in g) for g in groups]
        interrupted = False
        measured = 0
        try:
            with prog:
                task = prog.add_task(escape(printable(f"{plan.suite.name} (run {rs.id})")),
                                     total=len(plan.cells), completed=len(done),
                                     elapsed_done=0.0, done_est=0.0,
                                     left_est=sum(group_est) + report_s,
                                     cur_est=group_est[0] if group_est else 0.0)
                for group, est in zip(groups, group_est, strict=True):
                    # Matrix values come from the suite file: escaped, as every printed string
                    # is (a progress line is not printed through the console's render_str).
                    prog.update(task, cur_est=est, description=escape(printable(
                        f"{plan.suite.name} {fmt_params(group[0].params)}"
                        + (f" (+{len(group) - 1} cells in the same rounds)" if len(group) > 1
                           else ""))))
                    outcome = self._measure_group(group, prog)
                    measured += outcome.measured
                    t = next(x for x in prog.tasks if x.id == task)
                    prog.update(task, advance=outcome.ended, elapsed_done=t.elapsed or 0.0,
                                done_est=t.fields["done_est"] + est,
                                left_est=t.fields["left_est"] - est)
                    if outcome.stop:
                        interrupted = rs.status == "interrupted"
                        break
        except KeyboardInterrupt:
            # Ctrl-C between two cells (measure() handles it during one): the cell in flight
            # is not marked done, so --resume supersedes and redoes it.
            interrupted = True
            rs.status = "interrupted"
            self._save()
        if not interrupted:
            complete = len(set(self.progress.done)) == len(plan.cells)
            rs.status = ("complete" if complete else "failed" if self.progress.failed
                         else "interrupted")
            self._save()
        return SuiteOutcome(rs=rs, measured=measured, skipped_done=len(done),
                            interrupted=interrupted)

    def _measure_group(self, group: list[Cell], prog: Progress) -> _GroupOutcome:
        """Measure the cells of one group (SuitePlan.groups) in one measurement: their
        configurations alternate in the same rounds.  A cell whose calibration fails is left
        out of it; a run that fails fails the group's cells (--resume retries them)."""
        cells, configs, failed = self._configurations(group)
        if not cells:
            return _GroupOutcome(0, failed, False)
        rs = self.rs
        failure = self._measure(configs, prog)
        if failure or rs.status in ("interrupted", "failed"):
            self.progress.supersede(configs)
            rs.configurations = [c for c in rs.configurations
                                 if not any(c is x for x in configs)]
            if failure:
                for cell in cells:
                    self._cell_failed(cell, failure)
                return _GroupOutcome(0, failed + len(cells), False)
            self._save()
            return _GroupOutcome(0, failed, True)
        self.progress.done += [c.key for c in cells]
        if len(cells) > 1:  # measured in the same rounds: stats.axis_comparisons pairs them
            self.progress.groups.append([c.key for c in cells])
        rs.status = "running"
        self._save()
        return _GroupOutcome(len(cells), failed + len(cells), False)

    def _configurations(self, group: list[Cell]) -> tuple[list[Cell], list[Configuration], int]:
        """The group's cells that calibrated (all without [measure] calibrate), their
        configurations, and how many cells failed to calibrate."""
        cells: list[Cell] = []
        configs: list[Configuration] = []
        failed = 0
        for cell in group:
            try:
                argvs = self._calibrated_commands(cell)
            except CalibrationFailed as e:
                self._cell_failed(cell, e.line())
                failed += 1
                continue
            cells.append(cell)
            configs += [Configuration(name=p.name, command=argvs[p.name],
                                      benchmark=p.benchmark, params=dict(cell.params),
                                      is_baseline=p.is_baseline, shell=p.shell,
                                      env=dict(p.env)) for p in cell.configs]
        self._sync()
        return cells, configs, failed

    def _measure(self, configs: list[Configuration], prog: Progress) -> str:
        """measure() the configurations together: the failure of a run ("" if none); the
        result's status says whether it was interrupted."""
        from perflab.runner import RunFailed, Watchers, measure

        rs = self.rs
        failure = ""
        before = len(rs.configurations)
        try:
            measure(rs, configs, self.opts, store=self.store, watchers=Watchers(progress=prog))
        except KeyboardInterrupt:
            rs.status = "interrupted"
        except RunFailed as e:
            # One broken cell (a crash, a timeout) must not cost the rest of the study: record
            # it, keep its runs out of the analysis, go on; --resume retries it.
            failure = e.line()
            rs.status = "running"
        except PerflabError:
            # A mistake that every cell would repeat (an unknown primary metric): stop.
            rs.status = "failed"
            self.progress.supersede(configs)
            self._save()
            raise
        # measure() appends the configurations; be tolerant if it did not.
        for c in configs:
            if not any(x is c for x in rs.configurations[before:]):
                rs.configurations.append(c)
        return failure

    def _calibrated_commands(self, cell: Cell) -> dict[str, list[str]]:
        """Each configuration's command for this cell: with [measure] calibrate, the iteration
        count that gives the target timed region, resolved now and fixed for the cell's runs."""
        plan = self.plan
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
                                p.workload.params["iterations"], p.name, self.opts.timeout)
                n = got.iterations
                probe_s[p.name] = round(got.seconds, 4)
            counts[p.name] = n
            out[p.name] = p.argv_with(n)
        self.progress.calibrated[cell.key] = counts
        self.progress.calibration_s[cell.key] = probe_s  # for the next run's estimate
        return out

    def _cell_failed(self, cell: Cell, failure: str) -> None:
        """Record a cell that could not be measured (its calibration or a run failed), say so
        in one line, and go on with the study (--resume retries it)."""
        self.progress.failed.append({"cell": cell.key, "error": failure})
        self.console.print(f"[red]cell {fmt_params(cell.params)} failed:[/] {failure}",
                           highlight=False, soft_wrap=True)
        self._save()


def describe_plan(plan: SuitePlan, per_run: dict[str, float] | None = None,
                  speed: Speed | None = None, *, report: bool = True) -> list[str]:
    """The --dry-run text: cells, configurations, commands and the estimated time."""
    s = plan.suite
    lines = [f"suite {s.name} ({s.path}): {len(plan.cells)} cells, {plan.n_configs} "
             f"configuration series, baseline {s.baseline}"]
    for msg in plan.skipped:
        lines.append(f"  note: {msg}")
    cpus = len(os.sched_getaffinity(0))
    over = [t for c in plan.cells if isinstance(t := c.params.get("threads"), int) and t > cpus]
    if over:
        note = said.more_threads_than_cpus(max(over), cpus, len(over), len(plan.cells))
        lines.append(f"  note: {note}")
    for cell in plan.cells:
        lines.append(f"  cell {fmt_params(cell.params) or '(single)'}")
        envs = env_differences([p.env for p in cell.configs])
        for p, env in zip(cell.configs, envs, strict=True):
            mark = " (baseline)" if p.is_baseline else ""
            cmd = " ".join(filter(None, (fmt_env(env), shlex.join(p.argv))))
            lines.append(f"    {p.name}{mark}: {cmd}")
    m = s.measure
    per = (f"{m['runs']} runs" if "runs" in m else
           f"adaptive {m.get('min_runs', 6)}..{m.get('max_runs', 1000)} runs until the "
           "primary comparisons are decided"
           + (f" or every CI is within +-{fmt_share(m['precision'])}" if "precision" in m else ""))
    budget = (f", budget {fmt_fixed(m['budget'])}s a cell" if "budget" in m else
              "" if "runs" in m else ", budget 10 s per configuration")
    est = plan.estimate_seconds(per_run, speed)
    rep = plan.report_seconds(speed) if report else 0.0
    cal = (f"iterations calibrated per cell to {fmt_plain(plan.calibrate * 1e3)} ms of timed "
           "region a run, then " if plan.calibrate else "")
    known = sum(1 for c in plan.cells for p in c.configs
                if per_run and (history_key(p.name, c.key) in per_run
                                or shlex.join(p.argv) in per_run))
    basis = [f"from earlier runs for {known} of {plan.n_configs} configuration series"
             if known else "no earlier runs"]
    if speed is not None:
        if speed.start_s:
            n = len(speed.start_s)
            basis.append(f"start-up measured now for {n} configuration{'s' * (n != 1)}")
        if speed.run_s:
            n = len(speed.run_s)
            basis.append(f"a whole run measured now for {n} configuration{'s' * (n != 1)}")
        basis.append(f"this machine now runs a thread at {fmt_share(1 / speed.slowdown, 0)} of "
                     "a CPU")
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
        same_suite = (rs.kind == "suite" and info.name == plan.suite.name
                      and info.calibrate == plan.calibrate)
        superseded = set(info.superseded or [])
        if same_suite:
            for cell_key, by_config in (info.calibration_s or {}).items():
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
