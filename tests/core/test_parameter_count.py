"""Few functions in src/perflab take 8 or more parameters: what travels together is one
dataclass that names its concept.

Counted with the standard library's ast: every parameter but ``self``/``cls`` (positional,
keyword-only, ``*args``, ``**kwargs``).  The typer verbs of perflab.cli (its modules' public
functions) are aside: each parameter there is an option of the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src"
MANY = 8
AT_MOST = 6

# The functions that take MANY or more; the test fails on one that takes fewer (strike it) and
# on any other that takes MANY.  record_profile, store_profile, compare_samples and run_plan
# are entry points whose keyword arguments are each an optional setting with its default.
ALLOWED = {
    "profiles.record.record_profile",
    "profiles.record.store_profile",
    "stats.compare_samples",
    "suites.execute.run_plan",
}


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return [n for n in names if n not in ("self", "cls")]


def _is_verb(module: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return module.startswith("cli.") and not fn.name.startswith("_")


def many_parameters() -> dict[str, int]:
    """``module.Class.function`` -> its parameter count, for those with MANY or more."""
    found: dict[str, int] = {}
    for p in sorted((SRC / "perflab").rglob("*.py")):
        parts = list(p.relative_to(SRC / "perflab").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts) or "perflab"

        def visit(node: ast.AST, prefix: str, module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}.{child.name}")
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = len(parameters(child))
                    if n >= MANY and not _is_verb(module, child):
                        found[f"{prefix}.{child.name}"] = n
                    visit(child, f"{prefix}.{child.name}")
                else:
                    visit(child, prefix)

        visit(ast.parse(p.read_text()), module)
    return found


def test_few_functions_take_8_or_more_parameters() -> None:
    found = many_parameters()
    assert set(found) - ALLOWED == set(), "group the parameters that travel together"
    assert ALLOWED - set(found) == set(), "these take fewer now: strike them from ALLOWED"
    assert len(ALLOWED) <= AT_MOST


def test_the_count_sees_every_kind_of_parameter() -> None:
    fn = ast.parse("def f(self, a, /, b, *c, d, **e): pass").body[0]
    assert isinstance(fn, ast.FunctionDef) and sorted(parameters(fn)) == ["a", "b", "c", "d", "e"]
