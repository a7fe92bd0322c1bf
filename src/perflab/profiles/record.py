"""Record a profile with `perf record`, read it back with `perf script`, and store it.

Sampling event: ``cycles`` where the machine has a hardware PMU, else ``cpu-clock`` (a software
timer that samples the task's CPU time; it works in VMs without a PMU).  The timed region: perf
record's ``-D -1 --control fifo:CTL,ACK`` starts with sampling off and lets the workload switch it
on and off through the very fifos perflab's region protocol names (PERFLAB_CTL_FIFO /
PERFLAB_ACK_FIFO), so the profile covers the hot loop only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.fingerprint import PROFILE_IDENTITY_KEYS as IDENTITY_KEYS
from perflab.format import fmt_fixed, fmt_plain, fmt_share
from perflab.model import Fingerprint
from perflab.profiles.analysis import Aggregate, aggregate, folded_text
from perflab.profiles.perfscript import parse_perf_script
from perflab.profiles.store import insert_profile, new_data_dir
from perflab.region_client import ACK_ENV, CTL_ENV
from perflab.storage import Store

CALL_GRAPHS = ("fp", "dwarf", "none")
DEFAULT_FREQUENCY = 4999  # Hz; a prime, so sampling does not beat in step with periodic work
DWARF_FREQUENCY = 999  # dwarf copies ~8 KB of stack per sample: sample less often
SCRIPT_FIELDS = "comm,pid,tid,time,period,event,ip,sym,dso"
TOP_KEEP = 500  # symbols kept in the stored summary (the folded stacks keep everything)
PARANOID_PATH = "/proc/sys/kernel/perf_event_paranoid"
# What makes each JIT runtime write /tmp/perf-PID.map, the file perf reads to name JIT-compiled
# frames (perf script looks it up by the sampled process's pid when it runs, after the command).
# perflab sets them for every profile: other programs ignore them, and a Java, Node, Mono or CoreCLR
# process anywhere under the command (a launcher script, a build tool) gets its map.
JIT_MAP_OPTIONS = {
    # JDK 17: the whole code cache at exit (DumpPerfMapAtExit is a diagnostic flag).
    "JAVA_TOOL_OPTIONS": "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit",
    # V8: one line per compiled function, as it is compiled.
    "NODE_OPTIONS": "--perf-basic-prof",
    # Mono: one line per JIT-compiled method, as it is compiled.
    "MONO_ENV_OPTIONS": "--jitmap",
}
# Runtimes switched by a value rather than an option list: set when the user has not set it (their
# value wins).  CoreCLR (3.1 reads COMPlus_; the DOTNET_ spelling is .NET 5's): one line per
# method as it is jitted, suffixed with its tier ("[QuickJitted]", "[OptimizedTier1]"), and its
# stubs.
JIT_MAP_SWITCHES = {"COMPlus_PerfMapEnabled": "1"}
_PERF_MAP = re.compile(r"(?:^|/)perf-(\d+)\.map$")


# -- probing ------------------------------------------------------------------------------------
def perf_binary() -> str:
    name = os.environ.get("PERFLAB_PERF", "perf")
    path = shutil.which(name)
    if path is None:
        raise PerflabError(
            f"perf is not installed ('{name}' not found on PATH)",
            "install it: sudo apt-get install linux-perf (Debian), "
            "linux-tools-$(uname -r) (Ubuntu), perf (Fedora)")
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                              check=False)
    except OSError as e:
        raise PerflabError(f"perf ({path}) cannot run: {e}",
                           "reinstall perf for this kernel") from e
    if proc.returncode != 0 or "perf version" not in proc.stdout:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise PerflabError(f"perf ({path}) does not work here: {said[0] if said else ''}",
                           "install the perf matching this kernel (linux-perf / linux-tools)")
    return path


def _privileged() -> bool:
    """Root, or CAP_PERFMON (38) / CAP_SYS_ADMIN (21) in the effective set."""
    if os.geteuid() == 0:
        return True
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
                return bool(caps & (1 << 38) or caps & (1 << 21))
    except (OSError, ValueError):
        pass
    return False


def user_only_modifier() -> str:
    """":u" when only user space may be sampled; raise when sampling is forbidden outright."""
    try:
        level = int(Path(PARANOID_PATH).read_text().strip())
    except (OSError, ValueError):
        return ""
    if _privileged() or level < 2:
        return ""
    if level >= 3:
        raise PerflabError(
            f"perf_event_paranoid is {level}: this kernel forbids profiling to unprivileged users",
            "run as root, or allow it: sudo sysctl kernel.perf_event_paranoid=2 (user space "
            "only) or =1 (with the kernel)")
    return ":u"  # level 2: user space only; say so in the profile's warnings


@functools.lru_cache(maxsize=1)
def default_event() -> str:
    """``cycles`` where a hardware PMU counts it, else ``cpu-clock``."""
    try:
        from perflab.fingerprint import pmu_status

        if "cycles" in pmu_status().get("hardware", []):
            return "cycles"
    except Exception:  # noqa: BLE001 - a failed probe means: use the software clock
        pass
    return "cpu-clock"


def current_fingerprint() -> Fingerprint:
    try:
        from perflab.fingerprint import machine_fingerprint

        fp = machine_fingerprint(probe_pmu=False)
    except Exception:  # noqa: BLE001 - the fingerprint is a nicety for the warning only
        import platform
        import socket

        fp = Fingerprint(hostname=socket.gethostname(), cpu_count=os.cpu_count(),
                         kernel=platform.release(), arch=platform.machine())
    return fp


# -- recording ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _fifos(where: Path) -> Iterator[tuple[str, str]]:
    ctl, ack = where / "ctl.fifo", where / "ack.fifo"
    os.mkfifo(ctl, 0o600)
    os.mkfifo(ack, 0o600)
    try:
        yield str(ctl), str(ack)
    finally:
        for p in (ctl, ack):
            with contextlib.suppress(OSError):
                p.unlink()


@dataclass
class _PerfRun:
    returncode: int
    stderr: str
    stdout: str
    seconds: float
    stopped: bool  # perflab ended it after `duration`
    enabled: bool  # perf reported "Events enabled" (the region was announced)


def jit_map_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` (the variables the command gets on top of perflab's own environment) with each
    runtime's perf-map switch appended to what the user already set (never replacing it), and
    each switch of JIT_MAP_SWITCHES set where the user has not set it."""
    out = dict(env)
    for var, opt in JIT_MAP_OPTIONS.items():
        have = out.get(var, os.environ.get(var, ""))
        if opt not in have:
            out[var] = f"{have} {opt}".strip()
    for var, value in JIT_MAP_SWITCHES.items():
        if var not in out and var not in os.environ:
            out[var] = value
    return out


def remove_v8_logs(where: Path, pids: set[int], since: float) -> list[Path]:
    """Delete the ``isolate-0x...-PID-v8.log`` files that node's ``--perf-basic-prof`` leaves in
    the working directory (V8's logger writes them whenever a perf map is on, and NODE_OPTIONS
    cannot redirect them): only those of the profiled pids, written since the profile began."""
    gone = []
    for p in where.glob("isolate-0x*-v8.log"):
        m = re.fullmatch(r"isolate-0x[0-9a-f]+-(\d+)-v8\.log", p.name)
        try:
            if m and int(m.group(1)) in pids and p.stat().st_mtime >= since:
                p.unlink()
                gone.append(p)
        except OSError:
            pass
    return gone


def perf_map_pid(module: str) -> int | None:
    """The pid of a /tmp/perf-PID.map module name, or None for any other module."""
    m = _PERF_MAP.search(module)
    return int(m.group(1)) if m else None


def jit_map_summary(agg: Aggregate) -> dict[str, Any]:
    """Which perf maps named JIT frames, and how much of the samples' leaf weight sits in JIT
    code each named or left as an address (the check that the maps worked)."""
    named: dict[str, float] = {}
    unnamed: dict[str, float] = {}
    w = agg.weight or 1.0
    for st in agg.symbols:
        if perf_map_pid(st.module) is None:
            continue
        bucket = named if st.resolved else unnamed
        bucket[st.module] = bucket.get(st.module, 0.0) + st.self_weight / w
    maps = sorted(set(named) | set(unnamed))
    return {"maps": [{"path": m, "exists": Path(m).is_file(),
                      "named_share": round(named.get(m, 0.0), 4),
                      "unnamed_share": round(unnamed.get(m, 0.0), 4)} for m in maps],
            "named_share": round(sum(named.values()), 4),
            "unnamed_share": round(sum(unnamed.values()), 4)}


def _call_graph_args(call_graph: str) -> list[str]:
    if call_graph == "fp":
        return ["--call-graph", "fp"]
    if call_graph == "dwarf":
        return ["--call-graph", "dwarf"]
    return []


@dataclass(frozen=True)
class Sampling:
    """How perf record samples a command: the event at a frequency (Hz), the call graph's
    method (fp, dwarf, lbr), only within the timed region the command announces (``region``),
    and for at most ``duration`` seconds."""
    event: str
    frequency: int
    call_graph: str
    region: bool
    duration: float | None


def _perf_record(perf: str, command: list[str], env: dict[str, str], out: Path,
                 how: Sampling) -> _PerfRun:
    region, duration = how.region, how.duration
    argv = [perf, "record", "-o", str(out), "-e", how.event, "-F", str(how.frequency),
            # No BPF side-band thread: it keeps perf record alive for its 1 s poll timeout
            # after the command ends (perf 6.1), and perflab does not profile BPF programs.
            "--no-bpf-event", *_call_graph_args(how.call_graph)]
    run_env = {**os.environ, **env}
    with contextlib.ExitStack() as stack:
        if region:
            ctl, ack = stack.enter_context(_fifos(out.parent))
            argv += ["-D", "-1", "--control", f"fifo:{ctl},{ack}"]
            run_env[CTL_ENV], run_env[ACK_ENV] = ctl, ack
        else:
            run_env.pop(CTL_ENV, None)
            run_env.pop(ACK_ENV, None)
        if duration is not None:
            # coreutils' timeout ends the command after `duration` seconds of its own life
            # (perf's start-up does not count) and exits 124, which perf record passes on.
            command = ["timeout", "--kill-after=5", fmt_plain(duration), *command]
        argv += ["--", *command]
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, env=run_env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as e:
            raise PerflabError(f"cannot start perf record: {e}", "check the perf install") from e
        try:
            stdout, stderr = proc.communicate()
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        stopped = duration is not None and proc.returncode == 124
    err = stderr.decode(errors="replace")
    return _PerfRun(returncode=proc.returncode, stderr=err,
                    stdout=stdout.decode(errors="replace"), seconds=time.monotonic() - t0,
                    stopped=stopped, enabled="Events enabled" in err)


_PERF_NOISE = re.compile(r"^(\[ perf record:|Events (enabled|disabled)|WARNING: |Warning:|"
                         r"Couldn't|\s*$|failed to mmap|perf: )")


def _perf_error(run: _PerfRun, event: str, command: list[str]) -> PerflabError | None:
    err = run.stderr
    if "perf_event_paranoid" in err or "Permission denied" in err and "perf_event" in err:
        m = re.search(r"perf_event_paranoid setting is (-?\d+)", err)
        level = m.group(1) if m else "too high"
        return PerflabError(
            f"perf record was refused: perf_event_paranoid is {level}",
            "run as root, or: sudo sysctl kernel.perf_event_paranoid=2 (user space only)")
    wrote = "[ perf record: Captured and wrote" in err
    if not wrote:
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        if any("not supported" in ln or "event syntax error" in ln for ln in lines):
            return PerflabError(f"perf cannot sample the event '{event}' on this machine",
                                "use --event cpu-clock (software sampling works everywhere)")
        if any("unknown option" in ln and ("control" in ln or "delay" in ln) for ln in lines):
            return PerflabError("this perf is too old to limit sampling to the timed region "
                                "(--control needs perf 5.10 or later)",
                                "upgrade perf, or pass --no-region")
        if any("failed: No such file or directory" in ln or "execvp" in ln for ln in lines):
            return PerflabError(f"cannot run the command '{command[0]}': not found",
                                "check the command's path")
        said = next((ln for ln in lines if ln.lower().startswith("error")), lines[-1:] or [""])
        said_s = said if isinstance(said, str) else (said[0] if said else "")
        return PerflabError(f"perf record failed (status {run.returncode}): {said_s}",
                            "run the same 'perf record' by hand to see its full message")
    if run.returncode != 0 and not run.stopped:
        own = [ln for ln in err.splitlines() if not _PERF_NOISE.match(ln)]
        tail = own[-1].strip() if own else ""
        return PerflabError(
            f"the profiled command exited with status {run.returncode}"
            + (f": {tail}" if tail else ""),
            "run the command alone to see why it fails; perflab keeps no profile of a failure")
    return None


def _perf_script(perf: str, data: Path) -> str:
    proc = subprocess.run([perf, "script", "-i", str(data), "-F", SCRIPT_FIELDS],
                          capture_output=True, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        raise PerflabError(f"perf script could not read {data}: {said[-1] if said else ''}",
                           "check the perf install (perf script must match perf record)")
    return proc.stdout


def symbol_warnings(agg: Aggregate, threshold: float = 0.2) -> list[str]:
    """One line per module where perf found no symbols for a large part of the samples."""
    out = []
    for module, share in agg.unresolved_by_module.items():
        if share < threshold:
            continue
        if perf_map_pid(module) is not None:
            # JIT-compiled code: -g cannot help; only the runtime's own map names it.
            if Path(module).is_file():
                out.append(f"{fmt_share(share, 0)} of the samples are in JIT code that {module} "
                           "does not name (runtime stubs, or code compiled or moved after the map "
                           "was written): shown as addresses")
            else:
                out.append(f"{fmt_share(share, 0)} of the samples are in JIT code of a runtime "
                           f"that wrote no {module}: shown as addresses -- perflab asks Java, "
                           "Node, Mono and CoreCLR for their maps; another runtime needs its own "
                           "perf-map switch")
        elif module == "[unknown]":
            out.append(f"{fmt_share(share, 0)} of the samples are in code perf could not map "
                       "to any file (JIT-generated code without a perf map?): shown as addresses "
                       "-- perflab asks Java, Node, Mono and CoreCLR to write /tmp/perf-PID.map; "
                       "another runtime needs its own perf-map switch")
        else:
            out.append(f"{fmt_share(share, 0)} of the samples are in {module}, which has no "
                       "symbols (stripped?): shown as addresses -- rebuild it with -g and without "
                       "strip, or install its debug symbols (-dbgsym package)")
    return out


def _workload_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                val = json.loads(line)
            except ValueError:
                return None
            return val if isinstance(val, dict) else None
    return None


def store_profile(store: Store, agg: Aggregate, data_dir: Path, *, name: str,
                  command: list[str], sampler: str, call_graph: str,
                  result_id: int | None = None, configuration_id: int | None = None,
                  warnings: list[str] | None = None, extra: dict[str, Any] | None = None,
                  flame_graph: bool = True, machine: dict[str, Any] | None = None) -> int:
    """Write the folded stacks (and the flame graph) into ``data_dir`` and insert the row."""
    warnings = list(warnings or [])
    if agg.samples < 50:
        warnings.append(f"only {agg.samples} samples: shares are rough (+-"
                        f"{fmt_fixed(100 / max(agg.samples, 1) ** 0.5)} points); run longer")
    warnings += symbol_warnings(agg)
    folded = folded_text(agg.folded)
    (data_dir / "stacks.folded").write_text(folded)
    if flame_graph:
        try:
            from perflab.profiles.flamegraph import flame_graph as draw

            draw(folded, data_dir / "flame.svg", title=(name or " ".join(command))[:120],
                 subtitle=f"{sampler}, {agg.samples} samples, call graph {call_graph}",
                 countname="ns" if sampler.startswith("cpu-clock") else "events")
        except PerflabError as e:
            warnings.append(f"no flame graph: {e.line()}")
    fp = Fingerprint.from_json(machine) if machine else current_fingerprint()
    summary = {
        "samples": agg.samples, "weight": agg.weight, "events": dict(agg.events),
        **(extra or {}),
        "symbols": [s.to_dict() for s in agg.symbols[:TOP_KEEP]],
        "symbols_total": len(agg.symbols), "warnings": warnings,
        "machine": {k: fp.identity()[k] for k in IDENTITY_KEYS},
    }
    return insert_profile(store, dict(
        result_id=result_id, configuration_id=configuration_id, created_at=time.time(),
        name=name, command=list(command), sampler=sampler, call_graph=call_graph,
        data_path=str(data_dir), summary=summary), fp)


def import_perf_script(path: Path, *, store: Store | None = None, name: str = "",
                       call_graph: str = "fp", machine: dict[str, Any] | None = None,
                       flame_graph: bool = True) -> int:
    """Store a profile from `perf script` text (recorded elsewhere, or a test fixture)."""
    store = store or Store()
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    agg = aggregate(parse_perf_script(text.splitlines()))
    if agg.samples == 0:
        raise PerflabError(f"{path} holds no perf script samples",
                           "produce it with: perf script -F " + SCRIPT_FIELDS)
    data_dir = new_data_dir(store)
    try:
        sampler = agg.events.most_common(1)[0][0]
        shutil.copyfile(path, data_dir / "perf.script")
        return store_profile(store, agg, data_dir, name=name or Path(path).name,
                             command=[], sampler=sampler, call_graph=call_graph,
                             extra={"imported_from": str(path)}, flame_graph=flame_graph,
                             machine=machine)
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise


def _check_request(command: list[str], call_graph: str, duration: float | None) -> None:
    """Refuse a profile that cannot be recorded: no command, an unknown call graph mode, a
    duration not positive or without coreutils' timeout to enforce it."""
    if not command:
        raise PerflabError("no command to profile", "give a command, or --workload NAME")
    if call_graph not in CALL_GRAPHS:
        raise PerflabError(f"unknown call graph mode '{call_graph}'",
                           "use --call-graph fp, dwarf or none")
    if duration is not None and duration <= 0:
        raise PerflabError(f"duration must be positive, not {duration}", "pass seconds > 0")
    if duration is not None and shutil.which("timeout") is None:
        raise PerflabError("--duration needs coreutils' timeout, which is not on PATH",
                           "install coreutils, or limit the work with the command's own flags")


def record_profile(command: list[str], *, env: dict[str, str] | None = None, name: str = "",
                   store: Store | None = None, result_id: int | None = None,
                   configuration_id: int | None = None, call_graph: str = "fp",
                   region: bool = True, duration: float | None = None,
                   event: str | None = None, frequency: int | None = None,
                   flame_graph: bool = True) -> int:
    """Profile ``command`` with perf record and store it; return the profile id.

    ``region``: sample only the timed region when the command announces one (falls back to the
    whole process, with a warning, when it does not).  ``duration``: stop after that many
    seconds (the command is terminated).  ``event``: the perf event (default: cycles with a PMU,
    cpu-clock without).  ``frequency``: samples per second.
    """
    _check_request(command, call_graph, duration)
    env = jit_map_env(dict(env or {}))
    exe = command[0]
    if shutil.which(exe, path=env.get("PATH", os.environ.get("PATH"))) is None:
        raise PerflabError(f"cannot run the command '{exe}': not found or not executable",
                           "check the command's path (and that it was built)")
    perf = perf_binary()
    modifier = user_only_modifier()
    ev = event or default_event()
    if modifier and ":" not in ev:
        ev += modifier
    freq = frequency or (DWARF_FREQUENCY if call_graph == "dwarf" else DEFAULT_FREQUENCY)
    how = Sampling(ev, freq, call_graph, region, duration)
    store = store or Store()
    data_dir = new_data_dir(store)
    warnings: list[str] = []
    if modifier:
        warnings.append("perf_event_paranoid is 2: user space only (kernel time not sampled)")
    started = time.time()
    try:
        data = data_dir / "perf.data"
        run = _perf_record(perf, command, env, data, how)
        if region and not run.enabled and _perf_error(run, ev, command) is None:
            # The command never announced a timed region, so perf never sampled: profile the
            # whole process instead (one more run, only for commands without the protocol).
            warnings.append("the command did not announce a timed region: profiled the whole "
                            "process (start-up included)")
            data.unlink(missing_ok=True)  # else perf keeps the empty one as perf.data.old
            run = _perf_record(perf, command, env, data, replace(how, region=False))
            region = False
        err = _perf_error(run, ev, command)
        if err is not None:
            raise err
        samples = list(parse_perf_script(_perf_script(perf, data).splitlines()))
        remove_v8_logs(Path.cwd(), {s.pid for s in samples}, started - 1.0)
        agg = aggregate(samples)
        if agg.samples == 0:
            raise PerflabError(
                f"the profile is empty: no samples in {fmt_fixed(run.seconds, 2)} s"
                + (" (timed region only)" if region else ""),
                "the command ran too briefly: give it more work (more iterations) or raise "
                "--frequency")
        sampled = agg.events.most_common(1)[0][0]
        if sampled.split(":")[0] != ev.split(":")[0]:
            # perf record quietly swaps cycles for cpu-clock where no PMU counts cycles.
            warnings.append(f"perf sampled {sampled}, not {ev}: this machine cannot sample "
                            f"{ev} (no hardware PMU?)")
            ev = sampled
        (data_dir / "command.out").write_text(run.stdout)
        extra = {"frequency": freq, "region": region, "seconds": round(run.seconds, 3),
                 "stopped_after": duration if run.stopped else None,
                 "workload": _workload_json(run.stdout), "jit": jit_map_summary(agg)}
        return store_profile(store, agg, data_dir, name=name or os.path.basename(command[0]),
                             command=command, sampler=ev, call_graph=call_graph,
                             result_id=result_id, configuration_id=configuration_id,
                             warnings=warnings, extra=extra, flame_graph=flame_graph)
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
