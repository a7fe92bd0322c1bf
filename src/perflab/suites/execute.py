"""Run a plan cell by cell: one measure() call per cell with all its configurations.

measure() interleaves the configurations of the cell and saves every run as it completes.  After
each finished cell its key is recorded in the result's settings (``suite.done``), so
``--resume`` knows exactly which cells to skip.  A cell interrupted half-way keeps its runs in
the store, but its configurations are listed in ``suite.superseded`` and the cell is measured
again from the start: reports drop superseded configurations, so no cell counts twice and none
is lost.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
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

from perflab.errors import PerflabError
from perflab.model import Configuration, ResultSet
from perflab.storage import Store
from perflab.suites.plan import Plan, format_seconds


class _Remaining(ProgressColumn):
    """The suite bar: "cells" and the time left; measure()'s own bar: its runs and status.

    The time left is the mean time of the cells measured so far times the cells left (before
    the first cell: the plan's estimate), steadier than a rate over a short window."""

    def render(self, task: Task) -> Text:
        if "plan_estimate" not in task.fields:
            return Text(f"runs {task.fields.get('status', '')}", style="dim")
        done_now = task.completed - task.fields["done_before"]
        left = (task.total or 0) - task.completed
        elapsed = task.elapsed or 0.0
        if done_now > 0:
            est = elapsed / done_now * left
        else:
            est = max(0.0, task.fields["plan_estimate"] - elapsed)
        return Text(f"cells, about {format_seconds(est)} left", style="cyan")


def measure_options(plan: Plan) -> Any:
    from perflab.runner import MeasureOptions

    suite = plan.suite
    m = dict(suite.measure)
    m.pop("expected_run_s", None)
    budget = m.pop("budget", None)
    if suite.primary:
        m["primary_metric"] = suite.primary
    opts = MeasureOptions(**m)
    if budget is not None:
        opts.budget = budget
    return opts


def suite_settings(plan: Plan) -> dict[str, Any]:
    s = plan.suite
    return {
        "suite": {
            "name": s.name, "path": str(s.path), "text": s.text, "plan": plan.fingerprint(),
            "baseline": s.baseline, "threshold": s.threshold, "correction": s.correction,
            "metrics": s.metrics, "primary": s.primary, "report": s.report,
            "skipped": plan.skipped, "cells": [c.key for c in plan.cells],
            "done": [], "superseded": [],
        },
    }


@dataclass
class RunOutcome:
    rs: ResultSet
    measured: int  # cells measured in this invocation
    skipped_done: int  # cells already done (resume)
    interrupted: bool


def _info(rs: ResultSet) -> dict[str, Any]:
    info = rs.settings.setdefault("suite", {})
    info.setdefault("done", [])
    info.setdefault("superseded", [])
    return info


def run_plan(plan: Plan, store: Store, *, resume: int | None = None,
             console: Console | None = None, progress: bool = True,
             opts: Any = None, estimates: dict[str, float] | None = None) -> RunOutcome:
    from perflab.runner import RunFailed, measure

    console = console or Console(stderr=True)
    opts = opts if opts is not None else measure_options(plan)
    if resume is not None:
        rs = store.load(resume)
        info = rs.settings.get("suite")
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
        for c in rs.configurations:
            if c.cell not in done and c.id is not None and c.id not in superseded:
                info["superseded"].append(c.id)
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
    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        _Remaining(), TimeElapsedColumn(),
        console=console, disable=not progress, transient=False)
    per_cell = plan.estimate_seconds(estimates) / max(1, len(plan.cells))
    try:
        with prog:
            task = prog.add_task(f"{plan.suite.name} (run {rs.id})", total=len(plan.cells),
                                 completed=len(done), done_before=len(done),
                                 plan_estimate=per_cell * len(todo))
            for cell in todo:
                configs = [Configuration(name=p.name, command=list(p.argv), benchmark=p.benchmark,
                                         params=dict(cell.params), is_baseline=p.is_baseline,
                                         shell=p.shell, env=dict(p.env)) for p in cell.configs]
                prog.update(task, description=f"{plan.suite.name} {_short(cell.params)}")
                before = len(rs.configurations)
                failure = ""
                try:
                    measure(rs, configs, opts, store=store, progress=prog)
                except KeyboardInterrupt:
                    rs.status = "interrupted"
                except RunFailed as e:
                    # One broken cell (a crash, a timeout) must not cost the rest of the study:
                    # record it, keep its runs out of the analysis, go on; --resume retries it.
                    failure = e.line()
                    rs.status = "running"
                except PerflabError:
                    # A mistake that every cell would repeat (an unknown primary metric): stop.
                    rs.status = "failed"
                    for c in configs:
                        if c.id is not None and c.id not in info["superseded"]:
                            info["superseded"].append(c.id)
                    store.update_result(rs)
                    raise
                # measure() appends the configurations; be tolerant if it did not.
                for c in configs:
                    if not any(x is c for x in rs.configurations[before:]):
                        rs.configurations.append(c)
                if failure or rs.status in ("interrupted", "failed"):
                    interrupted = rs.status == "interrupted"
                    for c in configs:
                        if c.id is not None and c.id not in info["superseded"]:
                            info["superseded"].append(c.id)
                    rs.configurations = [c for c in rs.configurations
                                         if not any(c is x for x in configs)]
                    if failure:
                        info.setdefault("failed", []).append({"cell": cell.key, "error": failure})
                        console.print(f"[red]cell {_short(cell.params)} failed:[/] {failure}",
                                      highlight=False, soft_wrap=True)
                        store.update_result(rs)
                        prog.advance(task)
                        continue
                    store.update_result(rs)
                    break
                info["done"].append(cell.key)
                measured += 1
                rs.status = "running"
                store.update_result(rs)
                prog.advance(task)
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
    return RunOutcome(rs=rs, measured=measured, skipped_done=len(done), interrupted=interrupted)


def _short(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def describe_plan(plan: Plan, per_run: dict[str, float] | None = None) -> list[str]:
    """The --dry-run text: cells, configurations, commands and the estimated time."""
    s = plan.suite
    lines = [f"suite {s.name} ({s.path}): {len(plan.cells)} cells, {plan.n_configs} "
             f"configuration runs-series, baseline {s.baseline}"]
    for msg in plan.skipped:
        lines.append(f"  note: {msg}")
    for cell in plan.cells:
        lines.append(f"  cell {_short(cell.params) or '(single)'}")
        for p in cell.configs:
            mark = " (baseline)" if p.is_baseline else ""
            lines.append(f"    {p.name}{mark}: {shlex.join(p.argv)}")
    m = s.measure
    per = (f"{m['runs']} runs" if "runs" in m else
           f"adaptive {m.get('min_runs', 5)}..{m.get('max_runs', 1000)} runs to "
           f"+-{m.get('precision', 0.01):.1%}")
    budget = f", budget {m['budget']:.0f}s a cell" if "budget" in m else ""
    est = plan.estimate_seconds(per_run)
    lines.append(f"per configuration: {m.get('warmup', 1)} warm-up + {per}{budget}; "
                 f"estimated time {format_seconds(est)}")
    return lines


def history_per_run(store: Store, plan: Plan) -> dict[str, float]:
    """Median wall time per command from earlier results in the store, for estimates.

    Keyed by the exact command line: the same workload with another iteration count is a
    different command and takes a different time."""
    import statistics

    wanted = {_cmd_key(p.argv) for c in plan.cells for p in c.configs}
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
        for c in rs.configurations:
            key = _cmd_key(c.command)
            if key in wanted:
                found.setdefault(key, []).extend(c.samples("wall_time"))
    return {k: statistics.median(v) for k, v in found.items() if v}


def _cmd_key(argv: list[str]) -> str:
    return shlex.join(argv)
