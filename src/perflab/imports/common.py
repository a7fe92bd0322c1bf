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
