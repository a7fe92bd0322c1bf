"""Profiles as tables: a profile's top symbols, and the diff of two profiles (per symbol, the
self share in A and B and its change; per operation where both profiles know their
operations)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.format import fmt_count, fmt_per_op, fmt_points, fmt_share
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.profiles.analysis import SymbolStat
    from perflab.profiles.api import ProfileDiff


def _module(module: str) -> str:
    return module if module.startswith("[") else Path(module).name


def symbols_table(stats: list[SymbolStat], title: str) -> Table:
    t = Table.of(title, ["Self", "Total", Column("Symbol", "left", fold=True),
                         Column("Module", "left", fold=True)])
    for s in stats:
        t.add_row(fmt_share(s.self_share), fmt_share(s.total_share), s.symbol, _module(s.module))
    return t


def _unit(d: ProfileDiff) -> str:
    """CPU ns per operation where the weight is CPU time (cpu-clock), else samples per 1,000
    operations."""
    return "ns/op" if d.cpu_time else "smp/kop"


def _per_op(d: ProfileDiff) -> bool:
    return d.a_ops is not None and d.b_ops is not None


def _sign_style(v: float) -> str:
    """Red for a growth, green for a shrink."""
    return "red" if v > 0 else "green" if v < 0 else ""


def diff_table(d: ProfileDiff, top: int) -> Table:
    """The ``top`` symbols of the diff, by the size of their change of self share."""
    unit, per_op = _unit(d), _per_op(d)
    heads = ["A", "B", "Delta"]
    if per_op:
        heads += [f"A {unit}", f"B {unit}", f"Delta {unit}"]
    t = Table.of(f"profile {d.b.id} ({d.b.name}) vs {d.a.id} ({d.a.name}): self share per "
                 "symbol" + (f", and self {unit}" if per_op else ""),
                 heads + ["Total A", "Total B", Column("Symbol", "left"),
                          Column("Module", "left")])
    for r in d.rows[:top]:
        cells = [fmt_share(r.a_share), fmt_share(r.b_share), Cell(f"{fmt_points(r.delta)} pt",
                                                        _sign_style(r.delta))]
        po = d.ns_per_op(r) if d.cpu_time else d.per_op(r)
        if po is not None and not d.cpu_time:
            po = (po[0] * 1e3, po[1] * 1e3, po[2] * 1e3)
        if po is not None:
            cells += [fmt_per_op(po[0]), fmt_per_op(po[1]),
                      Cell(fmt_per_op(po[2], True), _sign_style(po[2]))]
        t.add_row(*cells, fmt_share(r.a_total), fmt_share(r.b_total), r.symbol, _module(r.module))
    return t


def diff_note(d: ProfileDiff) -> str:
    """The line under the diff's table: what its per-operation columns mean, or why it has
    none."""
    if not _per_op(d):
        return ("no samples per operation: a profile of a plain command does not know its "
                "operations (profile a workload, whose JSON line gives ops)")
    what = ("CPU ns per operation: share x the profile's CPU time / ops" if d.cpu_time else
            "samples per 1,000 operations: share x samples / ops x 1000")
    return (f"{_unit(d)}: self {what} (A {fmt_count(d.a_ops)} ops, B {fmt_count(d.b_ops)} "
            "ops); the absolute change, where shares alone hide what stayed put")


def profiles_table(location: str, rows: list[dict[str, Any]]) -> Table:
    """The stored profiles (profiles.store.list_profiles), one row each: when, name, how it
    was sampled, its samples and its top symbol."""
    import time

    t = Table.of(f"profiles in {location}", [
        Column("id", wrap=False), Column("when", "left", wrap=False),
        Column("name", "left", fold=True), Column("event", "left", wrap=False),
        Column("graph", "left", wrap=False), Column("samples", wrap=False),
        Column("top symbol", "left", fold=True)])
    for r in rows:
        t.add_row(str(r["id"]), time.strftime("%m-%d %H:%M", time.localtime(r["created_at"])),
                  r["name"] or "", r["sampler"] or "", r["call_graph"] or "",
                  str(r["samples"]), r["top"])
    return t
