"""Flame graph SVGs drawn by inferno (the maintained Rust port of Brendan Gregg's FlameGraph).

`make flamegraphs` (scripts/build-inferno.sh) builds inferno into perflab's cache, shared by every
checkout on the machine: $PERFLAB_TOOLS_DIR, else $PERFLAB_CACHE/tools, else the user cache
directory's perflab/tools.  perflab looks there after $PERFLAB_INFERNO_DIR, then at $PATH and
~/.cargo/bin.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import platformdirs

from perflab.errors import PerflabError

FLAMEGRAPH = "inferno-flamegraph"
DIFF_FOLDED = "inferno-diff-folded"


def _candidates() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("PERFLAB_INFERNO_DIR")
    if env:
        dirs.append(Path(env))
    cache = os.environ.get("PERFLAB_CACHE") or platformdirs.user_cache_dir("perflab")
    tools = os.environ.get("PERFLAB_TOOLS_DIR") or str(Path(cache) / "tools")
    dirs.append(Path(tools) / "bin")
    return dirs


def find_tool(name: str) -> str | None:
    for d in _candidates():
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    found = shutil.which(name)
    if found:
        return found
    cargo_bin = Path.home() / ".cargo" / "bin" / name
    return str(cargo_bin) if cargo_bin.is_file() else None


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise PerflabError(
            f"no flame graph generator: {name} is not installed",
            "run 'make flamegraphs' in perflab's checkout (builds inferno with cargo, "
            "once per machine), or 'cargo install inferno'")
    return path


def _run(argv: list[str], stdin: bytes | None) -> bytes:
    proc = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise PerflabError(f"{os.path.basename(argv[0])} failed: {msg[-1] if msg else ''}",
                           "check the folded stacks file it was given")
    return proc.stdout


def flame_graph(folded: str, out: Path, *, title: str, subtitle: str = "",
                countname: str = "samples") -> Path:
    """Draw the folded stacks (text) as an SVG at ``out``."""
    argv = [require_tool(FLAMEGRAPH), "--title", title, "--countname", countname,
            "--hash", "--minwidth", "0.1"]
    if subtitle:
        argv += ["--subtitle", subtitle]
    out.write_bytes(_run(argv, folded.encode()))
    return out


def diff_flame_graph(folded_a: Path, folded_b: Path, out: Path, *, title: str,
                     subtitle: str = "") -> Path:
    """A differential flame graph: B's shape, red where B spends a larger share than A, blue
    where smaller (counts normalised, so profiles of different lengths compare)."""
    diff = _run([require_tool(DIFF_FOLDED), "--normalize", str(folded_a), str(folded_b)], None)
    argv = [require_tool(FLAMEGRAPH), "--title", title, "--minwidth", "0.1"]
    if subtitle:
        argv += ["--subtitle", subtitle]
    out.write_bytes(_run(argv, diff))
    return out
