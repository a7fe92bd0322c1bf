"""The history's terminal tables: a series in commit order with its change points marked
(``perflab history``), and the change points found across series (``perflab detect``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.format import fmt_change_pct, fmt_sig, fmt_value
from perflab.history.git import short
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.history.detect import ChangePoint
    from perflab.history.series import Series


def series_table(s: Series, cps: list[ChangePoint]) -> Table:
    """One row per point of ``s`` (commit, result, median and its CI), the change points
    ``cps`` marked on the point they start at (red a regression, green an improvement, dim
    an ignored one)."""
    t = Table.of(s.key.label(), ["commit", "result", Column("kind", "left"), "runs",
                                 "median", "95% CI", "change"])
    at = {cp.index: cp for cp in cps}
    for i, p in enumerate(s.points):
        cp = at.get(i)
        mark = Cell("")
        if cp is not None:
            style = "dim" if cp.ignored else ("red" if cp.regression else "green")
            mark = Cell(f"{fmt_change_pct(cp.change_pct, 1)} p={fmt_sig(cp.p_value, 2)}", style)
        t.add_row(short(p.commit) + ("*" if p.dirty else ""), str(p.result_id), p.label,
                  str(p.n), fmt_value(p.median, s.unit),
                  f"[{fmt_value(p.ci_low, s.unit)}, {fmt_value(p.ci_high, s.unit)}]", mark)
    return t


def change_points_table(series: list[Series], shown: list[ChangePoint],
                        machines: dict[int, str]) -> Table:
    """The change points ``shown`` of ``series``, one row each: where, the commit range, the
    change, mean ± sd on each side, p, and what it is; ``machines`` names the machine ids."""
    unit = {s.key: s.unit for s in series}
    t = Table.of(f"change points in {len(series)} series", [Column(h, "left") for h in (
        "benchmark", "params", "config", "machine", "metric", "commits", "change",
        "before (mean ± sd)", "after (mean ± sd)", "p", "")])
    for cp in shown:
        u = unit.get(cp.key, "")
        what = (Cell(f"ignored: {cp.ignored}", "dim") if cp.ignored
                else Cell("regression", "red") if cp.regression
                else Cell("changed (no direction)", "magenta") if cp.direction == "none"
                else Cell("improvement", "green"))
        if cp.kind == "drift" or cp.found_by == "range":
            why = [w for w, on in (("drift", cp.kind == "drift"),
                                   ("at a range found on another machine",
                                    cp.found_by == "range")) if on]
            what = Cell(f"{what.text} ({', '.join(why)})", what.style)
        t.add_row(cp.key.benchmark, cp.key.params_text(), cp.key.config,
                  machines.get(cp.key.machine_id or -1, str(cp.key.machine_id)), cp.key.metric,
                  f"{short(cp.commit_before)}..{short(cp.commit_after)}",
                  fmt_change_pct(cp.change_pct),
                  f"{fmt_value(cp.mean_before, u)} ± {fmt_value(cp.std_before, u)}",
                  f"{fmt_value(cp.mean_after, u)} ± {fmt_value(cp.std_after, u)}",
                  fmt_sig(cp.p_value, 2), what)
    return t
