"""Run one command once and measure it: this is where a measurement is taken.

A tiny C launcher (data/perflab-launch.c) forks the command into its own process group (so a
timeout kills everything it started), pins it, and holds it before exec until perflab has
opened its perf counters on it.  The launcher then releases it and times it from release to
wait4's return; CPU times, peak RSS, faults and context switches come from wait4's rusage, which
covers the command and every descendant it waited for.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import platformdirs

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


@functools.lru_cache(maxsize=1)
def launcher_path() -> str:
    """Build (once, cached by source hash) the small C launcher in perflab-launch.c."""
    src = resources.files("perflab").joinpath("data/perflab-launch.c").read_bytes()
    digest = hashlib.sha256(src).hexdigest()[:12]
    cache = Path(os.environ.get("PERFLAB_CACHE") or platformdirs.user_cache_dir("perflab"))
    exe = cache / f"perflab-launch-{digest}"
    if exe.exists():
        return str(exe)
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise PerflabError("perflab needs a C compiler once, to build its small launcher",
                           "install one (apt-get install gcc) or set CC")
    cache.mkdir(parents=True, exist_ok=True)
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
        os.replace(out, exe)  # atomic: concurrent perflabs race harmlessly
    return str(exe)


def execute(req: RunRequest) -> RunOutcome:
    """Run ``req.argv`` once; never raises for the command's own failures (they are outcomes)."""
    path = resolve_executable(req.argv[0], req.env)
    launcher = launcher_path()
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    ctl_r, ctl_w = os.pipe()
    rep_r, rep_w = os.pipe()
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
    cpus = ",".join(map(str, req.pin)) if req.pin else "-"
    proc = subprocess.Popen(
        [launcher, str(ctl_r), str(rep_w), cpus, path, *req.argv], stdin=subprocess.DEVNULL,
        stdout=out_f, stderr=err_f, env=env, cwd=req.cwd, pass_fds=(ctl_r, rep_w))
    os.close(ctl_r)
    os.close(rep_w)
    report = os.fdopen(rep_r, "r")
    timed_out = threading.Event()
    timer: threading.Timer | None = None
    child = 0
    try:
        first = report.readline().split()
        if len(first) != 2 or first[0] != "pid":
            proc.wait()
            raise PerflabError(f"perflab's launcher failed to start {req.argv[0]} "
                               f"({' '.join(first) or 'no report'})",
                               "check --pin and the command")
        child = int(first[1])
        if req.counters and req.backend is not None:
            try:
                counters = req.backend.open(child, req.counters)
            except OSError as e:
                counter_error = str(e)
        if region is not None:
            region.start()
        if req.timeout:
            def kill() -> None:
                timed_out.set()
                _kill_group(child)

            timer = threading.Timer(req.timeout, kill)
            timer.daemon = True
            timer.start()
        os.write(ctl_w, b"g")
        done = report.readline().split()
        proc.wait()
    except BaseException:
        # Ctrl-C or anything else: never leave the command running.
        if child:
            _kill_group(child)
        proc.kill()
        proc.wait()
        raise
    finally:
        if timer:
            timer.cancel()
        os.close(ctl_w)
        report.close()
    if child:
        _kill_group(child)  # anything the command left behind in its group
    if len(done) != 11 or done[0] != "done":
        raise PerflabError(f"perflab's launcher ended without a report ({' '.join(done)})",
                           "run again; if it persists, report a bug")
    status, wall_ns, utime_us, stime_us = (int(x) for x in done[1:5])
    maxrss, minflt, majflt, nvcsw, nivcsw, exec_errno = (int(x) for x in done[5:11])

    values: dict[str, float] = {
        "wall_time": wall_ns / 1e9,
        "user_time": utime_us / 1e6,
        "sys_time": stime_us / 1e6,
        "max_rss": float(maxrss),
        "minor_faults": float(minflt),
        "major_faults": float(majflt),
        "voluntary_switches": float(nvcsw),
        "involuntary_switches": float(nivcsw),
    }
    exec_error = os.strerror(exec_errno) if exec_errno else ""
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
