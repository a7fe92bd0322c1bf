"""The workloads as tables and a JSON document: ``perflab workloads list`` (one row per
workload, built or not and why not) and ``perflab workloads show`` (its parameters)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perflab.table import Cell, Column, Table
from perflab.workloads.manifest import format_value
from perflab.workloads.registry import Discovery, Workload


@dataclass(frozen=True)
class Listed:
    """A workload as listed: available here (``ok``, else ``why`` not) and built."""

    wl: Workload
    ok: bool
    why: str
    built: bool


def listing(d: Discovery) -> list[Listed]:
    """Every discovered workload by name, with whether it runs here and is built."""
    out = []
    for wl in sorted(d.workloads.values(), key=lambda w: w.name):
        ok, why = wl.available()
        out.append(Listed(wl, ok, why, wl.is_built()))
    return out


def listing_json(d: Discovery, listed: list[Listed]) -> dict[str, Any]:
    """``workloads list --json``: the root, each workload with its parameters, the errors."""
    out = [{"name": x.wl.name, "runtime": x.wl.runtime, "family": x.wl.family,
            "description": x.wl.description, "dir": str(x.wl.dir), "primary": x.wl.primary,
            "region_symbol": x.wl.region_symbol, "available": x.ok, "why_not": x.why,
            "built": x.built,
            "params": {p.name: {"type": p.type, "default": p.default, "values": list(p.values),
                                "choices": None if p.choices is None else list(p.choices),
                                "min": p.min, "max": p.max, "help": p.help}
                       for p in x.wl.params.values()}}
           for x in listed]
    return {"root": str(d.root), "workloads": out, "errors": [e.line() for e in d.errors]}


def _params_text(wl: Workload) -> str:
    parts = []
    for p in wl.params.values():
        extra = (" [" + "|".join(format_value(c) for c in p.choices) + "]"
                 if p.choices is not None else "")
        parts.append(f"{p.name}={format_value(p.default)}{extra}")
    return "\n".join(parts)


def listing_table(d: Discovery, listed: list[Listed]) -> Table:
    """``workloads list``: runtime, description, parameters (defaults), built, why not."""
    table = Table.of(f"workloads in {d.root}", [Column(h, "left", fold=True) for h in (
        "name", "runtime", "description", "parameters (defaults)", "built", "why not")],
        show_lines=True)
    for x in listed:
        why_not = x.why if not x.ok else ("" if x.built else f"run `perflab workloads build "
                                                              f"{x.wl.name}`")
        table.add_row(x.wl.name, x.wl.runtime, x.wl.description, _params_text(x.wl),
                      Cell("yes", "green") if x.built and x.ok else Cell("no", "red"), why_not)
    return table


def params_table(wl: Workload) -> Table:
    """``workloads show``: each parameter's type, default, allowed values, sweep and help."""
    table = Table.of("", [Column(h, "left") for h in (
        "parameter", "type", "default", "allowed", "sweep values", "help")])
    for p in wl.params.values():
        table.add_row(p.name, p.type, format_value(p.default), p.allowed(),
                      ", ".join(format_value(v) for v in p.values), p.help)
    return table
