"""Import other tools' results as stored result sets (kind "import").

One module per format, each with the same interface:

- ``FORMAT: str``: the name ``--format`` takes;
- ``sniff(head: str) -> bool``: given the first 64 KiB of a file as text, True if the module
  reads it;
- ``read(path: Path, benchmark: str | None) -> ResultSet``: the file's samples as a result
  set; a file with a field missing or of the wrong type raises one PerflabError naming the
  field and the file;
- optionally ``sniff_dir(path: Path) -> bool``: True if the module reads this directory (a
  tool that writes a tree of files, as criterion's ``target/criterion``); ``read`` then takes
  the directory.

``READERS`` is the registry: detection asks each module's ``sniff`` in this order, so a
module whose files another's sniff would also take comes first.  docs/imports/ has a page
per format (docs/imports.md is their index).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

from perflab.errors import PerflabError
from perflab.format import fmt_fixed
from perflab.imports import (
    benchmarkdotnet,
    criterion,
    gbench,
    gobench,
    hyperfine,
    jmh,
    perfstat,
    pyperf,
)
from perflab.imports import perflab as perflab_json
from perflab.imports.common import BadFile, bad
from perflab.model import ResultSet

READERS: tuple[ModuleType, ...] = (perflab_json, perfstat, benchmarkdotnet, gbench, gobench,
                                   pyperf, hyperfine, jmh, criterion)
FORMATS: tuple[str, ...] = tuple(m.FORMAT for m in READERS)
BY_FORMAT: dict[str, ModuleType] = {m.FORMAT: m for m in READERS}
HEAD_BYTES = 65536


def max_import_bytes() -> int:
    env = os.environ.get("PERFLAB_IMPORT_MAX_MB", "")
    try:
        return int(float(env) * 2**20) if env else 1024 * 2**20
    except ValueError:
        raise PerflabError(f"PERFLAB_IMPORT_MAX_MB={env!r} is not a number of MiB",
                           "set it to e.g. 2048, or unset it") from None


def detect_format(path: Path) -> str:
    """The format of a file to import, told from its first 64 KiB by the first reader whose
    ``sniff`` takes it.  Raises PerflabError (one line listing every format) when none does."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror or e}", "check the path") from None
    for reader in READERS:
        if reader.sniff(head):
            return str(reader.FORMAT)
    raise PerflabError(f"cannot tell which tool wrote {path}: perflab reads "
                       f"{', '.join(FORMATS)}",
                       "pass --format if the file is one of them (docs/imports.md)")


def import_file(path: Path, fmt: str | None, benchmark: str | None = None) -> ResultSet:
    """The result set of one file: of format ``fmt``, or of the format its content tells.  A
    file its reader refuses raises one PerflabError whose fix lists every format."""
    try:
        return _import(path, fmt, benchmark)
    except BadFile as e:
        raise PerflabError(e.problem, f"{e.fix} ({', '.join(FORMATS)})") from e


def _import(path: Path, fmt: str | None, benchmark: str | None) -> ResultSet:
    if fmt is not None and fmt not in BY_FORMAT:
        raise PerflabError(f"unknown import format '{fmt}'", f"use one of {', '.join(FORMATS)}")
    if path.is_dir():
        return _import_directory(path, fmt, benchmark)
    if not path.is_file():
        raise PerflabError(f"{path} does not exist or is not a file", "check the path")
    size = os.path.getsize(path)
    if size == 0:
        raise (bad(path, fmt, "empty file") if fmt else
               PerflabError(f"{path} is an empty file", "give the file the tool wrote"))
    limit = max_import_bytes()
    if size > limit:
        # The dense formats (hyperfine, pyperf, perflab's own, gbench) stream their JSON and
        # keep runs in columns (about 50 bytes a run), the others parse the file whole (about
        # 10x its size): a bound all of them keep (docs/benchmarks.md, imports' memory).
        raise PerflabError(f"{path} is {fmt_fixed(size / 2**20)} MiB; perflab imports files up to "
                           f"{fmt_fixed(limit / 2**20)} MiB (PERFLAB_IMPORT_MAX_MB)",
                           "split the file, or raise PERFLAB_IMPORT_MAX_MB if memory allows")
    result: ResultSet = BY_FORMAT[fmt or detect_format(path)].read(path, benchmark)
    return result


def _import_directory(path: Path, fmt: str | None, benchmark: str | None) -> ResultSet:
    """A directory, read by the reader whose ``sniff_dir`` takes it (the one given, or the
    first in READERS)."""
    dir_readers = [r for r in READERS if hasattr(r, "sniff_dir")]
    names = ", ".join(r.FORMAT for r in dir_readers)
    reader = BY_FORMAT[fmt] if fmt else next((r for r in dir_readers if r.sniff_dir(path)), None)
    if reader is None or not hasattr(reader, "sniff_dir"):
        raise PerflabError(f"{path} is a directory{f' and {fmt} reads files' if fmt else ''}; "
                           f"perflab reads directories written by {names}",
                           "give a file the tool wrote, or such a directory")
    result: ResultSet = reader.read(path, benchmark)
    return result
