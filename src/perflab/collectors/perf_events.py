"""perf_event_open counters on a child process, through ctypes.

Why by hand: no maintained Python binding exposes perf_event_open for another process with
inherit + enable_on_exec, and running ``perf stat`` as a wrapper would put perf's own rusage into
wait4's figures.  The syscall and its attr layout are stable kernel ABI.

Counters are opened on the child *before* it execs (it waits on a pipe), with enable_on_exec so
they start at exec, and inherit so threads and children are counted.  Reads return
(value, time_enabled, time_running); hardware counters can be multiplexed, and then the value is
scaled by enabled/running and the scaling is reported, as ``perf stat`` does.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from perflab.metrics import HARDWARE_COUNTERS, SOFTWARE_COUNTERS

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1

# The kernel's config code (linux/perf_event.h) of each counter model.py's metric table lists.
_SOFTWARE_CONFIG = {"task_clock": 1, "page_faults": 2, "context_switches": 3, "cpu_migrations": 4}
_HARDWARE_CONFIG = {"cycles": 0, "instructions": 1, "cache_references": 2, "cache_misses": 3,
                    "branches": 4, "branch_misses": 5}
# metric name -> (type, config), by config code (a counter without a code fails at import)
SOFTWARE_EVENTS: dict[str, tuple[int, int]] = {
    n: (PERF_TYPE_SOFTWARE, _SOFTWARE_CONFIG[n])
    for n in sorted(SOFTWARE_COUNTERS, key=_SOFTWARE_CONFIG.__getitem__)}
HARDWARE_EVENTS: dict[str, tuple[int, int]] = {
    n: (PERF_TYPE_HARDWARE, _HARDWARE_CONFIG[n])
    for n in sorted(HARDWARE_COUNTERS, key=_HARDWARE_CONFIG.__getitem__)}

_SYSCALL_NR = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}
_ATTR_SIZE = 136  # PERF_ATTR_SIZE_VER8; older kernels accept it when the tail is zero
_FMT_TOTAL_TIME_ENABLED = 1
_FMT_TOTAL_TIME_RUNNING = 2
_BIT_DISABLED = 1 << 0
_BIT_INHERIT = 1 << 1
_BIT_EXCLUDE_HV = 1 << 6
_BIT_ENABLE_ON_EXEC = 1 << 12


@dataclass(frozen=True)
class Reading:
    value: int
    enabled: int  # ns the counter was enabled
    running: int  # ns it was actually on the PMU

    def __sub__(self, other: Reading) -> Reading:
        return Reading(self.value - other.value, self.enabled - other.enabled,
                       self.running - other.running)

    def __add__(self, other: Reading) -> Reading:
        return Reading(self.value + other.value, self.enabled + other.enabled,
                       self.running + other.running)

    @property
    def scaled(self) -> float:
        """The count extrapolated over multiplexing (perf stat's scaling)."""
        if self.running <= 0:
            return 0.0
        if self.running >= self.enabled:
            return float(self.value)
        return self.value * self.enabled / self.running

    @property
    def running_fraction(self) -> float:
        return 1.0 if self.enabled <= 0 else self.running / self.enabled


class CounterError(OSError):
    pass


class CounterSet(Protocol):
    """Open counters on one process (the fake in the tests implements this too)."""

    names: list[str]

    def read(self) -> dict[str, Reading]: ...

    def close(self) -> None: ...


class CounterBackend(Protocol):
    def open(self, pid: int, names: Iterable[str]) -> CounterSet: ...

    def probe(self, names: Iterable[str]) -> dict[str, str | None]:
        """For each event: None when it can be counted here, else why not."""
        ...


@functools.lru_cache(maxsize=1)
def _syscall() -> Any:
    """libc's syscall(), looked up once: counters are opened for every run."""
    fn = ctypes.CDLL(None, use_errno=True).syscall
    fn.restype = ctypes.c_long
    return fn


@functools.lru_cache(maxsize=64)
def _attr(type_: int, config: int, flags: int) -> ctypes.Array[ctypes.c_char]:
    """The perf_event_attr of one event (made once, reused for every run: the kernel copies it)."""
    buf = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into("=IIQQQQQ", buf, 0, type_, _ATTR_SIZE, config, 0, 0,
                     _FMT_TOTAL_TIME_ENABLED | _FMT_TOTAL_TIME_RUNNING, flags)
    return buf


def perf_event_open(type_: int, config: int, pid: int, flags: int) -> int:
    nr = _SYSCALL_NR.get(platform.machine())
    if nr is None:
        raise CounterError(errno.ENOSYS, f"perf_event_open is not known on {platform.machine()}")
    attr = _attr(type_, config, flags)
    fd = _syscall()(nr, attr, ctypes.c_int(pid), ctypes.c_int(-1), ctypes.c_int(-1),
                    ctypes.c_ulong(0))
    if fd < 0:
        e = ctypes.get_errno()
        raise CounterError(e, os.strerror(e))
    return int(fd)


class _KernelCounterSet:
    def __init__(self, fds: dict[str, int]) -> None:
        self._fds = fds
        self.names = list(fds)

    def read(self) -> dict[str, Reading]:
        out = {}
        for name, fd in self._fds.items():
            raw = os.read(fd, 24)
            value, enabled, running = struct.unpack("=QQQ", raw)
            out[name] = Reading(value, enabled, running)
        return out

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


class KernelBackend:
    """The real perf_event_open."""

    FLAGS = _BIT_DISABLED | _BIT_INHERIT | _BIT_EXCLUDE_HV | _BIT_ENABLE_ON_EXEC

    def open(self, pid: int, names: Iterable[str]) -> CounterSet:
        fds: dict[str, int] = {}
        try:
            for name in names:
                type_, config = {**SOFTWARE_EVENTS, **HARDWARE_EVENTS}[name]
                fds[name] = perf_event_open(type_, config, pid, self.FLAGS)
        except Exception:
            for fd in fds.values():
                os.close(fd)
            raise
        return _KernelCounterSet(fds)

    def probe(self, names: Iterable[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for name in names:
            type_, config = {**SOFTWARE_EVENTS, **HARDWARE_EVENTS}[name]
            try:
                fd = perf_event_open(type_, config, 0, _BIT_DISABLED | _BIT_EXCLUDE_HV)
                os.close(fd)
                out[name] = None
            except CounterError as e:
                out[name] = explain_errno(e.errno, hardware=type_ == PERF_TYPE_HARDWARE)
        return out


def explain_errno(err: int | None, hardware: bool) -> str:
    if err in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV) and hardware:
        return "no hardware PMU on this machine (a VM without PMU passthrough?)"
    if err in (errno.EACCES, errno.EPERM):
        try:
            level = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
        except OSError:
            level = "?"
        return (f"perf_event_open refused (kernel.perf_event_paranoid={level}); run as root or "
                "`sudo sysctl kernel.perf_event_paranoid=1`")
    if err == errno.ENOSYS:
        return "perf_event_open is not available in this kernel"
    return f"perf_event_open failed: {os.strerror(err or 0)}"
