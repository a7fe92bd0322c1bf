"""The workload registry: discover manifests, check runtimes, build, and make command lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from perflab.errors import PerflabError
from perflab.workloads.manifest import MANIFEST, Manifest, Param, format_value, load_manifest

ROOT_ENV = "PERFLAB_WORKLOADS_DIR"
BUILD_LOG = "build/perflab-build.log"


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


class Workload:
    """One registered workload (a validated manifest plus what perflab can do with it)."""

    def __init__(self, manifest: Manifest, root: Path) -> None:
        self.manifest = manifest
        self.root = root

    # -- what the manifest says ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def family(self) -> str:
        return self.manifest.family

    @property
    def runtime(self) -> str:
        return self.manifest.runtime

    @property
    def description(self) -> str:
        return self.manifest.description

    @property
    def dir(self) -> Path:
        return self.manifest.dir

    @property
    def params(self) -> dict[str, Param]:
        return self.manifest.params

    @property
    def primary(self) -> str:
        """The workload JSON key to use as primary metric (e.g. "ns_per_op")."""
        return self.manifest.primary

    @property
    def region_symbol(self) -> str | None:
        """A callgrind --toggle-collect pattern for the timed region's function, if any."""
        return self.manifest.region_symbol

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

    @property
    def unavailable_reason(self) -> str:
        return self.available().reason

    def is_built(self) -> bool:
        """Every declared output exists (a workload with nothing to build is always built)."""
        return all((self.dir / out).exists() for out in self.manifest.outputs)

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
                raise PerflabError(f"building {self.name} took over {self.manifest.timeout:g} s",
                                   f"see {log}") from None
            if proc.returncode != 0:
                raise PerflabError(f"building {self.name} failed (exit {proc.returncode}): "
                                   f"{_last_line(log)}", f"see the log {log}", exit_code=1)
        missing = [o for o in self.manifest.outputs if not (self.dir / o).exists()]
        if missing:
            raise PerflabError(f"building {self.name} did not produce {missing[0]}",
                               f"fix outputs or build in {self.manifest.path} (log: {log})",
                               exit_code=1)
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

    def command(self, params: Mapping[str, Any] | None = None) -> tuple[list[str], dict[str, Any]]:
        """(argv, typed params): the manifest's run prefix plus one --name=value per parameter.

        ``params`` maps names to strings (command line) or typed values (suites).  Raises
        PerflabError for an unknown/bad parameter, a missing runtime or an unbuilt workload."""
        typed = self.typed_params(params)
        ok, why = self.available()
        if not ok:
            raise PerflabError(f"workload {self.name} cannot run here: {why}",
                               "install it, or choose another workload (perflab workloads list)")
        if not self.is_built():
            raise PerflabError(f"workload {self.name} is not built",
                               f"run `perflab workloads build {self.name}`")
        argv = [self._expand(a) for a in self.manifest.run]
        argv += [f"--{n}={format_value(v)}" for n, v in typed.items()]
        return argv, typed

    def _expand(self, arg: str) -> str:
        return (arg.replace("{dir}", str(self.dir)).replace("{root}", str(self.root))
                .replace("{python}", sys.executable))


def _last_line(log: Path) -> str:
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
        errors.append(PerflabError(f"no workloads directory at {base}",
                                   f"set {ROOT_ENV} to the directory holding <family>/<runtime>/"
                                   f"{MANIFEST}"))
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

    close = difflib.get_close_matches(name, list(d.workloads), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise PerflabError(f"unknown workload '{name}'",
                       f"{hint}see `perflab workloads list` (known: "
                       f"{', '.join(sorted(d.workloads)) or 'none'})")


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """["depth=10", "kind=error"] -> {"depth": "10", "kind": "error"} (for --param options)."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PerflabError(f"--param {item!r} is not NAME=VALUE", "write e.g. --param depth=10")
        out[key.strip()] = value.strip()
    return out
