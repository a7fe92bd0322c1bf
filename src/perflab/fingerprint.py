"""The environment a result was measured in: what makes two results comparable or not.

The probing lives here; the record it makes is model.Fingerprint (typed, stored as one JSON
object)."""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
from pathlib import Path
from typing import Any

from perflab import __version__, jobcontext
from perflab.model import MACHINE_IDENTITY_KEYS, Fingerprint  # noqa: F401 (re-exported)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _bracketed(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise' (the sysfs way of marking the active choice)."""
    if text is None:
        return None
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text


def cpu_model() -> str:
    info = _read("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "cpu model", "Hardware"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", info, re.MULTILINE)
        if m:
            return m.group(1).strip()
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def pmu_status() -> dict[str, Any]:
    """Which perf events this machine can count (probed once per process)."""
    from perflab.collectors.perf_events import (
        HARDWARE_EVENTS,
        SOFTWARE_EVENTS,
        KernelBackend,
    )

    probe = KernelBackend().probe(list(SOFTWARE_EVENTS) + list(HARDWARE_EVENTS))
    hw = {k: v for k, v in probe.items() if k in HARDWARE_EVENTS}
    sw = {k: v for k, v in probe.items() if k in SOFTWARE_EVENTS}
    return {
        "hardware": [k for k, v in hw.items() if v is None],
        "software": [k for k, v in sw.items() if v is None],
        "hardware_reason": next((v for v in hw.values() if v), None),
        "software_reason": next((v for v in sw.values() if v), None),
    }


def machine_fingerprint(probe_pmu: bool = True, job: jobcontext.JobContext | None = None,
                        ) -> Fingerprint:
    """This machine as a result stores it; ``job`` (default: jobcontext.current(), set by the
    entry point of a fleet job's verb) adds the fleet machine's name and tags, and the job."""
    uname = platform.uname()
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    smt = _read("/sys/devices/system/cpu/smt/active")
    fp: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "kernel": uname.release,
        "arch": uname.machine,
        "os": _os_name(),
        "governor": governor or "none (no cpufreq: VM or fixed frequency)",
        "smt": {"1": "on", "0": "off"}.get(smt or "", "unknown"),
        "thp": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
        "load_at_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "perflab_version": __version__,
    }
    job = job or jobcontext.current()
    if job is not None:
        fp.update(job.fingerprint_fields())
    if probe_pmu:
        st = pmu_status()
        fp["pmu"] = bool(st["hardware"])
        fp["pmu_events"] = st["hardware"]
        fp["pmu_reason"] = st["hardware_reason"]
    return Fingerprint.from_json(fp)


def _os_name() -> str:
    text = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, re.MULTILINE)
    return m.group(1) if m else platform.system()


# The part a profile stores and a profile diff compares (profiles record this much only).
PROFILE_IDENTITY_KEYS = MACHINE_IDENTITY_KEYS[:5]

