"""What every importer shares: the one-line refusal of a bad file, reading a JSON file, and
the checks of a value every format applies."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError


def bad(path: Path, fmt: str, why: str) -> PerflabError:
    """The one line refusing ``path`` as a file of ``fmt``: ``why`` names the field or the
    value at fault; the fix lists every format perflab reads."""
    from perflab.imports import FORMATS  # the registry imports this module first

    return PerflabError(f"{path} is not a {fmt} result file ({why})",
                        f"give the file {fmt} wrote, or the right --format ({', '.join(FORMATS)})")


def read_json(path: Path, fmt: str) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    except UnicodeDecodeError as e:
        raise bad(path, fmt, "binary data") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise bad(path, fmt, f"invalid JSON at line {e.lineno}") from e
    except RecursionError:
        raise bad(path, fmt, "JSON nested too deeply") from None


def text_lines(path: Path, fmt: str) -> Iterator[str]:
    """The lines of a text file one at a time (a file of any size in bounded memory); a file
    that is not UTF-8 text is refused as not of ``fmt``."""
    try:
        with open(path, encoding="utf-8") as f:
            yield from f
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    except UnicodeDecodeError as e:
        raise bad(path, fmt, "binary data") from e


def is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def first_negative(values: list[Any]) -> Any:
    """The first negative number among ``values`` (None if none): every value an import stores
    is a time or a count, and a negative one would give nonsense ratios ("-200% faster"), as
    workload_json refuses for measured workloads."""
    return next((v for v in values if is_num(v) and v < 0), None)


def mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def iso_date(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


KINDS: dict[str, tuple[type, ...]] = {"a number": (int, float), "text": (str,),
                                      "a list": (list,), "an object": (dict,)}


def need(obj: dict[str, Any], key: str, kind: str, where: str, path: Path, fmt: str) -> Any:
    """``obj[key]`` when it is of ``kind`` (a KINDS key; a number is finite, not a bool), else
    the one-line refusal naming the field: ``where`` is the field's place in the file
    ("Benchmarks[2].Measurements[5]"), so the line reads "... (Benchmarks[2].Measurements[5].
    Nanoseconds is missing)"."""
    field = f"{where}.{key}" if where else key
    if key not in obj:
        raise bad(path, fmt, f"{field} is missing")
    value = obj[key]
    ok = is_num(value) if kind == "a number" else isinstance(value, KINDS[kind])
    if not ok:
        raise bad(path, fmt, f"{field} is {_json_type(value)}, not {kind}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}" if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"
