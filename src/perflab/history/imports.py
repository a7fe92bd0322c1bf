"""Import other tools' results as stored result sets (kind "import").

Formats (read from the files these tools write, not from their docs alone):
- hyperfine ``--export-json``: {"results": [{"command", "times": [s...], "exit_codes", ...}]};
  every element of ``times`` is one run's wall time in seconds -> metric wall_time.
- pyperf JSON (``-o``): {"version", "metadata", "benchmarks": [{"metadata", "runs": [{"values",
  "warmups": [[loops, value]]}]}]}; a value is the time of ONE loop iteration in the unit
  of ``metadata.unit`` -> ns_per_op (seconds x 1e9), as perflab's workloads report.  A
  ``pyperf command`` benchmark (its metadata has "command") times whole runs of a command: a
  value is one run's wall time -> wall_time in seconds, as hyperfine's imports are.
- ``perf stat -j``: one JSON object per event and line (counter-value, unit, event,
  pcnt-running...); a repeated event starts a new run, so several perf stat outputs appended
  to one file become several runs.  Event names map to perflab's metric names.
- perflab's own ``--export-json`` (schema perflab-result/1): its samples become runs again.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_fixed, fmt_plain, fmt_sig
from perflab.model import (
    BUILTIN_METRICS,
    HARDWARE_COUNTERS,
    PERF_HW,
    PERF_SW,
    Configuration,
    Fingerprint,
    MetricInfo,
    ResultSet,
    Run,
    Settings,
    former_unit_divisor,
    in_today_unit,
    metric_direction,
)

FORMATS = ("hyperfine", "pyperf", "perf-stat", "perflab")

# perf event -> (perflab metric, factor to perflab's unit)
PERF_EVENTS: dict[str, tuple[str, float]] = {
    "task-clock": ("task_clock", 1e-3),  # perf reports msec; perflab's task_clock is s
    "cpu-clock": ("cpu_clock", 1.0),
    "page-faults": ("page_faults", 1.0),
    "faults": ("page_faults", 1.0),
    "minor-faults": ("minor_faults", 1.0),
    "major-faults": ("major_faults", 1.0),
    "context-switches": ("context_switches", 1.0),
    "cs": ("context_switches", 1.0),
    "cpu-migrations": ("cpu_migrations", 1.0),
    "migrations": ("cpu_migrations", 1.0),
    "cycles": ("cycles", 1.0),
    "cpu-cycles": ("cycles", 1.0),
    "instructions": ("instructions", 1.0),
    "branches": ("branches", 1.0),
    "branch-instructions": ("branches", 1.0),
    "branch-misses": ("branch_misses", 1.0),
    "cache-references": ("cache_references", 1.0),
    "cache-misses": ("cache_misses", 1.0),
    "duration_time": ("wall_time", 1e-9),  # ns -> s
    "user_time": ("user_time", 1e-9),
    "system_time": ("sys_time", 1e-9),
}


def _bad(path: Path, fmt: str, why: str) -> PerflabError:
    return PerflabError(f"{path} is not a {fmt} result file ({why})",
                        f"give the file {fmt} wrote, or the right --format ({', '.join(FORMATS)})")


def _read_json(path: Path, fmt: str) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    except UnicodeDecodeError as e:
        raise _bad(path, fmt, "binary data") from e
    try:
        return _loads(text, path, fmt)
    except json.JSONDecodeError as e:
        raise _bad(path, fmt, f"invalid JSON at line {e.lineno}") from e


def _loads(text: str, path: Path, fmt: str) -> Any:
    """``json.loads``; JSON nested deeper than Python's recursion limit is one line, in every
    format (a JSONDecodeError is the caller's to judge)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise _bad(path, fmt, "JSON nested too deeply") from None


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _not_a_number(v: Any) -> str:
    """What a value that should be a finite number is, in words: NaN, Infinity, a string..."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    kind = {str: "a string", bool: "a boolean", type(None): "null", list: "a list",
            dict: "an object"}.get(type(v), type(v).__name__)
    return f"{kind} ({json.dumps(v)[:40]})" if v is not None else kind


def _negative(values: list[Any]) -> Any:
    """The first negative number among ``values`` (None if none): every value an import stores
    is a time or a count, and a negative one would give nonsense ratios ("-200% faster"), as
    workload_json refuses for measured workloads."""
    return next((v for v in values if _num(v) and v < 0), None)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def import_hyperfine(path: Path, benchmark: str | None = None) -> ResultSet:
    data = _read_json(path, "hyperfine")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list) \
            or not data["results"]:
        raise _bad(path, "hyperfine", "no 'results' list")
    rs = ResultSet(kind="import", created_at=_mtime(path), label=f"hyperfine {path.name}",
                   settings=Settings(file=str(path), import_format="hyperfine"))
    rs.metrics["wall_time"] = BUILTIN_METRICS["wall_time"]
    seq = 0
    for i, res in enumerate(data["results"]):
        times = res.get("times") if isinstance(res, dict) else None
        if not isinstance(times, list) or not times:
            raise _bad(path, "hyperfine", f"result {i + 1} has no per-run 'times' "
                       "(hyperfine older than 1.8, or not --export-json)")
        bad = next(((n, t) for n, t in enumerate(times, 1) if not _num(t)), None)
        if bad is not None:
            raise _bad(path, "hyperfine", f"result {i + 1}'s time {bad[0]} is "
                       f"{_not_a_number(bad[1])}, not a number of seconds")
        if (neg := _negative(times)) is not None:
            raise _bad(path, "hyperfine",
                       f"result {i + 1} has a negative time ({fmt_plain(neg)} s)")
        named = res.get("command")
        command = (str(named) if isinstance(named, str | int | float) and str(named).strip()
                   else f"command {i + 1}")
        codes = res.get("exit_codes")
        if not isinstance(codes, list):
            codes = []
        # An exit code that is not an integer (null, "a") is an unknown one, not a failure.
        codes = [c if isinstance(c, int) and not isinstance(c, bool) else None for c in codes]
        if codes and len(codes) != len(times):
            # hyperfine writes one exit code per time; a file cut or edited by hand may not.
            rs.notes.append(
                f"'{command}' has {len(times)} times but {len(codes)} exit codes: "
                + (f"the last {len(times) - len(codes)} runs are kept with an unknown exit code"
                   if len(codes) < len(times) else
                   f"the {len(codes) - len(times)} exit codes without a time are ignored"))
        codes = codes + [None] * (len(times) - len(codes))
        params = res.get("parameters") or {}
        cfg = Configuration(name=command, command=[command], shell=True,
                            benchmark=benchmark or command,
                            params=dict(params) if isinstance(params, dict) else {},
                            is_baseline=(i == 0))
        for t, code in zip(times, codes, strict=False):
            ok = code in (0, None)
            cfg.runs.append(Run(seq=seq, values={"wall_time": float(t)},
                                status="ok" if ok else "failed", exit_code=code))
            seq += 1
        rs.configurations.append(cfg)
        if _num(res.get("user")) and _num(res.get("system")):
            rs.notes.append(f"hyperfine mean CPU time of '{command}': user "
                            f"{fmt_sig(res['user'], 6)} s, system {fmt_sig(res['system'], 6)} s "
                            "(per-run values not exported)")
    rs.notes.append("imported from hyperfine: per-run wall time only; no machine fingerprint")
    return rs


def _pyperf_fingerprint(meta: dict[str, Any]) -> dict[str, Any]:
    fp: dict[str, Any] = {}
    if meta.get("hostname"):
        fp["hostname"] = meta["hostname"]
    if meta.get("cpu_model_name"):
        fp["cpu_model"] = meta["cpu_model_name"]
    if _num(meta.get("cpu_count")):
        fp["cpu_count"] = int(meta["cpu_count"])
    m = re.match(r"Linux-([^-]+(?:-[^-]+)*?)-(x86_64|aarch64|arm64|i686)",
                 str(meta.get("platform", "")))
    if m:
        fp["kernel"], fp["arch"] = m.group(1), m.group(2)
    return fp


PYPERF_MEANING = {"ns_per_op": "per loop iteration",
                  "wall_time": "one whole run of a pyperf command benchmark"}


def import_pyperf(path: Path, benchmark: str | None = None) -> ResultSet:
    data = _read_json(path, "pyperf")
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) \
            or not data["benchmarks"]:
        raise _bad(path, "pyperf", "no 'benchmarks' list")
    meta = data.get("metadata") or {}
    rs = ResultSet(kind="import", created_at=_mtime(path), label=f"pyperf {path.name}",
                   fingerprint=Fingerprint.from_json(_pyperf_fingerprint(meta)),
                   settings=Settings(file=str(path), import_format="pyperf",
                                     extra={"pyperf_version": data.get("version")}))
    seq = 0
    first_date: float | None = None
    for i, bench in enumerate(data["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
            raise _bad(path, "pyperf", f"benchmark {i + 1} has no 'runs'")
        bmeta = {**meta, **(bench.get("metadata") or {})}
        name = str(bmeta.get("name") or f"benchmark {i + 1}")
        unit = bmeta.get("unit", "second")
        command = bmeta.get("command")
        argv = [name]
        if unit == "second" and isinstance(command, str):
            # pyperf command: a loop iteration is one whole run of the command.
            metric, factor = "wall_time", 1.0
            rs.metrics[metric] = BUILTIN_METRICS["wall_time"]
            argv = shlex.split(command)
        elif unit == "second":
            metric, factor = "ns_per_op", 1e9
            rs.metrics[metric] = MetricInfo(metric, "ns", "pyperf",
                                            description="time of one loop iteration")
        else:
            metric, factor = f"pyperf_{unit}", 1.0
            rs.metrics[metric] = MetricInfo(metric, str(unit), "pyperf")
        cfg = Configuration(name=name, command=argv, benchmark=benchmark or name,
                            is_baseline=(i == 0))
        for run in bench["runs"]:
            rmeta = run.get("metadata") or {}
            started = _date(rmeta.get("date"))
            if started and first_date is None:
                first_date = started
            for w in run.get("warmups") or []:
                if isinstance(w, list) and len(w) == 2 and _num(w[1]):
                    cfg.runs.append(Run(seq=seq, values={metric: w[1] * factor}, warmup=True,
                                        started_at=started or 0.0))
                    seq += 1
            for v in run.get("values") or []:
                if not _num(v) or v < 0:
                    raise _bad(path, "pyperf", f"{'negative' if _num(v) else 'non-numeric'} "
                               f"value {v!r} in '{name}'")
                cfg.runs.append(Run(seq=seq, values={metric: v * factor},
                                    started_at=started or 0.0,
                                    load1=rmeta.get("load_avg_1min")))
                seq += 1
        if not cfg.measured_runs():
            raise _bad(path, "pyperf", f"benchmark '{name}' has no measured values")
        rs.configurations.append(cfg)
    if first_date:
        rs.created_at = first_date
    rs.notes.append("imported from pyperf: "
                    + ", ".join(sorted(f"{m} ({PYPERF_MEANING.get(m, 'as pyperf wrote them')})"
                                       for m in rs.metrics)))
    return rs


def _date(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def import_perf_stat(path: Path, benchmark: str | None = None) -> ResultSet:
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror}", "check the path") from e
    except UnicodeDecodeError as e:
        raise _bad(path, "perf stat -j", "binary data") from e
    name = benchmark or path.stem
    rs = ResultSet(kind="import", created_at=_mtime(path), label=f"perf stat {path.name}",
                   settings=Settings(file=str(path), import_format="perf-stat"))
    cfg = Configuration(name=name, command=[name], benchmark=name, is_baseline=True)
    current: dict[str, float] = {}
    unsupported: set[str] = set()
    multiplexed: dict[str, float] = {}
    repeated = False
    events_seen = 0

    def flush() -> None:
        if current:
            cfg.runs.append(Run(seq=len(cfg.runs), values=dict(current)))
            current.clear()

    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue  # the measured program's own stderr is interleaved with perf's
        try:
            obj = _loads(line, path, "perf stat -j")
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or "event" not in obj or "counter-value" not in obj:
            continue
        events_seen += 1
        event = str(obj["event"])
        base = event.split(":")[0]  # instructions:u -> instructions
        pmu = re.fullmatch(r"[\w-]+/([\w-]+)/\w*", base)  # cpu_core/instructions/ -> instructions
        if pmu:
            base = pmu.group(1)
        metric, factor = PERF_EVENTS.get(base, (re.sub(r"[^a-z0-9]+", "_", base.lower())
                                                .strip("_"), 1.0))
        raw = obj["counter-value"]
        try:
            value = float(raw)
        except (TypeError, ValueError):
            unsupported.add(event)  # "<not supported>" / "<not counted>"
            continue
        if not math.isfinite(value) or value < 0:
            raise _bad(path, "perf stat -j", f"event {event} has the counter value {raw!r} "
                       "(counters are finite and >= 0)")
        if metric in current:
            flush()  # the same event again: the next perf stat run starts here
        current[metric] = value * factor
        if "variance" in obj:
            repeated = True
        pr = obj.get("pcnt-running")
        if _num(pr) and pr < 100:
            multiplexed[metric] = min(pr, multiplexed.get(metric, 100.0))
        if metric not in rs.metrics:
            if metric in BUILTIN_METRICS:
                rs.metrics[metric] = BUILTIN_METRICS[metric]
            else:
                src = PERF_HW if metric in HARDWARE_COUNTERS else PERF_SW
                rs.metrics[metric] = MetricInfo(metric, str(obj.get("unit") or "count"), src)
    flush()
    if events_seen == 0:
        raise _bad(path, "perf stat -j", "no JSON event lines")
    if not cfg.runs:
        raise _bad(path, "perf stat -j", "every event was <not supported> or <not counted>")
    rs.configurations.append(cfg)
    if unsupported:
        rs.notes.append(f"perf stat could not count: {', '.join(sorted(unsupported))} "
                        "(no hardware PMU on the measured machine?)")
    if multiplexed:
        rs.notes.append("multiplexed counters (perf scaled them; % of time counted): " + ", ".join(
            f"{m} {fmt_fixed(p)}%" for m, p in sorted(multiplexed.items())))
    if repeated:
        rs.notes.append("perf stat -r: each imported run is the MEAN of perf's repeats")
    if "wall_time" not in rs.metrics:
        rs.notes.append("no duration_time event: no wall_time (add -e duration_time)")
    return rs


def import_perflab(path: Path, benchmark: str | None = None) -> ResultSet:
    """perflab's own ``--export-json`` (schema perflab-result/1, docs/export-schema.md): the
    samples of each configuration and metric become runs again, run i holding every metric's
    i-th sample (the export keeps samples in run order).  The source stays perflab."""
    data = _read_json(path, "perflab")
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith(
            "perflab-result/") or not isinstance(data.get("configurations"), list):
        raise _bad(path, "perflab", "no 'schema': 'perflab-result/1' with 'configurations'")
    # The exported settings come back (primary metric, threshold, correction, looks,
    # interleaving, estimator), so the imported result is judged as it was when it was made.
    stored = data.get("settings")
    settings = Settings.from_dict(stored if isinstance(stored, dict) else None)
    settings.import_format = "perflab"
    settings.owner = None
    settings.file = str(path)
    settings.extra["original"] = {"id": data.get("id"), "kind": data.get("kind")}
    rs = ResultSet(kind="import", created_at=float(data.get("created_at") or _mtime(path)),
                   label=str(data.get("label") or f"perflab {path.name}"),
                   fingerprint=Fingerprint.from_json(data.get("environment")), settings=settings,
                   notes=[str(n) for n in data.get("notes") or []])
    seq = 0
    for i, c in enumerate(data["configurations"]):
        if not isinstance(c, dict) or not isinstance(c.get("metrics"), dict):
            raise _bad(path, "perflab", f"configuration {i + 1} has no 'metrics'")
        name = str(c.get("name") or f"configuration {i + 1}")
        cfg = Configuration(name=name, command=[str(a) for a in c.get("command") or [name]],
                            benchmark=benchmark or str(c.get("benchmark") or name),
                            params=dict(c.get("params") or {}), cell=str(c.get("cell") or ""),
                            is_baseline=bool(c.get("is_baseline")), commit=c.get("commit"))
        columns: dict[str, list[Any]] = {}
        for m, v in c["metrics"].items():
            samples = v.get("samples") if isinstance(v, dict) else None
            if not isinstance(samples, list):
                raise _bad(path, "perflab", f"'{name}' metric '{m}' has no 'samples'")
            unit = str(v.get("unit", ""))
            # An export of an older perflab (task_clock in ms): stored in today's unit, so its
            # history compares like with like (the store's migration does the same).
            divisor = former_unit_divisor(m, unit)
            if divisor is not None:
                unit = BUILTIN_METRICS[m].unit
                samples = [in_today_unit(x, divisor) if _num(x) else x for x in samples]
            columns[m] = samples
            if m not in rs.metrics:
                rs.metrics[m] = MetricInfo(m, unit, str(v.get("source", "")),
                                           deterministic=bool(v.get("deterministic")),
                                           direction=metric_direction(m))
        for k in range(max((len(xs) for xs in columns.values()), default=0)):
            values = {m: float(xs[k]) for m, xs in columns.items()
                      if k < len(xs) and _num(xs[k]) and math.isfinite(xs[k])}
            cfg.runs.append(Run(seq=seq, values=values))
            seq += 1
        if not cfg.measured_runs():
            raise _bad(path, "perflab", f"configuration '{name}' has no samples")
        if c.get("failed_runs"):
            # The export keeps the samples of successful runs only: which round a failed run
            # left out is not known, so its samples cannot be paired by round again.
            settings.interleaved = False
        rs.configurations.append(cfg)
    if not rs.configurations:
        raise _bad(path, "perflab", "no configurations")
    return rs


IMPORTERS = {"hyperfine": import_hyperfine, "pyperf": import_pyperf,
             "perf-stat": import_perf_stat, "perflab": import_perflab}


def max_import_bytes() -> int:
    env = os.environ.get("PERFLAB_IMPORT_MAX_MB", "")
    try:
        return int(float(env) * 2**20) if env else 1024 * 2**20
    except ValueError:
        raise PerflabError(f"PERFLAB_IMPORT_MAX_MB={env!r} is not a number of MiB",
                           "set it to e.g. 2048, or unset it") from None


def detect_format(path: Path) -> str:
    """The format of a file to import, told from its first 64 KiB (each tool's files start
    with their own keys: hyperfine's "results" of "command"s, pyperf's "benchmarks", perf
    stat -j's "counter-value"/"event" per line).  Raises PerflabError when none fits."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536).decode("utf-8", "replace")
    except OSError as e:
        raise PerflabError(f"cannot read {path}: {e.strerror or e}", "check the path") from None
    text = head.lstrip()
    if '"schema": "perflab-result/' in head:
        return "perflab"
    if '"counter-value"' in head and '"event"' in head:
        return "perf-stat"  # its JSON lines may follow other lines (perf stat -o FILE)
    if text.startswith("{"):
        if '"benchmarks"' in head and ('"runs"' in head or '"version"' in head):
            return "pyperf"
        if '"results"' in head and '"command"' in head:
            return "hyperfine"
    raise PerflabError(f"cannot tell which tool wrote {path} (not hyperfine --export-json, "
                       "pyperf JSON, perf stat -j output or perflab --export-json)",
                       f"pass --format ({', '.join(FORMATS)})")


def import_file(path: Path, fmt: str | None, benchmark: str | None = None) -> ResultSet:
    if fmt is None and path.is_file() and os.path.getsize(path) > 0:
        fmt = detect_format(path)
    fmt = fmt or "hyperfine"  # an empty or missing file: the checks below say so
    if fmt not in IMPORTERS:
        raise PerflabError(f"unknown import format '{fmt}'", f"use one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise PerflabError(f"{path} does not exist or is not a file", "check the path")
    size = os.path.getsize(path)
    if size == 0:
        raise _bad(path, fmt, "empty file")
    limit = max_import_bytes()
    if size > limit:
        # Parsed whole in memory (about 10x the file's size): refuse before the machine swaps.
        raise PerflabError(f"{path} is {fmt_fixed(size / 2**20)} MiB; perflab imports files up to "
                           f"{fmt_fixed(limit / 2**20)} MiB (PERFLAB_IMPORT_MAX_MB)",
                           "split the file, or raise PERFLAB_IMPORT_MAX_MB if memory allows")
    return IMPORTERS[fmt](path, benchmark)
