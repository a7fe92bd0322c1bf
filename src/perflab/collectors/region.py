"""The parent side of the timed-region protocol (see include/perflab_region.h).

perflab makes two fifos and passes their paths to the command.  A thread answers each
"enable"/"disable" line: it snapshots the counters *before* it acknowledges, so the workload's
timed loop starts only after the snapshot, and the counts between the two snapshots are exactly
the region's.  Several enable/disable pairs add up.
"""

from __future__ import annotations

import os
import select
import tempfile
import threading
import time
from collections.abc import Callable

from perflab.region_client import ACK_ENV, CTL_ENV


class RegionChannel:
    def __init__(self, on_enable: Callable[[], None], on_disable: Callable[[], None]) -> None:
        self._dir = tempfile.mkdtemp(prefix="perflab-region-")
        self.ctl_path = os.path.join(self._dir, "ctl")
        self.ack_path = os.path.join(self._dir, "ack")
        os.mkfifo(self.ctl_path, 0o600)
        os.mkfifo(self.ack_path, 0o600)
        # O_RDWR on a fifo never blocks and never sees EOF, so the thread can wait for a workload
        # that may never open it.
        self._ctl = os.open(self.ctl_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self._ack = os.open(self.ack_path, os.O_RDWR | os.O_CLOEXEC)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._on_enable, self._on_disable = on_enable, on_disable
        self.enables = 0
        self.region_ns = 0  # wall time between enable and disable, summed
        self._t_enable: int | None = None
        self.error: str = ""
        self._thread = threading.Thread(target=self._serve, name="perflab-region", daemon=True)

    def env(self) -> dict[str, str]:
        return {CTL_ENV: self.ctl_path, ACK_ENV: self.ack_path}

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def reset(self) -> None:
        """Forget the last run's figures: one channel (two fifos, one thread) serves every run
        of a measurement; only one command runs at a time, so nothing is in flight here."""
        self.enables = 0
        self.region_ns = 0
        self._t_enable = None
        self.error = ""

    def _serve(self) -> None:
        buf = b""
        while True:
            ready, _, _ = select.select([self._ctl, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                chunk = os.read(self._ctl, 256)
            except BlockingIOError:
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                cmd = line.strip().decode(errors="replace")
                try:
                    if cmd == "enable" and self._t_enable is None:
                        self._on_enable()
                        self.enables += 1
                        self._t_enable = time.monotonic_ns()
                    elif cmd == "disable" and self._t_enable is not None:
                        self.region_ns += time.monotonic_ns() - self._t_enable
                        self._t_enable = None
                        self._on_disable()
                    elif cmd not in ("enable", "disable"):
                        self.error = f"unknown region command {cmd!r}"
                except Exception as e:  # never leave the workload waiting for its ack
                    self.error = f"region snapshot failed: {e}"
                os.write(self._ack, b"ack\n")

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        if self._thread.ident is not None:  # a channel the launch server answers has none
            self._thread.join(timeout=5)
        for fd in (self._ctl, self._ack, self._stop_r, self._stop_w):
            os.close(fd)
        for p in (self.ctl_path, self.ack_path):
            try:
                os.unlink(p)
            except OSError:
                pass
        os.rmdir(self._dir)

    @property
    def open_region(self) -> bool:
        return self._t_enable is not None
