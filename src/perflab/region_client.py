"""Announce a workload's timed region to perflab, from Python (see include/perflab_region.h).

Usage in a workload::

    from perflab.region_client import region   # or copy this file: it has no dependencies
    with region():
        hot_loop()

Protocol: perflab sets PERFLAB_CTL_FIFO / PERFLAB_ACK_FIFO; ``begin`` writes "enable\\n" to the
control fifo and waits for one "ack" line on the ack fifo, ``end`` does the same with
"disable\\n".  It is perf's own ``--control fifo:CTL,ACK`` protocol.  Without the variables every
call is a no-op.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

CTL_ENV = "PERFLAB_CTL_FIFO"
ACK_ENV = "PERFLAB_ACK_FIFO"

_fds: tuple[int, int] | None = None
_disabled = False


def _open() -> tuple[int, int] | None:
    global _fds, _disabled
    if _fds is not None or _disabled:
        return _fds
    ctl, ack = os.environ.get(CTL_ENV), os.environ.get(ACK_ENV)
    if not ctl or not ack:
        _disabled = True
        return None
    _fds = (os.open(ctl, os.O_WRONLY | os.O_CLOEXEC), os.open(ack, os.O_RDONLY | os.O_CLOEXEC))
    return _fds


def _send(command: bytes) -> None:
    fds = _open()
    if fds is None:
        return
    ctl, ack = fds
    os.write(ctl, command)
    while True:  # one line of acknowledgement
        b = os.read(ack, 1)
        if not b or b == b"\n":
            break


def begin() -> None:
    _send(b"enable\n")


def end() -> None:
    _send(b"disable\n")


@contextlib.contextmanager
def region() -> Iterator[None]:
    begin()
    try:
        yield
    finally:
        end()
