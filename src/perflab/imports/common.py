"""What every importer shares: the one-line refusal of a bad file, reading a JSON file, and
the checks of a value every format applies."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from perflab.collectors.harness import is_num as is_num  # one home: the harness readers
from perflab.errors import PerflabError


class BadFile(PerflabError):
    """A file its reader refuses: ``why`` names the field or the value at fault.  The package's
    face (perflab.imports.import_file), which knows every reader, adds the formats perflab reads
    to the fix."""

    def __init__(self, path: Path, fmt: str, why: str) -> None:
        super().__init__(f"{path} is not a {fmt} result file ({why})",
                         f"give the file {fmt} wrote, or the right --format")


def bad(path: Path, fmt: str, why: str) -> BadFile:
    """The one line refusing ``path`` as a file of ``fmt`` (raise it)."""
    return BadFile(path, fmt, why)


def read_json(path: Path, fmt: str) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    except UnicodeDecodeError as e:
        raise bad(path, fmt, "binary data") from e
    try:
        return loads(text, path, fmt)
    except json.JSONDecodeError as e:
        raise bad(path, fmt, f"invalid JSON at line {e.lineno}") from e


def loads(text: str, path: Path, fmt: str) -> Any:
    """``json.loads``; JSON nested deeper than Python's recursion limit is one line, in every
    format (a JSONDecodeError is the caller's to judge)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise bad(path, fmt, "JSON nested too deeply") from None


def not_a_number(v: Any) -> str:
    """What a value that should be a finite number is, in words: NaN, Infinity, a string..."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    kind = {str: "a string", bool: "a boolean", type(None): "null", list: "a list",
            dict: "an object"}.get(type(v), type(v).__name__)
    return f"{kind} ({json.dumps(v)[:40]})" if v is not None else kind


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


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\r\n]*")
# One element of an array of numbers and what follows it (both whole in the buffer).
_NUMBER_ITEM = re.compile(r"[ \t\r\n]*(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
                          r"[ \t\r\n]*([,\]])")
_FLOATY = re.compile(r"[.eE]")
_CHUNK = 1 << 16


class _JsonText:
    """A JSON file read in chunks: values are decoded one at a time from a buffer that holds
    at most the value being read and one chunk, so memory is bounded by the largest value."""

    def __init__(self, path: Path, fmt: str, f: Any) -> None:
        self.path, self.fmt, self.f = path, fmt, f
        self.buf, self.pos, self.lines, self.eof = "", 0, 0, False

    def more(self) -> bool:
        try:  # a value longer than the buffer doubles it, so a long value is decoded O(log n) times
            chunk = self.f.read(max(_CHUNK, len(self.buf) - self.pos))
        except UnicodeDecodeError as e:
            raise bad(self.path, self.fmt, "binary data") from e
        if not chunk:
            self.eof = True
            return False
        self.lines += self.buf.count("\n", 0, self.pos)
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def error(self, what: str, at: int | None = None) -> PerflabError:
        line = self.lines + self.buf.count("\n", 0, self.pos if at is None else at) + 1
        return bad(self.path, self.fmt, f"invalid JSON at line {line}: {what}")

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise self.error(f"expected {' or '.join(repr(x) for x in chars)}")
        self.pos += 1
        return c

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                v, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if self.more():
                    continue  # the value goes on in the next chunk
                raise self.error(e.msg, e.pos) from None
            except RecursionError:
                raise bad(self.path, self.fmt, "JSON nested too deeply") from None
            cut = end == len(self.buf) or self.buf[end] not in ",]} \t\r\n"
            if cut and isinstance(v, int | float) and not self.eof and self.more():
                continue  # a number (12 of 123, 2.5 of 2.5e-7) may go on in the next chunk
            self.pos = end
            return v


END = object()  # json_events: a streamed container has ended


def json_events(path: Path, fmt: str, streamed: tuple[str, ...]
                ) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """A JSON file read in memory bounded by its largest value read whole: ``(where, value,
    names)`` for each value, in the file's order.  ``where`` names its place as a path: "" is
    the top level, "KEY" a member of the top-level object, "[]" an element of a top-level
    array, and so on down ("results[]/times[]": an element of the times of an element of
    results); a key "*" in ``streamed`` stands for any key, ``where`` keeps the "*" and
    ``names`` holds the keys it stood for, outermost first.  A container on the way to a path
    in ``streamed`` (an array for "[]", an object for "/KEY") is not read whole: its members or
    elements come one at a time, then ``(where, END, names)``; a value at a path in
    ``streamed``, or of a type the path does not descend into, comes whole.  NaN and Infinity
    are read as Python's json reads them."""
    into: dict[str, set[str]] = {}  # a container on the way -> "[" and/or "{" to descend
    for p in streamed:
        for n in range(len(p)):
            if p.startswith("[]", n):
                into.setdefault(p[:n], set()).add("[")
            elif p[n] == "/" or n == 0:
                into.setdefault(p[:n], set()).add("{")
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below, after the generator
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    with f:
        text = _JsonText(path, fmt, f)
        yield from _events(text, "", (), _Paths(into, set(streamed)))
        if text.peek():
            raise text.error("extra data after the top-level value")


@dataclass(frozen=True)
class _Paths:
    into: dict[str, set[str]]
    streamed: set[str]

    def member(self, where: str, key: str) -> tuple[str, bool]:
        """The path of member ``key`` of the object at ``where``, and whether "*" stood for it."""
        exact = f"{where}/{key}" if where else key
        if exact in self.into or exact in self.streamed:
            return exact, False
        wild = f"{where}/*" if where else "*"
        return (wild, True) if wild in self.into or wild in self.streamed else (exact, False)


def _events(text: _JsonText, where: str, names: tuple[str, ...], paths: _Paths
            ) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """The events of the value at ``where`` (json_events)."""
    c = text.peek()
    if not c:
        raise text.error("expected a value")
    if where in paths.streamed or c not in paths.into.get(where, ()):
        yield where, text.value(), names
        return
    text.pos += 1
    close = "]" if c == "[" else "}"
    if text.peek() == close:
        text.pos += 1
    else:
        inner = f"{where}[]"
        while True:
            if c == "[" and inner in paths.streamed:
                # An array of numbers (hyperfine's times): as many as the buffer holds whole,
                # by one pattern each; anything else (null, NaN, a number the buffer cuts)
                # goes the common way.
                while m := _NUMBER_ITEM.match(text.buf, text.pos):
                    number, after = m.groups()
                    yield inner, float(number) if _FLOATY.search(number) else int(number), names
                    text.pos = m.end()
                    if after == "]":
                        break
                else:
                    yield from _events(text, inner, names, paths)
                    if text.expect(",]") == "]":
                        break
                    continue
                break
            if c == "[":
                yield from _events(text, inner, names, paths)
            else:
                key = text.value()
                if not isinstance(key, str):
                    raise text.error("expected a key")
                text.expect(":")
                inner, wild = paths.member(where, key)
                yield from _events(text, inner, (*names, key) if wild else names, paths)
            if text.expect("," + close) == close:
                break
    yield where, END, names


def json_members(path: Path, fmt: str,
                 arrays: tuple[str, ...] = ()) -> Iterator[tuple[str, int | None, Any]]:
    """The members of a JSON file's top-level object one at a time, in the file's order:
    ``(key, None, value)`` for a member read whole, and for a member named in ``arrays`` whose
    value is an array ``(key, i, element)`` for each element, read one at a time (a file of
    any size in memory bounded by its largest element).  A file whose top level is an array
    gives ``("", i, element)`` (json_events, flattened one level)."""
    index: dict[str, int] = {}
    for where, value, _ in json_events(path, fmt, ("[]", *(f"{a}[]" for a in arrays))):
        if where == "":
            if value is not END:
                raise bad(path, fmt, "invalid JSON at line 1: expected '{' or '['")
        elif where.endswith("[]"):
            key = where[:-2]
            index[key] = index.get(key, -1) + 1
            yield key, index[key], value
        elif value is not END:
            yield where, None, value


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
