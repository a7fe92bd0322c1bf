"""The module graph of src/perflab: no import circles.

Hand-written over the standard library's ast rather than grimp or import-linter: the check is
one graph walk over every import of a module, at its top, inside a function (the lazy ones that
keep the CLI fast) or under ``if TYPE_CHECKING``: a lazy import cannot fail at import time, but
it ties the two modules all the same, so a circle through it is a circle of the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src"


def module_graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for p in (SRC / "perflab").rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text())):  # top of file, functions, TYPE_CHECKING
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                target = known(t) if t.startswith("perflab") else None
                if target and target != m:
                    graph[m].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_in_src() -> None:
    graph = module_graph()
    assert len(graph) > 40 and "perflab.session" in graph["perflab.cli.measure"]  # it reads them
    assert "perflab.reports.warnings" in graph["perflab.cli.measure"]  # a function-local one
    assert cycles(graph) == []


def test_the_check_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The core that every stage builds on; it never imports a later stage, at module level or inside
# a function.
CORE = ("perflab.model", "perflab.stats", "perflab.runner", "perflab.storage",
        "perflab.format", "perflab.errors", "perflab.fingerprint", "perflab.collectors",
        "perflab.private", "perflab.jobcontext", "perflab.schema", "perflab.migrations")
LATER = ("perflab.reports", "perflab.suites", "perflab.history", "perflab.imports", "perflab.fleet",
         "perflab.profiles", "perflab.cli", "perflab.session")


def upward_imports() -> list[str]:
    out = []
    for p in (SRC / "perflab").rglob("*.py"):
        mod = ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        if not mod.startswith(CORE):
            continue
        for node in ast.walk(ast.parse(p.read_text())):  # lazy imports inside functions too
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            out += [f"{mod} -> {n}" for n in names if n.startswith(LATER)]
    return out


def test_the_core_never_imports_a_later_stage() -> None:
    assert upward_imports() == []
