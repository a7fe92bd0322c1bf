"""Run one command once and measure it: this is where a measurement is taken.

The child is forked, put in its own process group (so a timeout kills everything it started),
pinned, and then *waits on a pipe* until the parent has opened its perf counters; only then does
it exec.  Wall time runs from that release to wait4's return; CPU times, peak RSS, faults and
context switches come from wait4's rusage, which covers the child and every descendant it
waited for.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field

from perflab.collectors.perf_events import CounterBackend, CounterSet, Reading
from perflab.collectors.region import RegionChannel
from perflab.collectors.workload_json import WorkloadJSONError, parse_last_json
from perflab.errors import PerflabError


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


def resolve_executable(argv0: str, env: dict[str, str]) -> str:
    if "/" in argv0:
        if not os.path.exists(argv0):
            raise PerflabError(f"command not found: {argv0}", "check the path")
        if not os.access(argv0, os.X_OK) or os.path.isdir(argv0):
            raise PerflabError(f"command is not executable: {argv0}",
                               f"chmod +x {argv0}, or run it through its interpreter")
        return argv0
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if not found:
        raise PerflabError(f"command not found: {argv0}",
                           "check the spelling and PATH; pass --shell to run shell syntax")
    return found


def _tail(data: bytes, limit: int = 1 << 20) -> str:
    return data[-limit:].decode(errors="replace")


def execute(req: RunRequest) -> RunOutcome:
    """Run ``req.argv`` once; never raises for the command's own failures (they are outcomes)."""
    path = resolve_executable(req.argv[0], req.env)
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    go_r, go_w = os.pipe()
    exec_err_r, exec_err_w = os.pipe2(os.O_CLOEXEC)
    region: RegionChannel | None = None
    counters: CounterSet | None = None
    counter_error = ""
    env = dict(req.env)

    region_sum: dict[str, Reading] = {}
    snap: dict[str, Reading] = {}

    def on_enable() -> None:
        if counters is not None:
            snap.update(counters.read())

    def on_disable() -> None:
        if counters is not None:
            now = counters.read()
            for k, v in now.items():
                d = v - snap[k]
                region_sum[k] = region_sum[k] + d if k in region_sum else d

    if req.region:
        region = RegionChannel(on_enable, on_disable)
        env.update(region.env())

    pid = os.fork()
    if pid == 0:  # child: as little as possible before exec
        try:
            os.close(go_w)
            os.close(exec_err_r)
            os.setpgid(0, 0)
            if req.pin:
                os.sched_setaffinity(0, req.pin)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_f.fileno(), 1)
            os.dup2(err_f.fileno(), 2)
            if req.cwd:
                os.chdir(req.cwd)
            os.read(go_r, 1)
            os.execve(path, req.argv, env)
        except BaseException as e:  # noqa: BLE001 - report anything to the parent, then die
            try:
                os.write(exec_err_w, f"{type(e).__name__}: {e}".encode())
            finally:
                os._exit(127)
    os.close(go_r)
    os.close(exec_err_w)
    timed_out = threading.Event()
    timer: threading.Timer | None = None
    try:
        if req.counters and req.backend is not None:
            try:
                counters = req.backend.open(pid, req.counters)
            except OSError as e:
                counter_error = str(e)
        if region is not None:
            region.start()
        if req.timeout:
            def kill() -> None:
                timed_out.set()
                _kill_group(pid)

            timer = threading.Timer(req.timeout, kill)
            timer.daemon = True
        t0 = time.monotonic_ns()
        os.write(go_w, b"g")
        os.close(go_w)
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(pid, 0)
        except BaseException:
            # Ctrl-C or anything else: never leave the child running.
            _kill_group(pid)
            os.waitpid(pid, 0)
            raise
        t1 = time.monotonic_ns()
    finally:
        if timer:
            timer.cancel()
    _kill_group(pid)  # anything the command left behind in its group
    exec_error = os.read(exec_err_r, 4096).decode(errors="replace")
    os.close(exec_err_r)

    values: dict[str, float] = {
        "wall_time": (t1 - t0) / 1e9,
        "user_time": ru.ru_utime,
        "sys_time": ru.ru_stime,
        "max_rss": float(ru.ru_maxrss),
        "minor_faults": float(ru.ru_minflt),
        "major_faults": float(ru.ru_majflt),
        "voluntary_switches": float(ru.ru_nvcsw),
        "involuntary_switches": float(ru.ru_nivcsw),
    }
    running_fraction: dict[str, float] = {}
    region_used = False
    if region is not None:
        region_used = region.enables > 0
        if region_used:
            values["region_time"] = region.region_ns / 1e9
        region.close()
    if counters is not None:
        final = counters.read()
        counters.close()
        readings = region_sum if region_used and region_sum else final
        for name, r in readings.items():
            v = r.scaled
            values[name] = v / 1e6 if name == "task_clock" else v  # task_clock: ns -> ms
            running_fraction[name] = r.running_fraction

    out_f.seek(0)
    err_f.seek(0)
    stdout, stderr = _tail(out_f.read()), _tail(err_f.read())
    out_f.close()
    err_f.close()

    outcome = RunOutcome(status="ok", exit_code=None, values=values, stdout=stdout,
                         stderr=stderr, region_used=region_used, counter_error=counter_error,
                         running_fraction=running_fraction)
    if exec_error:
        outcome.status, outcome.exit_code = "failed", 127
        outcome.error = f"could not start {req.argv[0]}: {exec_error}"
        return outcome
    if timed_out.is_set():
        outcome.status = "timeout"
        outcome.error = f"killed after the {req.timeout:g} s timeout (with its process group)"
        return outcome
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        outcome.status, outcome.exit_code = "signal", -sig
        outcome.error = f"killed by signal {signal.Signals(sig).name}" + _last_line(stderr)
        return outcome
    outcome.exit_code = os.WEXITSTATUS(status)
    if outcome.exit_code != 0:
        outcome.status = "failed"
        outcome.error = f"exited with status {outcome.exit_code}" + _last_line(stderr)
    try:
        own = parse_last_json(stdout)
    except WorkloadJSONError as e:
        own = None
        if outcome.status == "ok":
            outcome.status = "failed"
            outcome.error = str(e)
    if own:
        for k, v in own.items():
            values.setdefault(k, v)  # perflab's own measurement wins a name clash
    return outcome


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return f": {lines[-1].strip()[:200]}" if lines else ""


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
