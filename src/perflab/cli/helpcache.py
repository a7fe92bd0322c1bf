"""The help texts typer prints, kept once printed and printed again without loading typer.

``perflab --help`` (and ``perflab VERB --help``, ``perflab VERB SUB --help``, ``perflab`` alone)
loads typer, click and rich to draw its boxes: 14 times Python's own start-up in CPU time,
against about twice for the standard library alone (docs/benchmarks.md).  So the first time a
help is asked for, it is printed by typer as always and what typer wrote to stdout is kept; the
next time the same help is asked for in the same conditions, the kept text is printed as it is.

"The same conditions" is the key of a kept text, everything the text depends on:
the words asked for; perflab's version and every source file of the package (path, mtime,
size: any edit makes a new key); the installed typer and rich (their dist-info names and the
mtime of their packages' ``__init__``); Python's version; whether stdout is a terminal and the
terminal's size as rich finds it (the first of stdin, stdout, stderr that is one); stdout's
encoding; and every environment variable rich and typer read to draw (ENV_NAMES, and
PERFLAB_*).  A text is kept only when typer wrote nothing to stderr and the command exited 0
(or 2, for ``perflab`` alone, which prints the help as a usage error).

Texts live in perflab's private cache directory ($PERFLAB_CACHE, else the user cache
directory), under ``help/``, one file per key, checked to be the user's own (perflab.private)
before one is read; the 64 newest are kept.  PERFLAB_HELP_CACHE=0 turns this off.

What a kept help loads is held to the standard library's cheapest modules: os.path rather than
pathlib, a scan of sys.path rather than importlib.util, zlib's CRC-32 for the file's name (the
whole key is stored in the file and compared) rather than hashlib; each of pathlib, hashlib
and importlib.util cost 5-15 ms of CPU to import here, against 12 ms for all of Python's
start-up.
"""

from __future__ import annotations

import os
import sys
import zlib
from typing import Any

# What rich (console.py) and typer (core.py, rich_utils.py) read from the environment when
# they draw a help text, as of rich 15 and typer 0.28 (their versions are in the key too).
ENV_NAMES = ("COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES", "NO_COLOR", "FORCE_COLOR",
             "PY_COLORS", "TTY_INTERACTIVE", "TTY_COMPATIBLE", "COLORTERM", "TERM",
             "TERMINAL_WIDTH", "_TYPER_FORCE_DISABLE_TERMINAL", "GITHUB_ACTIONS",
             "TYPER_USE_RICH", "DATABRICKS_RUNTIME_VERSION", "PYTHONIOENCODING", "LANG",
             "LC_ALL", "LC_CTYPE")
HELP_FLAGS = ("--help", "-h")
KEEP = 64
USAGE_EXIT = 2  # `perflab` alone: typer prints the help and exits as for a usage error


def cacheable(args: list[str]) -> bool:
    """True for a help request: no words at all, or up to two words (a verb, its
    subcommand) followed by --help or -h.  Never while shell completion is asked for."""
    if os.environ.get("PERFLAB_HELP_CACHE") == "0" or "_PERFLAB_COMPLETE" in os.environ:
        return False
    if not args:
        return True
    *words, last = args
    return (last in HELP_FLAGS and len(words) <= 2
            and all(w.replace("-", "").isalnum() and not w.startswith("-") for w in words))


def cache_dir() -> str:
    """perflab's cache directory: $PERFLAB_CACHE, else the user cache directory.  On Linux
    that is $XDG_CACHE_HOME/perflab or ~/.cache/perflab, written out here because importing
    platformdirs costs 19 ms of CPU, more than the rest of a kept help (test_help_cache
    checks it against platformdirs); elsewhere platformdirs says."""
    if os.environ.get("PERFLAB_CACHE"):
        return os.environ["PERFLAB_CACHE"]
    if sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return os.path.join(xdg if xdg else os.path.expanduser("~/.cache"), "perflab")
    import platformdirs

    return str(platformdirs.user_cache_dir("perflab"))


def source_stamp(root: str) -> list[tuple[str, int, int]]:
    """(path, mtime in ns, size) of every .py file under ``root``, in a stable order."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                st = os.stat(os.path.join(d, f))
                out.append((os.path.relpath(os.path.join(d, f), root), st.st_mtime_ns,
                            st.st_size))
    return out


def _library_stamp(name: str) -> list[Any]:
    """The installed package ``name`` as the import system finds it first on sys.path: its
    ``__init__``'s path and mtime, and the names of the dist-info directories beside it."""
    for entry in sys.path:
        site = entry or os.getcwd()
        init = os.path.join(site, name, "__init__.py")
        try:
            mtime = os.stat(init).st_mtime_ns
        except OSError:
            continue
        infos = sorted(e for e in os.listdir(site)
                       if e.startswith(f"{name}-") and e.endswith(".dist-info"))
        return [name, init, mtime, infos]
    return [name, None]


def _terminal() -> list[Any]:
    """Whether stdout is a terminal, and the size rich would find (its order of streams)."""
    size = None
    for fd in (0, 1, 2):
        try:
            size = tuple(os.get_terminal_size(fd))
            break
        except (OSError, ValueError):
            continue
    try:
        tty = os.isatty(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        tty = False
    return [tty, size, getattr(sys.stdout, "encoding", None)]


def key(args: list[str], root: str | None = None) -> bytes:
    """Everything a help text depends on (see the module's docstring), as one line."""
    import perflab

    root = root or os.path.dirname(perflab.__file__)
    env = sorted((k, v) for k, v in os.environ.items()
                 if k in ENV_NAMES or k.startswith("PERFLAB_"))
    parts = [args, perflab.__version__, source_stamp(root), _library_stamp("typer"),
             _library_stamp("rich"), sys.version, sys.executable, _terminal(), env]
    return repr(parts).encode("utf-8", "backslashreplace")  # a repr holds no line break


def file_name(key_line: bytes) -> str:
    return f"{zlib.crc32(key_line):08x}-{len(key_line)}"


def read(key_line: bytes) -> tuple[int, bytes] | None:
    """The (exit code, text) kept under ``key_line``, or None (none kept, another key in the
    file of that name, or a file or folder not the user's own)."""
    from perflab.private import why_unsafe

    name = file_name(key_line)
    folder = os.path.join(cache_dir(), "help")
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if why_unsafe(os.fstat(dir_fd), folder, ""):
            return None
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as f:
            if why_unsafe(os.fstat(f.fileno()), name, ""):
                return None
            data = f.read()
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    kept_key, _, rest = data.partition(b"\n")
    code, sep, text = rest.partition(b"\n")
    if kept_key != key_line or not sep or not code.isdigit():
        return None
    return int(code), text


def write(key_line: bytes, code: int, text: bytes) -> None:
    """Keep ``text`` under ``key_line`` (written whole, then renamed into place); the oldest
    beyond KEEP are removed.  A cache that cannot be written is no error: help was printed."""
    from pathlib import Path

    from perflab.errors import PerflabError
    from perflab.private import open_private_dir

    name = file_name(key_line)
    folder = Path(cache_dir()) / "help"
    try:
        dir_fd = open_private_dir(folder, "perflab's help cache", "")
    except PerflabError:
        return
    try:
        tmp = f"{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as f:
            f.write(key_line + b"\n%d\n" % code + text)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        kept = sorted(os.listdir(dir_fd), key=lambda n: os.stat(n, dir_fd=dir_fd).st_mtime_ns)
        for old in kept[:-KEEP]:
            os.unlink(old, dir_fd=dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


class _Tee:
    """stdout as typer sees it (its terminal, encoding and size are stdout's own), with
    everything written to it also kept."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.kept: list[str] = []

    def write(self, s: str) -> int:
        n = self._stream.write(s)  # bytes (click's probe for a binary stream) raise here
        self.kept.append(s)
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Watch:
    """stderr, noting whether anything was written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.written = False

    def write(self, s: str) -> int:
        self.written = self.written or bool(s)
        return self._stream.write(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def print_kept(args: list[str]) -> bytes | None:
    """Print the kept text for ``args`` and exit with its code; else the key to keep it under
    (None when the key cannot be made)."""
    try:
        name = key(args)
    except OSError:
        return None
    kept = read(name)
    if kept is not None:
        code, text = kept
        sys.stdout.flush()
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
        sys.exit(code)
    return name


def run_and_keep(args: list[str], name: bytes, run: Any) -> None:
    """``run(args)`` with stdout kept; kept under ``name`` when it ended as a help does."""
    out, err = _Tee(sys.stdout), _Watch(sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    code: Any = 0
    try:
        run(args)
    except SystemExit as e:
        code = e.code
        raise
    finally:
        sys.stdout, sys.stderr = out._stream, err._stream
        expected = USAGE_EXIT if not args else 0
        if (code or 0) == expected and not err.written:
            out._stream.flush()
            write(name, expected, "".join(out.kept).encode(out._stream.encoding or "utf-8",
                                                          "surrogateescape"))
