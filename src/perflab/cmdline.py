"""One command convention, forgiving: argv (``-- ./prog arg``, as perf) or one quoted string
(``'./prog arg'``, as hyperfine), for every verb that runs a single command (stat, profile,
bisect)."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from perflab.errors import PerflabError


def _names_executable(name: str, env: Mapping[str, str]) -> bool:
    if "/" in name:
        return os.path.isfile(name) and os.access(name, os.X_OK)
    return shutil.which(name, path=env.get("PATH", os.defpath)) is not None


def forgiving_argv(words: list[str], env: Mapping[str, str] | None = None,
                   shell: bool = False, built_in: Path | None = None
                   ) -> tuple[list[str], str | None]:
    """The command to run, and a note when it was read differently from how it was typed.

    A single word with spaces that names no executable but splits (as the shell would) into
    one that does is run as that argv: ``perflab stat './prog arg'`` runs ./prog with arg, as
    ``perflab stat -- ./prog arg`` does.  Anything else is left as given (a missing program is
    then reported as "command not found" by the launcher's check).

    ``built_in`` (bisect) is the tree the program is built in, once per commit: it may not
    exist yet, so a word that names no file there (nor a program on PATH) is split whenever
    it splits, and a wrong program is then reported at the first build's run."""
    env = os.environ if env is None else env
    if shell or len(words) != 1 or not any(c.isspace() for c in words[0]):
        return words, None
    only = words[0]
    if built_in is None and _names_executable(only, env):
        return words, None  # a program whose name has a space in it
    if built_in is not None and ((built_in / only).exists() or _names_executable(only, env)):
        return words, None
    try:
        parts = shlex.split(only)
    except ValueError as e:
        raise PerflabError(f"the command {only!r} has unbalanced quotes ({e})",
                           "close the quote, or give the program and its arguments after --"
                           ) from None
    if not parts or (built_in is None and not _names_executable(parts[0], env)):
        return words, None
    note = (f"note: {only!r} names no program; ran it as {parts[0]} with "
            f"{len(parts) - 1} argument{'s' if len(parts) != 2 else ''} (the same as "
            f"`-- {shlex.join(parts)}`; pass --shell for shell syntax)")
    return parts, note
