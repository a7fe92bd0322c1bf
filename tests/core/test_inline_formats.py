"""Every number perflab prints goes through src/perflab/format.py (issue 24): no numeric format
spec anywhere else in src/perflab, whether in an f-string (``f"{x:.1%}"``), a ``str.format``
template, a ``%`` template or a call of ``format()``.

Hand-written over the standard library's ast (as test_import_graph.py): one walk per file.
Text-only specs (alignment or width, ``{name:<12}``) are not numbers and pass, and so do the
integer encodings (``:02x``, ``:o``: an escaped byte, an address, a file mode), which are codes,
not figures a person reads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"
HOME = SRC / "format.py"

# A numeric presentation: a precision, a grouping, a sign, or a figure's type letter at the end.
NUMERIC_SPEC = re.compile(r"[.,_+]|[deEfFgGn%]$")
BRACE_FIELD = re.compile(r"\{[^{}]*?:([^{}]*)\}")
PERCENT_FIELD = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[diouxXeEfFgG]")


def _spec_text(spec: ast.JoinedStr) -> str:
    """An f-string's format spec as written, a nested field as {}: ".{digits}g" -> ".{}g"."""
    return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in spec.values)


def _is_numeric(spec: str) -> bool:
    return bool(NUMERIC_SPEC.search(spec.replace("{}", "")))


def inline_formats(source: str) -> list[tuple[int, str]]:
    """(line, what) of each numeric format spec in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            spec = _spec_text(node.format_spec)
            if _is_numeric(spec):
                found.append((node.lineno, f"f-string :{spec}"))
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "format"
                    and isinstance(f.value, ast.Constant) and isinstance(f.value.value, str)):
                found += [(node.lineno, f"str.format :{s}")
                          for s in BRACE_FIELD.findall(f.value.value) if _is_numeric(s)]
            if (isinstance(f, ast.Name) and f.id == "format" and len(node.args) == 2
                    and isinstance(node.args[1], ast.Constant)
                    and _is_numeric(str(node.args[1].value))):
                found.append((node.lineno, f"format(x, {node.args[1].value!r})"))
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
              and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
            found += [(node.lineno, f"% template {m}")
                      for m in PERCENT_FIELD.findall(node.left.value.replace("%%", ""))]
    return found


def test_no_inline_number_format_outside_format_py() -> None:
    bad = [f"{p.relative_to(SRC)}:{line}: {what}"
           for p in sorted(SRC.rglob("*.py")) if p != HOME
           for line, what in inline_formats(p.read_text())]
    assert bad == [], "format these through a function of src/perflab/format.py:\n" + \
        "\n".join(bad)


def test_the_check_finds_each_kind_and_passes_text() -> None:
    src = '\n'.join([
        'a = f"{x:.1%} {y:+,.3g} {z:{w}} {n:02d} {v:.{d}f}"',
        'b = "{:.2f} and {name:>8}".format(x, name=n)',
        'c = "%5.1f%% of %s" % (x, s)',
        'd = format(x, ",")',
        'e = f"{name:<12} {label!r} {when:%H:%M} {byte:02x} {mode:o}"',
    ])
    kinds = sorted(what for _, what in inline_formats(src))
    assert kinds == sorted(["f-string :.1%", "f-string :+,.3g", "f-string :02d",
                            "f-string :.{}f", "str.format :.2f", "% template %5.1f",
                            "format(x, ',')"])
