"""The owner of a running result: who wrote it, and whether it still lives.

A result is 'running' while its perflab lives.  A perflab killed with SIGKILL (or a machine
that lost power) cannot record its end, so each running result carries its owner: pid, the
process's start time (pids are reused) and the boot id (pids restart at boot).  Readers show a
running result whose owner is gone as 'interrupted'; --resume makes it running again.  Both
stores (perflab.storage, perflab.quickwrite) stamp it here.
"""

from __future__ import annotations

import os
from pathlib import Path

from perflab.model import Owner, ResultSet


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def current_owner() -> Owner:
    import socket

    pid = os.getpid()
    return Owner(pid=pid, host=socket.gethostname(), boot_id=_boot_id(),
                 start=_start_ticks(pid))


def owner_alive(owner: Owner | None) -> bool | None:
    """True/False when this machine can tell; None for another host or an unknown owner."""
    import socket

    if owner is None or owner.host != socket.gethostname():
        return None
    if owner.boot_id and owner.boot_id != _boot_id():
        return False  # the machine restarted since
    pid = owner.pid
    if not isinstance(pid, int):
        return None
    start = _start_ticks(pid)
    return start is not None and (owner.start is None or start == owner.start)


def effective_status(status: str, owner: Owner | None) -> str:
    if status == "running" and owner_alive(owner) is False:
        return "interrupted"
    return status


def stamp_owner(rs: ResultSet) -> None:
    """A running result's settings name this process as its owner."""
    if rs.status == "running":
        rs.settings.owner = current_owner()

