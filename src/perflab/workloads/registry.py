"""The workload registry: discover manifests, check runtimes, build, and make command lines."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import perflab.workloads.coreclr as coreclr
from perflab.errors import PerflabError
from perflab.format import fmt_plain
from perflab.workloads.manifest import (
    MANIFEST,
    Manifest,
    format_value,
    load_manifest,
)

ROOT_ENV = "PERFLAB_WORKLOADS_DIR"
BUILD_LOG = "build/perflab-build.log"
# The content hash of the sources a build read, written beside the outputs after a good build.
SOURCE_STAMP = "build/perflab-sources.sha256"
# Directories under a workload that hold what builds write, not sources.
OUTPUT_DIRS = frozenset({"build", "target", "bin", "obj", "node_modules", "__pycache__"})
# The folders of workloads/common/ a runtime's builds read (default: the runtime's own name).
COMMON_DIRS: dict[str, tuple[str, ...]] = {"cpp": ("c",)}


def workloads_root() -> Path:
    """$PERFLAB_WORKLOADS_DIR, else the source tree's workloads/ (src/perflab/../../workloads)."""
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path(__file__).resolve().parents[3] / "workloads").resolve()


class Availability(NamedTuple):
    """``ok, reason = wl.available()``; also truthy/falsy on its own."""

    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class BuildResult:
    name: str
    seconds: float
    log: Path


def _from_manifest(field_name: str) -> Any:
    """A read-only attribute of Workload that is the manifest's field of the same name."""
    return property(lambda self: getattr(self.manifest, field_name),
                    doc=f"The manifest's {field_name}.")


@dataclass(frozen=True)
class Resolved:
    """A workload spec made runnable: what ``resolve`` returns to every caller (stat, compare,
    suites, profile, bisect), so a spec becomes argv in one place."""

    workload: Workload
    argv: list[str]  # the manifest's run prefix ({dir}, {root}, {python} expanded) + --name=value
    params: dict[str, Any]  # every parameter, typed, defaults filled in
    primary: str  # the primary metric the workload declares (a key of its JSON line)
    region_symbol: str | None  # callgrind --toggle-collect pattern for the timed region


class Workload:
    """One registered workload (a validated manifest plus what perflab can do with it)."""

    def __init__(self, manifest: Manifest, root: Path) -> None:
        self.manifest = manifest
        self.root = root
        self._hash_cache: tuple[tuple[tuple[str, int, int], ...], str] | None = None

    # -- what the manifest says ---------------------------------------------------------------
    # name, family, runtime, description, dir, params, primary (the workload JSON key used as
    # primary metric, e.g. "ns_per_op"), metrics (units and directions of the JSON line's keys)
    # and region_symbol (a callgrind --toggle-collect pattern for the timed region, or None)
    # read through to the manifest: one home for what a workload declares.
    name = _from_manifest("name")
    family = _from_manifest("family")
    runtime = _from_manifest("runtime")
    description = _from_manifest("description")
    dir = _from_manifest("dir")
    params = _from_manifest("params")
    primary = _from_manifest("primary")
    metrics = _from_manifest("metrics")
    region_symbol = _from_manifest("region_symbol")

    @property
    def requires(self) -> list[str]:
        return list(self.manifest.requires)

    def defaults(self) -> dict[str, Any]:
        return {n: p.default for n, p in self.params.items()}

    def __repr__(self) -> str:
        return f"Workload({self.name!r}, {self.dir})"

    # -- can it run here ----------------------------------------------------------------------
    def missing(self) -> list[str]:
        """The required executables not found on PATH."""
        return [exe for exe in self.manifest.requires if shutil.which(exe) is None]

    def available(self) -> Availability:
        """(True, "") when every required executable is on PATH, else (False, why)."""
        miss = self.missing()
        if not miss:
            return Availability(True, "")
        hint = f" ({self.manifest.install_hint})" if self.manifest.install_hint else ""
        return Availability(False, f"{', '.join(miss)} not found on PATH{hint}")

    def is_available(self) -> bool:
        return self.available().ok

    def is_built(self) -> bool:
        """Every declared output exists and was built from the sources as they are now (the
        content hash stored beside the outputs matches); a workload with nothing to build is
        always built.  So after a rebase or an edit of a shared helper the old binary is not
        used: the on-demand builds and `workloads build` rebuild it."""
        if not self._outputs_exist():
            return False
        return not self.manifest.build or self._stamp() == self.source_hash()

    def _outputs_exist(self) -> bool:
        return all((self.dir / out).exists() for out in self.manifest.outputs)

    def _stamp(self) -> str | None:
        try:
            return (self.dir / SOURCE_STAMP).read_text().strip()
        except OSError:
            return None

    def source_files(self) -> list[Path]:
        """What a build may read: every file under the workload's directory, its language's
        helpers in the root's ``common/`` (COMMON_DIRS; all of that folder, so a helper this
        workload does not use only costs a needless rebuild) and the C region header's
        ``include/`` beside the root; not in output directories (OUTPUT_DIRS), nor hidden.
        Sorted."""
        files: list[Path] = []
        include = self.root.parent / "include"
        common = [self.root / "common" / d for d in COMMON_DIRS.get(self.runtime, (self.runtime,))]
        for base in (self.dir, *common, include):
            if not base.is_dir() or (base == include
                                     and not (include / "perflab_region.h").exists()):
                continue
            for d, subdirs, names in os.walk(base):
                subdirs[:] = [s for s in subdirs if not s.startswith(".") and s not in OUTPUT_DIRS]
                files += [Path(d) / n for n in names if not n.startswith(".")]
        return sorted(set(files))

    def source_hash(self) -> str:
        """SHA-256 over the sources' paths (relative to the root's parent) and contents.
        Hand-written: hashlib over a directory walk is all it takes.  The digest is cached
        while no file's size or mtime changes, so repeated checks (suite plans) only stat."""
        files = self.source_files()
        top = self.root.parent
        sig = []
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            sig.append((str(f), st.st_size, st.st_mtime_ns))
        key = tuple(sig)
        if self._hash_cache is not None and self._hash_cache[0] == key:
            return self._hash_cache[1]
        h = hashlib.sha256()
        for path, _size, _mtime in sig:
            f = Path(path)
            try:
                data = f.read_bytes()
            except OSError:
                continue
            h.update(os.path.relpath(f, top).encode() + b"\0")
            h.update(len(data).to_bytes(8, "little") + data)
        digest = h.hexdigest()
        self._hash_cache = (key, digest)
        return digest

    # -- build --------------------------------------------------------------------------------
    def build(self) -> BuildResult:
        """Run the manifest's build argv in the workload's directory; output goes to a log.

        Raises PerflabError (one line + the log's path) when the runtime is missing, the build
        fails or does not produce its outputs."""
        ok, why = self.available()
        if not ok:
            raise PerflabError(f"cannot build {self.name}: {why}",
                               f"install it, then run `perflab workloads build {self.name}`")
        log = self.dir / BUILD_LOG
        t0 = time.monotonic()
        sources = self.source_hash() if self.manifest.build else None
        if sources is not None and self._stamp() != sources:
            # Stale or of unknown provenance: remove the outputs so the build must write them
            # again, even where its own staleness check misses a changed file (a header a
            # Makefile does not list).
            for out in self.manifest.outputs:
                (self.dir / out).unlink(missing_ok=True)
            (self.dir / SOURCE_STAMP).unlink(missing_ok=True)
        if self.manifest.build:
            log.parent.mkdir(parents=True, exist_ok=True)
            env = dict(os.environ)
            # Keep builds local and quiet: no toolchain downloads, no colour codes in the log.
            env.setdefault("GOTOOLCHAIN", "local")
            env.setdefault("CARGO_TERM_COLOR", "never")
            env.setdefault("PERFLAB_WORKLOADS_DIR", str(self.root))
            try:
                with log.open("wb") as fh:
                    fh.write(f"$ cd {self.dir} && {' '.join(self.manifest.build)}\n".encode())
                    fh.flush()
                    proc = subprocess.run(self.manifest.build, cwd=self.dir, stdout=fh,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=env, timeout=self.manifest.timeout, check=False)
            except FileNotFoundError:
                raise PerflabError(f"cannot build {self.name}: {self.manifest.build[0]} not "
                                   "found", f"install it or fix build in {self.manifest.path}"
                                   ) from None
            except subprocess.TimeoutExpired:
                raise PerflabError(f"building {self.name} took over "
                                   f"{fmt_plain(self.manifest.timeout)} s",
                                   f"see {log}") from None
            if proc.returncode != 0:
                raise PerflabError(f"building {self.name} failed (exit {proc.returncode}): "
                                   f"{_log_error_line(log)}", f"see the log {log}", exit_code=1)
        missing = [o for o in self.manifest.outputs if not (self.dir / o).exists()]
        if missing:
            raise PerflabError(f"building {self.name} did not produce {missing[0]}",
                               f"fix outputs or build in {self.manifest.path} (log: {log})",
                               exit_code=1)
        if sources is not None:
            # The hash taken before the build: a source edited while it ran stays stale.
            stamp = self.dir / SOURCE_STAMP
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(sources + "\n")
        return BuildResult(self.name, time.monotonic() - t0, log)

    # -- run ----------------------------------------------------------------------------------
    def typed_params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults filled in, every value converted and checked (PerflabError otherwise)."""
        given = dict(params or {})
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise PerflabError(f"{self.name} has no parameter '{unknown[0]}'",
                               f"use one of: {known}")
        return {n: (p.convert(given[n], self.name) if n in given else p.default)
                for n, p in self.params.items()}

    def resolve(self, params: Mapping[str, Any] | None = None, *,
                require_built: bool = True) -> Resolved:
        """This workload run with ``params``: argv (the manifest's run prefix plus one
        --name=value per parameter), typed parameters, primary metric and region symbol.

        ``params`` maps names to strings (command line) or typed values (suites).  Raises
        PerflabError for an unknown/bad parameter, a missing runtime or (``require_built``) an
        unbuilt workload; bisect builds with its own --build command, so it passes False."""
        typed = self.typed_params(params)
        ok, why = self.available()
        if not ok:
            raise PerflabError(f"workload {self.name} cannot run here: {why}",
                               "install it, or choose another workload (perflab workloads list)")
        self._check_knobs(typed)
        if require_built and not self.is_built():
            state = ("out of date (its sources changed since it was built)"
                     if self._outputs_exist() else "not built")
            raise PerflabError(f"workload {self.name} is {state}",
                               f"run `perflab workloads build {self.name}`")
        argv = [self._expand(a) for a in self.manifest.run]
        argv += [f"--{n}={format_value(v)}" for n, v in typed.items()]
        return Resolved(self, argv, typed, self.primary, self.region_symbol)

    def _check_knobs(self, typed: Mapping[str, Any]) -> None:
        """A value that needs a runtime not installed here, or a knob its runtime does not have
        (a parameter's ``only``), is one line naming the problem and the fix."""
        for p in self.params.values():
            value = typed[p.name]
            if p.only is not None and value != p.default:
                other, want = p.only
                if typed[other] != want:
                    raise PerflabError(
                        f"{self.name}: {p.name}={format_value(value)} is a knob of "
                        f"{other}={format_value(want)}; {other}={format_value(typed[other])} "
                        "has no such knob",
                        f"add {other}={format_value(want)}, or drop {p.name}")
            missing = [t for t in p.needs.get(value, ()) if tool_path(t) is None]
            if missing:
                what = missing[0]
                if what == "@coreclr":
                    raise PerflabError(
                        f"{self.name}: {p.name}={format_value(value)} needs CoreCLR "
                        f"{coreclr.VERSION}, which is not installed here", coreclr.INSTALL_HINT)
                hint = self.manifest.install_hint or f"install {what}"
                raise PerflabError(f"{self.name}: {p.name}={format_value(value)} needs {what}, "
                                   "not found on PATH", hint)

    def command(self, params: Mapping[str, Any] | None = None) -> tuple[list[str], dict[str, Any]]:
        """(argv, typed params) of ``resolve(params)``."""
        r = self.resolve(params)
        return r.argv, r.params

    def _expand(self, arg: str) -> str:
        if "{coreclr}" in arg:
            arg = arg.replace("{coreclr}", str(coreclr.root() or ""))
        return (arg.replace("{dir}", str(self.dir)).replace("{root}", str(self.root))
                .replace("{python}", sys.executable))


def tool_path(name: str) -> str | None:
    """Where a required tool is: "@coreclr" is the CoreCLR perflab installs (its folder),
    any other name an executable on PATH."""
    if name == "@coreclr":
        found = coreclr.root()
        return str(found) if found else None
    return shutil.which(name)


def _log_error_line(log: Path) -> str:
    """The last meaningful line of a build log (usually the compiler's error)."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    for ln in reversed(lines):
        if "error" in ln.lower():
            return ln[:200]
    return lines[-1][:200] if lines else "(empty log)"


@dataclass
class Discovery:
    """Everything found under a workloads root: valid workloads and one error per bad file."""

    root: Path
    workloads: dict[str, Workload]
    errors: list[PerflabError]


def discover(root: Path | str | None = None) -> Discovery:
    """Every workloads/<family>/<runtime>/workload.toml, validated (bad ones in .errors)."""
    base = Path(root).resolve() if root is not None else workloads_root()
    found: dict[str, Workload] = {}
    errors: list[PerflabError] = []
    if not base.is_dir():
        # A pip-installed perflab has no source tree beside it: say where workloads come from.
        errors.append(PerflabError(
            f"no workloads directory at {base} (perflab's workloads live in its source tree, "
            "which a pip-installed perflab does not have)",
            f"set {ROOT_ENV} to a workloads/ directory holding <family>/<runtime>/{MANIFEST} "
            "(e.g. a clone of perflab's repository), or run perflab from that clone"
            if root is None else f"check that {base} is a tree with a workloads/ directory"))
        return Discovery(base, found, errors)
    for path in sorted(base.glob(f"*/*/{MANIFEST}")):
        try:
            m = load_manifest(path)
        except PerflabError as e:
            errors.append(e)
            continue
        if m.name in found:
            errors.append(PerflabError(f"{path}: duplicate workload name {m.name}",
                                       f"it is already defined in {found[m.name].manifest.path}"))
            continue
        found[m.name] = Workload(m, base)
    return Discovery(base, found, errors)


def all_workloads(root: Path | str | None = None) -> list[Workload]:
    """The valid workloads, sorted by name (malformed manifests are left out: see discover)."""
    return [found for _, found in sorted(discover(root).workloads.items())]


def names(root: Path | str | None = None) -> list[str]:
    return sorted(discover(root).workloads)


def get(name: str, root: Path | str | None = None) -> Workload:
    """The workload called ``name`` (e.g. "eh/cpp"); PerflabError if unknown or malformed."""
    d = discover(root)
    if name in d.workloads:
        return d.workloads[name]
    for e in d.errors:  # its manifest exists but is malformed: say why
        if f"/{name}/{MANIFEST}" in e.problem.replace(os.sep, "/"):
            raise e
    import difflib

    # Where the workloads were read from, and (the default root) how to read them elsewhere.
    where = f"read from {d.root}" + (f", {ROOT_ENV} names another directory"
                                     if root is None else "")
    if not d.root.is_dir():  # discover's line: a pip-installed perflab has no workloads/
        raise PerflabError(f"unknown workload '{name}': {d.errors[0].problem}",
                           d.errors[0].fix)
    close = difflib.get_close_matches(name, list(d.workloads), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise PerflabError(f"unknown workload '{name}'",
                       f"{hint}see `perflab workloads list` (known: "
                       f"{', '.join(sorted(d.workloads)) or 'none'}; {where})")


def resolve(name: str, params: Mapping[str, Any] | None = None,
            root: Path | str | None = None, *, require_built: bool = True) -> Resolved:
    """THE way a workload spec becomes something to run: the workload ``name`` under ``root``
    (a workloads directory: default $PERFLAB_WORKLOADS_DIR or the source tree's; bisect gives
    its checkout's) with ``params`` -> argv, typed parameters, primary metric, region symbol.
    PerflabError if the name is unknown, a parameter bad, the runtime missing or the workload
    not built (unless ``require_built`` is False)."""
    return get(name, root).resolve(params, require_built=require_built)


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """["depth=10", "kind=error"] -> {"depth": "10", "kind": "error"} (for --param options)."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PerflabError(f"--param {item!r} is not NAME=VALUE", "write e.g. --param depth=10")
        out[key.strip()] = value.strip()
    return out
