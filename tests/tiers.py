"""Test tiers: every test says which tier it is in, and the unit tier is held to its promise.

- ``unit``: pure logic.  No process is started, nothing sleeps, nothing is measured for real;
  simulations are seeded and small.  ``make check`` runs this tier (with ruff) in parallel.
- ``system``: starts real processes, servers, browsers, git; asserts outcomes (exit codes, the
  one-line errors, exact counts, what is stored), never a timing.  Safe to run beside another
  test, so ``make test`` runs this tier in parallel too.
- ``measure``: real measurements whose assertions depend on the CPU the test gets (verdicts,
  stop rules, shares of samples, CPU/wall ratios).  They still hold at load 4 (``make
  test-busy``), but ``make test`` runs them one at a time, after the parallel tiers.

A test takes the closest tier marker (the function's, else its class's, else the module's
``pytestmark``); a test with none is a collection error, so nothing drifts into no tier.

In the unit tier, starting a process (subprocess, os.fork, os.posix_spawn, os.system) or
sleeping more than 10 ms in all fails the test with ``TierViolation``.  Set
``PERFLAB_TIER_AUDIT=FILE`` to record instead, for every test, whether it started a process or
slept and how long it took (one JSON line each): the evidence for choosing a test's tier.
"""

from __future__ import annotations

import _posixsubprocess
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

TIERS = ("unit", "system", "measure")
SLEEP_ALLOWANCE_S = 0.010


class TierViolation(AssertionError):
    """A unit-tier test started a process or slept."""


def tier_of(markers: Iterator[str]) -> str | None:
    """The tier of a test from its marker names, closest first (pytest's ``iter_markers``)."""
    return next((m for m in markers if m in TIERS), None)


class _Watch:
    """Patches the ways a test can start a process or sleep, and reports each to ``on``."""

    def __init__(self) -> None:
        self.on: Callable[[str], None] | None = None
        self.slept = 0.0
        self.spawns = 0
        self.main = threading.main_thread()
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, owner: Any, name: str, what: str) -> None:
        real = getattr(owner, name, None)
        if real is None:
            return
        watch = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is watch.main:
                watch.spawns += 1
                if watch.on is not None:
                    watch.on(what)
            return real(*args, **kwargs)

        self._saved.append((owner, name, real))
        setattr(owner, name, wrapper)

    def install(self) -> None:
        # subprocess.Popen starts a child with os.posix_spawn or its own binding of
        # _posixsubprocess.fork_exec (subprocess._fork_exec): patch both names.
        self._wrap(subprocess, "_fork_exec", "started a process (subprocess)")
        self._wrap(_posixsubprocess, "fork_exec", "started a process (subprocess)")
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            self._wrap(os, name, f"started a process (os.{name})")
        real_sleep = time.sleep
        watch = self

        def sleep(seconds: float) -> None:
            if watch.on is not None and threading.current_thread() is watch.main:
                watch.slept += seconds
                if watch.slept > SLEEP_ALLOWANCE_S:
                    watch.on(f"slept {watch.slept:.3f} s")
            real_sleep(seconds)

        self._saved.append((time, "sleep", real_sleep))
        time.sleep = sleep

    def uninstall(self) -> None:
        for owner, name, real in reversed(self._saved):
            setattr(owner, name, real)
        self._saved.clear()


_watch = _Watch()
_audit_path = os.environ.get("PERFLAB_TIER_AUDIT") or None


def pytest_configure(config: pytest.Config) -> None:
    for tier, text in (
        ("unit", "pure logic: no process, no sleep, no real measurement (make check)"),
        ("system", "real processes, servers, browsers; asserts outcomes, never timings"),
        ("measure", "real measurements whose assertions depend on the CPU: run serially"),
    ):
        config.addinivalue_line("markers", f"{tier}: {text}")
    _watch.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    _watch.uninstall()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier", metavar="TIER[,TIER]", default=None,
                     help=f"run only the tests of these tiers ({', '.join(TIERS)}); unlike -m, "
                          "a test's closest tier marker decides, so a `measure` test in a "
                          "`system` module is not run with the system tier")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers = {it.nodeid: tier_of(m.name for m in it.iter_markers()) for it in items}
    missing = [nodeid for nodeid, tier in tiers.items() if tier is None]
    if missing and _audit_path is None:
        shown = "\n  ".join(missing[:20])
        raise pytest.UsageError(
            f"{len(missing)} test(s) have no tier marker (one of {', '.join(TIERS)}); add "
            f"pytestmark = pytest.mark.<tier> to the module or a marker to the test "
            f"(see tests/tiers.py):\n  {shown}")
    wanted = config.getoption("--tier", None) if config is not None else None
    if wanted:
        chosen = set(wanted.split(","))
        if not chosen <= set(TIERS):
            raise pytest.UsageError(f"--tier {wanted}: the tiers are {', '.join(TIERS)}")
        keep = [it for it in items if tiers[it.nodeid] in chosen]
        dropped = [it for it in items if tiers[it.nodeid] not in chosen]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


_seen: dict[str, list[str]] = {}
_took: dict[str, float] = {}


def _watched(item: pytest.Item) -> Iterator[None]:
    """Runs one phase (setup or call) of a test with the watch on."""
    tier = tier_of(m.name for m in item.iter_markers())
    seen = _seen.setdefault(item.nodeid, [])
    _watch.slept = 0.0

    def on(what: str) -> None:
        if what not in seen:
            seen.append(what)
        if _audit_path is None and tier == "unit":
            raise TierViolation(f"a unit-tier test {what}: mark it system or measure "
                                f"(tests/tiers.py), or keep it pure")

    _watch.on = on
    try:
        yield
    finally:
        _watch.on = None


# Fixtures whose setup started a process (a compiler, a PostgreSQL server).  A session-scoped
# one is set up once per process, so without this a unit test that uses it would pass whenever
# another test happened to set it up first.
_spawning_fixtures: set[str] = set()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[Any]:
    before = _watch.spawns
    try:
        return (yield)
    finally:
        if _watch.spawns > before:
            _spawning_fixtures.add(fixturedef.argname)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _watched(item)
    used = sorted(_spawning_fixtures.intersection(getattr(item, "fixturenames", ())))
    if used:
        what = f"used a fixture that starts a process ({', '.join(used)})"
        _seen.setdefault(item.nodeid, []).append(what)
        if _audit_path is None and tier_of(m.name for m in item.iter_markers()) == "unit":
            raise TierViolation(f"a unit-tier test {what}: mark it system or measure "
                                f"(tests/tiers.py), or keep it pure")
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _watched(item)
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _audit_path is None:
        return
    _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        with open(_audit_path, "a") as f:
            f.write(json.dumps({"test": report.nodeid, "seen": _seen.pop(report.nodeid, []),
                                "s": round(_took.pop(report.nodeid), 3)}) + "\n")
