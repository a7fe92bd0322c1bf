"""Run a command and measure it: this is where a measurement is taken.

A tiny C launcher (data/perflab-launch.c), kept alive as a fork server for a whole
measurement (LaunchServer), starts the command in its own process group (so a timeout kills
everything it started), pins it, counts it with perf counters and times it to wait4's return;
CPU times, peak RSS, faults and context switches come from wait4's rusage, which covers the
command and every descendant it waited for.

Two paths, one outcome (``_outcome``): ``run_batch`` sends many runs in one request and the
server does everything per run itself (counters, timed region, output), answering once at the
end, so no Python sits between runs; ``run`` makes one run with perflab opening the counters
and answering the timed region, for counter backends the server cannot open (the tests' fake
PMU).  ``execute`` picks the batch path whenever it can.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

from perflab.collectors.harness import HarnessOutputError
from perflab.collectors.harness import figures as harness_figures
from perflab.collectors.perf_events import (
    HARDWARE_EVENTS,
    SOFTWARE_EVENTS,
    CounterBackend,
    CounterError,
    CounterSet,
    KernelBackend,
    Reading,
)
from perflab.collectors.region import RegionChannel
from perflab.collectors.workload_json import TAIL_BYTES, WorkloadJSONError, parse_last_json
from perflab.errors import PerflabError, printable
from perflab.format import fmt_plain
from perflab.metrics import MetricInfo
from perflab.private import why_unsafe


@dataclass
class RunRequest:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    pin: list[int] | None = None
    timeout: float | None = None
    counters: list[str] = field(default_factory=list)
    backend: CounterBackend | None = None
    region: bool = True
    harness: str = ""  # whose figures the output holds (collectors/harness.py); "": JSON line


@dataclass
class RunOutcome:
    status: str  # ok | failed | timeout | signal
    exit_code: int | None
    values: dict[str, float]
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    region_used: bool = False
    counter_error: str = ""
    running_fraction: dict[str, float] = field(default_factory=dict)  # multiplexing per counter
    killed: list[Stray] = field(default_factory=list)  # left running, killed after the run
    started_at: float | None = None  # unix time the command was released
    # What a harness run's per-benchmark metrics are (collectors/harness.figures)
    infos: dict[str, MetricInfo] = field(default_factory=dict)
    fix: str = ""  # what to do when the failure is not the command's (e.g. valgrind's limit)


def resolve_executable(argv0: str, env: dict[str, str]) -> str:
    if not argv0.strip():
        raise PerflabError("an empty command was given", "give the program to run")
    if "/" in argv0:
        if not os.path.exists(argv0):
            raise PerflabError(f"command not found: {argv0}", "check the path")
        if os.path.isdir(argv0):
            raise PerflabError(f"the command {argv0} is a directory, not a program",
                               f"give the program inside it (e.g. {argv0.rstrip('/')}/NAME)")
        if not os.access(argv0, os.X_OK):
            raise PerflabError(f"command is not executable: {argv0}",
                               f"chmod +x {argv0}, or run it through its interpreter")
        return argv0
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if not found:
        raise PerflabError(f"command not found: {argv0}",
                           "check the spelling and PATH; pass --shell to run shell syntax")
    return found




class _StreamTail:
    """A pipe for the commands' stdout or stderr over a whole measurement, drained by a thread
    that keeps only the last TAIL_BYTES of the current run: a command writing gigabytes costs
    neither memory nor disk (hand-written because subprocess's readers keep everything).  The
    fork server hands the same pipe to every command; ``start()`` begins a run's tail and
    ``take()``, once the command's group is gone, reads what is left in the pipe and returns
    the run's tail."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.r, self.w = os.pipe2(os.O_CLOEXEC)
        try:
            fcntl.fcntl(self.w, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer wake-ups for big writers
        except OSError:
            pass
        os.set_blocking(self.r, False)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._lock = threading.Lock()
        self.buf = bytearray()
        self.cut = False  # this run's output was longer than the limit: only its end is kept
        self._thread = threading.Thread(target=self._drain, name="perflab-tail", daemon=True)
        self._thread.start()

    def _read_available(self) -> bool:
        """Read what the pipe holds now (caller holds the lock); False at end-of-file."""
        while True:
            try:
                chunk = os.read(self.r, 1 << 20)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            self.buf += chunk
            if len(self.buf) > 2 * self.limit:
                del self.buf[:-self.limit]
                self.cut = True

    def _drain(self) -> None:
        while True:
            ready, _, _ = select.select([self.r, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            with self._lock:
                if not self._read_available():
                    return

    def close_writer(self) -> None:
        """The server has its copy; ours must go, or the pipe never reports end-of-file."""
        os.close(self.w)

    def start(self) -> None:
        with self._lock:
            self._read_available()  # anything late from an earlier run is not this run's
            self.buf.clear()
            self.cut = False

    def take(self) -> tuple[str, bool]:
        """The run's tail, and whether output before it was dropped."""
        with self._lock:
            self._read_available()
            cut = self.cut or len(self.buf) > self.limit
            out = bytes(self.buf[-self.limit:])
            self.buf.clear()
            self.cut = False
        return out.decode(errors="replace"), cut

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join()
        for fd in (self.r, self._stop_r, self._stop_w):
            os.close(fd)


@dataclass(frozen=True)
class Stray:
    """A process a command left running when it ended, which the launcher then killed (its
    sweep: the launcher is the commands' subreaper, so every orphan of theirs is its child)."""

    pid: int
    where: str  # group (the command's process group) | pgrp (another group) | session (setsid)
    name: str  # its comm

    def describe(self) -> str:
        where = {"group": "in its process group", "pgrp": "in another process group",
                 "session": "in another session"}.get(self.where, self.where)
        return f"pid {self.pid} {printable(self.name)} ({where})"


def _strays(data: bytes) -> list[Stray]:
    """The launcher's "PID WHERE COMM" lines (sweep in perflab-launch.c)."""
    out = []
    for line in data.decode(errors="replace").splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0].isdigit():
            out.append(Stray(int(parts[0]), parts[1], parts[2] if len(parts) > 2 else "?"))
    return out


def _check_private(path: Path, what: str) -> str:
    """'' when ``path`` (links followed) is owned by us (or root) and writable by no one else."""
    return why_unsafe(path.stat(), path, what)


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def _launcher_source() -> bytes:
    return resources.files("perflab").joinpath("data/perflab-launch.c").read_bytes()


def _macro_body(c_source: str, head: str) -> str:
    """The body of the X-macro ``#define HEAD`` in ``c_source``, without its comments."""
    macro = re.search(rf"^#define {re.escape(head)}((?:.*\\\n)*.*)$", c_source, re.MULTILINE)
    return re.sub(r"/\*.*?\*/", "", macro.group(1)) if macro else ""


def _run_fields(c_source: str) -> tuple[str, ...]:
    """The NAMEs of the X-macro PERFLAB_RUN_FIELDS's X(NAME, EXPR) lines in ``c_source``."""
    return tuple(re.findall(r"\bX\((\w+),", _macro_body(c_source, "PERFLAB_RUN_FIELDS(X)")))


def _rec_tail(c_source: str) -> tuple[tuple[str, str, str], ...]:
    """(KIND, NAME, N) of each item of the X-macro PERFLAB_REC_TAIL in ``c_source``: NUM(NAME),
    READINGS(NAME, N) or BYTES(NAME) (N is '' but for READINGS)."""
    body = _macro_body(c_source, "PERFLAB_REC_TAIL(NUM, READINGS, BYTES)")
    return tuple(re.findall(r"\b(NUM|READINGS|BYTES)\((\w+)(?:,\s*(\w+))?\)", body))


@functools.lru_cache(maxsize=1)
def rec_tail() -> tuple[tuple[str, str, str], ...]:
    """The tail of a batch's "rec" record, after the run's fields, as perflab-launch.c lists it
    (PERFLAB_REC_TAIL, read from the source the launcher is built from, as launch_fields)."""
    items = _rec_tail(_launcher_source().decode())
    unlisted = {item for _, item, _ in _REC_TAIL_READERS} - {name for _, name, _ in items}
    if not items or unlisted:
        raise PerflabError("perflab-launch.c's PERFLAB_REC_TAIL (a record's tail) lacks "
                           f"{', '.join(sorted(unlisted)) or 'every item'}",
                           "reinstall perflab; if it persists, report a bug")
    return items


def _tail_values(items: tuple[tuple[str, str, str], ...], counters: list[str],
                 nums: list[int]) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """A record tail's numbers by name (READINGS as {counter: Reading}), and the BYTES items
    with their lengths, in the order their bytes follow the record's line."""
    values: dict[str, Any] = {}
    blobs: list[tuple[str, int]] = []
    i = 0
    for kind, name, n in items:
        if kind == "READINGS":
            k = 3 * values[n]
            values[name] = _readings(counters, nums[i:i + k]) if k else {}
            i += k
        elif kind == "BYTES":
            blobs.append((name, nums[i]))
            i += 1
        else:
            values[name] = nums[i]
            i += 1
    if i != len(nums):
        raise ValueError(f"a record's tail has {len(nums)} numbers, its list {i}")
    return values, blobs


@functools.lru_cache(maxsize=1)
def launch_fields() -> tuple[str, ...]:
    """The names of a run's fields in the server's "done" line and first in its batch records,
    in order, read from the X-macro PERFLAB_RUN_FIELDS in perflab-launch.c: the one list of
    them (the C file says why it lives there).  The source read is the one the launcher is
    built from, so the names are the binary's."""
    names = _run_fields(_launcher_source().decode())
    if not names:
        raise PerflabError("perflab-launch.c has no PERFLAB_RUN_FIELDS list of a run's fields",
                           "reinstall perflab; if it persists, report a bug")
    return names


@functools.lru_cache(maxsize=1)
def launcher_path() -> str:
    """Build (once, cached by source hash) the small C launcher in perflab-launch.c.

    The cached binary runs every measured command, so it is trusted only when the cache
    directory and the file are ours (or root's) and writable by nobody else, and the binary's
    hash is the one recorded when it was built from this source (``<exe>.sha256``).  A foreign
    or altered binary is rebuilt; a shared, writable cache directory is refused."""
    src = _launcher_source()
    digest = hashlib.sha256(src).hexdigest()[:12]
    cache = Path(os.environ.get("PERFLAB_CACHE") or platformdirs.user_cache_dir("perflab"))
    exe = cache / f"perflab-launch-{digest}"
    sums = cache / f"perflab-launch-{digest}.sha256"
    try:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise PerflabError(f"cannot create perflab's cache directory {cache} ({e.strerror})",
                           "set PERFLAB_CACHE to a private, writable directory") from None
    unsafe = _check_private(cache, "perflab's cache directory")
    if unsafe:
        raise PerflabError(f"{unsafe}: a binary planted there would run your commands",
                           f"chmod go-w {cache}, or set PERFLAB_CACHE to a private directory")
    if exe.exists():
        try:
            trusted = (not _check_private(exe, "launcher") and not _check_private(sums, "hash")
                       and sums.read_text().strip() == _file_sha256(exe))
        except OSError:
            trusted = False
        if trusted:
            return str(exe)
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise PerflabError("perflab needs a C compiler once, to build its small launcher",
                           "install one (apt-get install gcc) or set CC")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        c_file = Path(tmp) / "perflab-launch.c"
        c_file.write_bytes(src)
        out = Path(tmp) / "launch"
        # Static when possible: fewer pages mapped before the command's exec.
        for extra in (["-static"], []):
            r = subprocess.run([cc, "-O2", *extra, "-o", str(out), str(c_file)],
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
        else:
            raise PerflabError(f"building perflab's launcher with {cc} failed: "
                               f"{r.stderr.strip().splitlines()[-1:]}",
                               "check the C compiler installation")
        out.chmod(0o755)
        sum_tmp = Path(tmp) / "sha256"
        sum_tmp.write_text(_file_sha256(out) + "\n")
        sum_tmp.chmod(0o644)
        # Atomic renames: concurrent perflabs race harmlessly (identical builds of one source
        # may still differ in bytes, so the hash is renamed first and checked on every start;
        # a loser of the race rebuilds once).
        os.replace(sum_tmp, sums)
        os.replace(out, exe)
    return str(exe)


class LaunchServer:
    """perflab's launcher kept alive for a whole measurement: a fork server driven over a pipe.

    A run costs one fork+exec of the command (in the small C server, never in Python).  In a
    batch (``run_batch``) each run is one vfork+exec: the server opens the counters once, on
    itself, the commands inherit them and a run's counts are the difference of two reads
    (counters_open in the C file says why a non-inherited dummy event must sit beside them);
    it answers the region fifos, and perflab hears from it once per batch.  Alone (``run``) a
    run costs one exchange on a pipe, two when perflab opens perf counters: the server holds
    the command before exec and says its pid, perflab opens the counters on it, then releases
    it.  The region fifos are made once per path
    and reset between runs; a run's stdout/stderr tail is kept by the server in a batch, by
    ``_StreamTail`` threads alone.
    Timeouts are enforced by the server and kill the command's process group; so does closing
    the pipe (Ctrl-C) and perflab's death (PR_SET_PDEATHSIG).  After every run the server, the
    commands' subreaper, kills whatever a command left running in any group or session, and
    says what (``RunOutcome.killed``).
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._region: RegionChannel | None = None
        self._batch_region: RegionChannel | None = None
        self._counters: CounterSet | None = None
        self._snap: dict[str, Reading] = {}
        self._region_sum: dict[str, Reading] = {}
        self._out: _StreamTail | None = None
        self._err: _StreamTail | None = None
        self._ctl_w = -1
        self._report: Any = None

    # -- lifetime ---------------------------------------------------------------------------
    def _start(self) -> None:
        launcher = launcher_path()
        self._out, self._err = _StreamTail(), _StreamTail()
        ctl_r, ctl_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        try:
            self._proc = subprocess.Popen(
                [launcher, "--server", str(ctl_r), str(rep_w)], stdin=subprocess.DEVNULL,
                stdout=self._out.w, stderr=self._err.w, pass_fds=(ctl_r, rep_w), cwd="/")
        finally:
            os.close(ctl_r)
            os.close(rep_w)
            self._out.close_writer()
            self._err.close_writer()
        self._ctl_w = ctl_w
        self._report = _Report(rep_r)

    def _region_channel(self) -> RegionChannel:
        if self._region is None:
            self._region = RegionChannel(self._on_enable, self._on_disable)
            self._region.start()
        return self._region

    def close(self) -> None:
        """End the server (EOF on its pipe: a running command's group is killed) and remove
        the fifos; safe to call twice."""
        if self._counters is not None:
            self._counters.close()
            self._counters = None
        if self._ctl_w >= 0:
            os.close(self._ctl_w)
            self._ctl_w = -1
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._report is not None:
            self._report.close()
            self._report = None
        for t in (self._out, self._err):
            if t is not None:
                t.close()
        self._out = self._err = None
        for region in (self._region, self._batch_region):
            if region is not None:
                region.close()
        self._region = self._batch_region = None

    def __enter__(self) -> LaunchServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the timed region's snapshots (called from the region thread) ------------------------
    def _on_enable(self) -> None:
        if self._counters is not None:
            self._snap.update(self._counters.read())

    def _on_disable(self) -> None:
        if self._counters is not None:
            for k, v in self._counters.read().items():
                d = v - self._snap[k]
                self._region_sum[k] = self._region_sum[k] + d if k in self._region_sum else d

    # -- one run, perflab opening the counters ------------------------------------------------
    def _request(self, verb: bytes, fields: list[str]) -> None:
        payload = b"\0".join(os.fsencode(f) for f in fields) + b"\0"
        _write_all(self._ctl_w, verb + b" %d\n" % len(payload) + payload)

    def run(self, req: RunRequest) -> RunOutcome:
        """Run ``req.argv`` once, perflab opening ``req.backend``'s counters on the held command
        and answering the timed region itself; never raises for the command's own failures."""
        path = resolve_executable(req.argv[0], req.env)
        if self._proc is None:
            self._start()
        env = dict(req.env)
        region: RegionChannel | None = None
        if req.region:
            region = self._region_channel()
            region.reset()
            env.update(region.env())
        self._snap, self._region_sum = {}, {}
        assert self._out is not None and self._err is not None
        self._out.start()
        self._err.start()
        # Held before exec only when there are counters to open on it; otherwise the server
        # releases it at once (one exchange a run instead of two).
        hold = bool(req.counters and req.backend is not None)
        counter_error = ""
        final: dict[str, Reading] = {}
        try:
            self._request(b"run", ["1" if hold else "0", *_spec(req, path, env)])
            if hold:
                first = self._report.readline().decode(errors="replace").split()
                if len(first) != 2 or first[0] != "pid":
                    raise PerflabError(f"perflab's launcher failed to start {req.argv[0]} "
                                       f"({' '.join(first) or 'no report'})",
                                       "check --pin and the command")
                try:
                    self._counters = req.backend.open(  # type: ignore[union-attr]
                        int(first[1]), req.counters)
                except OSError as e:
                    counter_error = str(e)
                _write_all(self._ctl_w, b"g")
            done = self._report.readline().decode(errors="replace").split()
            strays = self._read_killed() if done[:1] == ["done"] else []
            if self._counters is not None:
                final = self._counters.read()
                self._counters.close()
                self._counters = None
        except BaseException:
            # Ctrl-C or anything else: closing the pipe makes the server kill the command's
            # process group and end; a server whose conversation stopped half-way is not reused.
            self.close()
            raise
        names = launch_fields()
        if len(done) != 1 + len(names) or done[0] != "done":
            self.close()
            raise PerflabError(f"perflab's launcher failed to run {req.argv[0]} "
                               f"({' '.join(done) or 'no report'})",
                               "check --pin and the command; if it persists, report a bug")
        raw = _RawRun(**dict(zip(names, map(int, done[1:]), strict=True)))
        raw.counter_error, raw.final, raw.killed = counter_error, final, strays
        (raw.stdout, raw.stdout_cut), (raw.stderr, _) = self._out.take(), self._err.take()
        if region is not None:
            raw.region_enables, raw.region_ns = region.enables, region.region_ns
            raw.region_open, raw.region_sum = region.open_region, self._region_sum
            raw.region_error = region.error
        return _outcome(req, raw)

    def _read_killed(self) -> list[Stray]:
        """The "killed LEN" line that follows a "done" line and its LEN bytes: what the run
        left running, which the server killed after it."""
        head = self._report.readline().decode(errors="replace").split()
        if len(head) != 2 or head[0] != "killed" or not head[1].isdigit():
            return []
        return _strays(self._report.read(int(head[1])))

    # -- many runs in one exchange, the server opening the counters ---------------------------
    def run_batch(self, reqs: list[RunRequest], stop_on_failure: bool = True,
                  on_chunk: Callable[[list[RunOutcome]], None] | None = None,
                  chunk_s: float = 0.0) -> list[RunOutcome]:
        """Run each request once, in order, in one exchange with the server: it counts each
        command with perf counters itself, answers its timed region and keeps its output, and
        says nothing until the last run has ended, so no Python wake-up sits between runs.
        The outcomes are those ``run`` would give (one home: ``_outcome``).  With
        ``stop_on_failure`` the runs after a failed one are not made (fewer outcomes).

        With ``on_chunk`` and ``chunk_s`` the server hands over the runs made so far about
        every ``chunk_s`` seconds and goes on without waiting: ``on_chunk`` gets each chunk's
        outcomes (in order) while the next runs are made, so a long batch costs one request,
        not one exchange per ``chunk_s`` of runs.  If ``on_chunk`` raises, the server is
        stopped (the running command's group killed) and the exception propagates.

        Every request must be ``batchable`` and ask for the same counters.  On Ctrl-C the
        command running is killed with its group and ``Interrupted`` carries the finished
        runs' outcomes (with ``on_chunk``: those not yet handed to it)."""
        if not reqs:
            return []
        names = reqs[0].counters
        if any(not batchable(r) or r.counters != names for r in reqs):
            raise ValueError("run_batch: requests with perflab-opened counters, or differing "
                             "counter lists, go through run()")
        if len({r.region for r in reqs}) > 1:
            raise ValueError("run_batch: requests in one batch share the timed-region setting")
        region = self._batch_region_channel() if reqs[0].region else None
        nspec, fields, order = _batch_specs(reqs, region)
        if self._proc is None:
            self._start()
        events = {**SOFTWARE_EVENTS, **HARDWARE_EVENTS}
        counters = ",".join("{}:{}".format(*events[n]) for n in names)
        outcomes: list[RunOutcome] = []
        handed = 0  # outcomes given to on_chunk
        chunk_ms = str(max(1, round(chunk_s * 1000))) if on_chunk is not None and chunk_s > 0 \
            else "0"
        while len(outcomes) < len(reqs):
            todo = order[len(outcomes):]
            head: list[str] | None = [
                str(nspec), *fields, counters,
                *((region.ctl_path, region.ack_path) if region is not None else ("", "")),
                "1" if stop_on_failure else "0", ",".join(map(str, todo)), chunk_ms]
            more = True
            while more:
                self._await_answer(head, names, reqs[len(outcomes):], outcomes[handed:])
                head = None  # the chunks that follow answer the same request
                raws, more = self._read_batch(names, complete=True)
                if not raws:
                    self.close()
                    raise PerflabError(f"perflab's launcher ran none of a batch of "
                                       f"{reqs[len(outcomes)].argv[0]}",
                                       "if it persists, report a bug")
                for r, raw in zip(reqs[len(outcomes):], raws, strict=False):
                    outcomes.append(_outcome(r, raw))
                if on_chunk is not None and more:
                    try:
                        on_chunk(outcomes[handed:])
                    except BaseException:
                        self._stop_batch(names)
                        raise
                    handed = len(outcomes)
            if stop_on_failure and outcomes[-1].status != "ok":
                break
        if on_chunk is not None and handed < len(outcomes):
            on_chunk(outcomes[handed:])
        return outcomes

    def _await_answer(self, head: list[str] | None, names: list[str], pending: list[RunRequest],
                      unhanded: list[RunOutcome]) -> None:
        """Send a batch request (``head``, None: one is under way) and wait for the server's
        answer.  On Ctrl-C the server is stopped and ``Interrupted`` carries ``unhanded`` and
        the outcomes of the runs of ``pending`` it finished."""
        try:
            if head is not None:
                self._request(b"batch", head)
            # Ctrl-C lands here, before a byte of the answer is read (a chunk may already be
            # in the reader's buffer: the server does not wait for perflab between chunks)
            ready = self._report.buffered()
            while not ready:
                ready = bool(select.select([self._report], [], [])[0])
        except KeyboardInterrupt:
            raws = self._stop_batch(names)
            done = [_outcome(r, raw) for r, raw in zip(pending, raws, strict=False)]
            raise Interrupted(unhanded + done) from None
        except BaseException:
            self.close()
            raise

    def _stop_batch(self, names: list[str]) -> list[_RawRun]:
        """End a batch under way: EOF on its pipe makes the server kill the running command's
        group, hand over the runs finished since its last chunk and end; those runs."""
        if self._ctl_w >= 0:
            os.close(self._ctl_w)
            self._ctl_w = -1
        raws = self._read_batch(names, complete=False)[0] if self._report is not None else []
        self.close()
        return raws

    def _batch_region_channel(self) -> RegionChannel:
        """The timed-region fifos of batches: the server answers them, no Python thread does
        (a pair apart from ``run``'s, whose thread would race the server for the lines)."""
        if self._batch_region is None:
            self._batch_region = RegionChannel(lambda: None, lambda: None)
        return self._batch_region

    def _read_batch(self, names: list[str], complete: bool) -> tuple[list[_RawRun], bool]:
        """The records of a batch's runs ("rec ...", then "end N", or "more N" for a chunk of
        a batch that goes on) and whether more follow; with ``complete`` False (after Ctrl-C)
        whatever arrived before the server ended, chunks and all."""
        raws: list[_RawRun] = []
        fields = launch_fields()
        n = len(fields)
        since = 0  # records since the last marker (a marker counts those)
        while True:
            line = self._report.readline().decode(errors="replace").split()
            if line[:1] in (["end"], ["more"]) and len(line) == 2 and int(line[1]) == since:
                if line[0] == "end" or complete:
                    return raws, line[0] == "more"
                since = 0
                continue
            try:
                if line[:1] != ["rec"]:
                    raise ValueError("not a record")
                nums = [int(x) for x in line[1:]]
                values, blobs = _tail_values(rec_tail(), names, nums[n:])
            except (ValueError, IndexError, KeyError):
                if not complete:
                    return raws, False
                self.close()
                raise PerflabError(f"perflab's launcher failed a batch "
                                   f"({' '.join(line)[:200] or 'no report'})",
                                   "check --pin and the command; if it persists, report a bug"
                                   ) from None
            values.update((name, self._report.read(size)) for name, size in blobs)
            raw = _RawRun(**dict(zip(fields, nums[:n], strict=True)))
            for attr, item, read in _REC_TAIL_READERS:
                setattr(raw, attr, read(values[item]))
            raws.append(raw)
            since += 1


class _Report:
    """The server's answers: lines and counted bytes read from its pipe through a buffer whose
    fill perflab can see (``buffered``), so it waits on the pipe only when nothing is left to
    parse.  Hand-written because io.BufferedReader cannot say whether it holds unread bytes
    without reading the pipe (peek blocks when its buffer is empty)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()

    def fileno(self) -> int:
        return self.fd

    def buffered(self) -> bool:
        return bool(self.buf)

    def _fill(self) -> bool:
        data = os.read(self.fd, 1 << 16)
        self.buf += data
        return bool(data)

    def readline(self) -> bytes:
        while b"\n" not in self.buf and self._fill():
            pass
        end = self.buf.find(b"\n") + 1 or len(self.buf)
        return self._take(end)

    def read(self, n: int) -> bytes:
        while len(self.buf) < n and self._fill():
            pass
        return self._take(min(n, len(self.buf)))

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def close(self) -> None:
        os.close(self.fd)


def _batch_specs(reqs: list[RunRequest], region: RegionChannel | None
                 ) -> tuple[int, list[str], list[int]]:
    """A batch request's specs: (how many, their fields, each run's spec index); one spec per
    distinct request, the region fifos' variables in each environment."""
    specs: dict[tuple[str, ...], int] = {}
    fields: list[str] = []
    order: list[int] = []
    index: dict[int, int] = {}  # id(request) -> its spec's index: one spec per request
    for r in reqs:
        if id(r) not in index:
            env = dict(r.env)
            if region is not None:
                env.update(region.env())
            spec = tuple(_spec(r, resolve_executable(r.argv[0], r.env), env, envc=True))
            if spec not in specs:
                specs[spec] = len(specs)
                fields.extend(spec)
            index[id(r)] = specs[spec]
        order.append(index[id(r)])
    return len(specs), fields, order


def batchable(req: RunRequest) -> bool:
    """Whether ``run_batch`` can make this run: its counters, if any, are the kernel's (the
    server opens them); injected backends (the tests' fake PMU) go through ``run``."""
    return not req.counters or type(req.backend) is KernelBackend


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a batch, with the outcomes of the runs it finished."""

    def __init__(self, outcomes: list[RunOutcome]) -> None:
        super().__init__()
        self.outcomes = outcomes


def _rec(name: str, read: Callable[[Any], Any], default: Any = None,
         factory: Callable[[], Any] | None = None) -> Any:
    """A _RawRun field a batch record's tail fills: its item ``name`` in PERFLAB_REC_TAIL
    (perflab-launch.c), made the field's value by ``read``."""
    meta = {"rec": name, "from": read}
    return field(default_factory=factory, metadata=meta) if factory else field(
        default=default, metadata=meta)


def _same(v: Any) -> Any:
    return v


@dataclass
class _RawRun:
    """One run as the server and the region channel saw it, before it becomes an outcome.
    Its first fields, up to ``started_ns``, are the launcher's (``launch_fields``, in that
    order); the fields made with _rec are filled from a batch record's tail (``rec_tail``, by
    name): tests/core/test_launch_fields.py holds each pair of lists together."""

    status: int
    wall_ns: int
    utime_us: int
    stime_us: int
    maxrss: int
    minflt: int
    majflt: int
    nvcsw: int
    nivcsw: int
    exec_errno: int
    timed_out: int
    pid: int
    run_delay_ns: int
    started_ns: int
    counter_error: str = _rec(
        "counter_errno", lambda e: str(CounterError(e, os.strerror(e))) if e else "", "")
    final: dict[str, Reading] = _rec("final", _same, factory=dict)
    region_enables: int = _rec("region_enables", int, 0)
    region_ns: int = _rec("region_ns", int, 0)
    region_open: bool = _rec("region_open", bool, False)
    region_error: str = _rec("region_bad", lambda b: f"unknown region command "
                             f"{b.decode(errors='replace')!r}" if b else "", "")
    region_sum: dict[str, Reading] = _rec("region_sum", _same, factory=dict)
    stdout: str = _rec("out", lambda b: _tail(b), "")
    # The server trims a tail to TAIL_LIMIT once it passes twice that, so a full-size tail may
    # have lost its beginning.
    stdout_cut: bool = _rec("out", lambda b: len(b) >= TAIL_BYTES, False)
    stderr: str = _rec("err", lambda b: _tail(b), "")
    killed: list[Stray] = _rec("killed", _strays, factory=list)


# The fields a batch record's tail fills (_rec): (field, the tail item it reads, its reader).
_REC_TAIL_READERS = tuple((f.name, f.metadata["rec"], f.metadata["from"])
                          for f in dataclass_fields(_RawRun) if "rec" in f.metadata)


def _spec(req: RunRequest, path: str, env: dict[str, str], envc: bool = False) -> list[str]:
    """A command's spec in the server's request (perflab-launch.c)."""
    cpus = ",".join(map(str, req.pin)) if req.pin else "-"
    timeout_ms = max(1, int(req.timeout * 1000 + 0.999)) if req.timeout else 0
    return [cpus, str(timeout_ms), req.cwd or os.getcwd(), path, str(len(req.argv)), *req.argv,
            *([str(len(env))] if envc else []), *(f"{k}={v}" for k, v in env.items())]


def _readings(names: list[str], nums: list[int]) -> dict[str, Reading]:
    return {n: Reading(*nums[3 * i:3 * i + 3]) for i, n in enumerate(names)}


def _tail(data: bytes) -> str:
    return data[-TAIL_BYTES:].decode(errors="replace")


def _outcome(req: RunRequest, raw: _RawRun) -> RunOutcome:
    """A run's metrics and status from what the server and the region channel saw: the one
    place both launch paths turn figures into an outcome, and where the metrics perflab
    derives from the others are computed (_derive), whatever the run's status."""
    outcome = _read_outcome(req, raw)
    _derive(outcome.values, outcome.region_used)
    return outcome


def _derive(v: dict[str, float], region_used: bool) -> None:
    """Metrics derived from a run's others (metrics.DERIVED_METRICS lists them)."""
    if "task_clock" not in v and "user_time" in v and "sys_time" in v:
        v["cpu_time"] = v["user_time"] + v["sys_time"]  # no perf events: rusage's CPU time
    if region_used and "task_clock" in v and v.get("ops", 0) > 0:
        # perflab's own CPU time per op (all threads, timed region only) wins over a
        # figure the workload computed itself.
        v["cpu_ns_per_op"] = v["task_clock"] * 1e9 / v["ops"]


def _read_outcome(req: RunRequest, raw: _RawRun) -> RunOutcome:
    values: dict[str, float] = {
        "wall_time": raw.wall_ns / 1e9,
        "user_time": raw.utime_us / 1e6,
        "sys_time": raw.stime_us / 1e6,
        "max_rss": float(raw.maxrss),
        "minor_faults": float(raw.minflt),
        "major_faults": float(raw.majflt),
        "voluntary_switches": float(raw.nvcsw),
        "involuntary_switches": float(raw.nivcsw),
    }
    if raw.run_delay_ns >= 0:
        values["run_delay"] = raw.run_delay_ns / 1e9
    exec_error = os.strerror(raw.exec_errno) if raw.exec_errno else ""
    running_fraction: dict[str, float] = {}
    region_used = raw.region_enables > 0
    region_error = ""
    if raw.region_open:
        region_error = ("it began a timed region (perflab_region_begin) and never ended "
                        "it; call perflab_region_end() after the timed work")
    elif raw.region_error:
        region_error = f"timed-region protocol: {raw.region_error}"
    if region_used:
        values["region_time"] = raw.region_ns / 1e9
    if raw.final:
        readings = raw.region_sum if region_used and raw.region_sum else raw.final
        for name, r in readings.items():
            v = r.scaled
            values[name] = v / 1e9 if name == "task_clock" else v  # task_clock: ns -> s
            running_fraction[name] = r.running_fraction
    stdout, stderr = raw.stdout, raw.stderr
    outcome = RunOutcome(status="ok", exit_code=None, values=values, stdout=stdout,
                         stderr=stderr, region_used=region_used,
                         counter_error=raw.counter_error,
                         running_fraction=running_fraction, killed=raw.killed,
                         started_at=raw.started_ns / 1e9)
    if exec_error:
        outcome.status, outcome.exit_code = "failed", 127
        outcome.error = f"could not start {req.argv[0]}: {exec_error}"
        return outcome
    if raw.timed_out:
        outcome.status = "timeout"
        outcome.error = (f"killed after the {fmt_plain(req.timeout)} s timeout (with its process "
                         "group)")
        return outcome
    status = raw.status
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        outcome.status, outcome.exit_code = "signal", -sig
        outcome.error = f"killed by signal {signal.Signals(sig).name}" + _last_output_line(stderr)
        return outcome
    outcome.exit_code = os.WEXITSTATUS(status)
    if outcome.exit_code != 0:
        outcome.status = "failed"
        outcome.error = f"exited with status {outcome.exit_code}" + _last_output_line(stderr)
    elif region_error:
        outcome.status = "failed"
        outcome.error = region_error
    try:
        own = _own_figures(req, raw, outcome)
    except (WorkloadJSONError, HarnessOutputError) as e:
        own = None
        if outcome.status == "ok":
            outcome.status = "failed"
            outcome.error = str(e)
    if own:
        for k, v in own.items():
            values.setdefault(k, v)  # perflab's own measurement wins a name clash
    return outcome


def _own_figures(req: RunRequest, raw: _RawRun, outcome: RunOutcome) -> dict[str, float] | None:
    """The command's own figures: a harness's per-benchmark ones (their MetricInfo kept in
    the outcome), else the workload JSON line.  A failed harness run is not read."""
    if not req.harness:
        return parse_last_json(raw.stdout, cut=raw.stdout_cut)
    if outcome.status != "ok":
        return None
    if raw.stdout_cut:
        raise HarnessOutputError("the output", f"is longer than the {TAIL_BYTES >> 20} MiB "
                                 "perflab keeps of a run's: run fewer benchmarks a run "
                                 "(-test.bench / --benchmark_filter)")
    values, outcome.infos = harness_figures(req.harness, raw.stdout)
    return values


def execute(req: RunRequest, server: LaunchServer | None = None) -> RunOutcome:
    """Run ``req.argv`` once, on ``server`` (kept by the caller for many runs) or a new one:
    as a batch of one when it can be (the server opens the counters), else alone."""
    if server is None:
        with LaunchServer() as one:
            return execute(req, one)
    if batchable(req):
        return server.run_batch([req], stop_on_failure=False)[0]
    return server.run(req)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _last_output_line(text: str) -> str:
    lines = [ln for ln in text.split("\n") if ln.strip()]  # a CR is shown, not a line break
    return f": {printable(lines[-1].strip()[:200])}" if lines else ""
