"""``go test -bench`` text, the format benchstat reads (golang.org/design/14313-benchmark-format,
golang.org/x/perf/benchfmt), read line by line:

- a line starting with "Benchmark" is a result: ``BenchmarkName-8  N  v1 unit1  v2 unit2 ...``
  (the name, the iteration count, then value/unit pairs); ``-count N`` repeats the line, each
  line one sample;
- a configuration line ``key: value`` (the key starts with a lower-case letter and holds no
  space or upper-case letter) applies to the results after it; an empty value removes the key;
  goos, goarch, cpu go into the fingerprint, every other key (pkg among them) tells results
  apart;
- every other line (PASS, ok, a test's own output) is ignored, as benchstat ignores it.

ns/op -> ns_per_op (ns), B/op -> bytes_per_op, allocs/op -> allocs_per_op; any other unit
(MB/s from b.SetBytes, b.ReportMetric's own) is a metric of its own name (MB/s -> mb_per_s):
higher is better when the unit is a rate ("/s"), else lower."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

from perflab.imports.common import bad, mtime, text_lines
from perflab.model import Configuration, Fingerprint, MetricInfo, ResultSet, Run, Settings

FORMAT = "gobench"
SOURCE = "go test -bench"

# unit -> (metric, factor to its unit, unit, description)
UNITS: dict[str, tuple[str, float, str, str]] = {
    "ns/op": ("ns_per_op", 1.0, "ns", "time per operation (b.N loop iteration)"),
    "sec/op": ("ns_per_op", 1e9, "ns", "time per operation (b.N loop iteration)"),
    "B/op": ("bytes_per_op", 1.0, "B", "bytes allocated per operation (-benchmem)"),
    "allocs/op": ("allocs_per_op", 1.0, "count", "heap allocations per operation (-benchmem)"),
}
FINGERPRINT_KEYS = {"goos": "os", "goarch": "arch", "cpu": "cpu_model"}
CONFIG_LINE = re.compile(r"([a-z][^\sA-Z:]*):(?:[ \t]+(.*)|$)")
RESULT_LINE = re.compile(r"Benchmark(\S*)\s+(\S+)\s+(.*)")


def sniff(head: str) -> bool:
    lines = head.splitlines()
    return any(RESULT_LINE.match(line) for line in lines) and (
        any(line.startswith(("goos:", "goarch:", "pkg:")) for line in lines)
        or any(re.match(r"Benchmark\S*\s+\d+\s+\S+ ns/op", line) for line in lines))


# A time of its own per op (b.ReportMetric(v, "cpu-ns/op")): a time in ns, as benchstat reads
# it (cpu-sec/op).
PREFIXED_TIME = re.compile(r"([A-Za-z0-9_.]+)-(ns|sec)/op")


def unit_entry(unit: str) -> tuple[str, float, str, str] | None:
    """(metric, factor, unit, description) of a unit perflab knows: ns/op, sec/op, B/op,
    allocs/op, and a prefixed time (cpu-ns/op -> cpu_ns_per_op in ns)."""
    if unit in UNITS:
        return UNITS[unit]
    m = PREFIXED_TIME.fullmatch(unit)
    if m is None:
        return None
    prefix = re.sub(r"[^a-z0-9]+", "_", m.group(1).lower())
    return (f"{prefix}_ns_per_op", 1e9 if m.group(2) == "sec" else 1.0, "ns",
            f"{m.group(1)} time per operation (reported in {unit})")


@functools.lru_cache(maxsize=1024)
def metric_of(unit: str) -> MetricInfo:
    """The metric a unit becomes: perflab's name for ns/op, B/op, allocs/op (and X-ns/op);
    else the unit's own (MB/s -> mb_per_s, bytes/hash -> bytes_per_hash), higher-is-better
    for a rate."""
    known = unit_entry(unit)
    if known is not None:
        name, _, u, desc = known
        return MetricInfo(name, u, SOURCE, description=desc)
    name = re.sub(r"[^a-z0-9]+", "_", unit.lower().replace("/", "_per_")).strip("_") or "value"
    rate = unit.endswith("/s")
    return MetricInfo(name, unit, SOURCE, direction="higher" if rate else "lower",
                      description=f"reported in {unit}")


def _result(path: Path, lineno: int, m: re.Match[str]) -> dict[str, tuple[float, MetricInfo]]:
    """A result line's metrics (a line with an iteration count); a value that is not a number,
    or a value without its unit, refuses the file."""
    name, rest = m.group(1), m.group(3).split()
    where = f"line {lineno} (Benchmark{name})"
    if not rest or len(rest) % 2:
        raise bad(path, FORMAT, f"{where} has a value without its unit" if rest else
                  f"{where} has no measurements")
    values: dict[str, tuple[float, MetricInfo]] = {}
    for value, unit in zip(rest[::2], rest[1::2], strict=True):
        try:
            v = float(value)
        except ValueError:
            raise bad(path, FORMAT, f"{where} has the value {value!r} for {unit}, not a "
                      "number") from None
        if not math.isfinite(v) or v < 0:
            raise bad(path, FORMAT, f"{where} has the value {value} for {unit}")
        info = metric_of(unit)
        known = unit_entry(unit)
        values[info.name] = (v * (known[1] if known is not None else 1.0), info)
    return values


def read(path: Path, benchmark: str | None) -> ResultSet:
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"gobench {path.name}",
                   settings=Settings(file=str(path), import_format=FORMAT))
    config: dict[str, str] = {}
    fingerprint: dict[str, str] = {}
    configs: dict[tuple[str, tuple[tuple[str, str], ...]], Configuration] = {}
    seq = 0
    unparsed = 0
    for lineno, line in enumerate(text_lines(path, FORMAT), start=1):
        line = line.rstrip("\r\n")
        if line.startswith("Benchmark"):
            m = RESULT_LINE.fullmatch(line.rstrip())
            if m is None or not m.group(2).isdigit():
                # A name alone, or followed by the benchmark's own output (go test prints the
                # result on a later line): benchstat skips it too.
                unparsed += 1
                continue
            name, values = m.group(1), _result(path, lineno, m)
            key = (name, tuple(sorted(config.items())))
            cfg = configs.get(key)
            if cfg is None:
                cfg = configs[key] = Configuration(name=name, command=[f"Benchmark{name}"],
                                                   benchmark=benchmark or name,
                                                   params=dict(config), is_baseline=not configs)
            for metric, (_, info) in values.items():
                rs.metrics.setdefault(metric, info)
            cfg.runs.append(Run(seq=seq, values={k: v for k, (v, _) in values.items()}))
            seq += 1
            continue
        kv = CONFIG_LINE.match(line)
        if kv is None:
            continue  # PASS, ok, a test's own output: not part of the format
        k, v = kv.group(1), (kv.group(2) or "").strip()
        if k in FINGERPRINT_KEYS:
            if v:
                fingerprint[FINGERPRINT_KEYS[k]] = v
        elif v:
            config[k] = v
        else:
            config.pop(k, None)
    if not configs:
        raise bad(path, FORMAT, "no benchmark result lines ('BenchmarkName N value unit...')")
    _name_configurations(list(configs.values()))
    rs.configurations = list(configs.values())
    rs.fingerprint = Fingerprint.from_json(fingerprint)
    most = max(len(c.runs) for c in rs.configurations)
    rs.notes.append(f"imported from go test -bench: one run per result line ({most} at most "
                    "per benchmark: -count)")
    if most < 2:
        rs.notes.append("one result per benchmark: no spread to judge a change by (run with "
                        "-count 10)")
    if unparsed:
        rs.notes.append(f"{unparsed} 'Benchmark...' lines without results were ignored (a "
                        "benchmark's own output, or a failed benchmark)")
    return rs


def _name_configurations(cfgs: list[Configuration]) -> None:
    """Results of one benchmark under different configuration lines (two packages, a label
    line between two runs) are different configurations: their names say which."""
    seen: dict[str, list[Configuration]] = {}
    for c in cfgs:
        seen.setdefault(c.name, []).append(c)
    for same in seen.values():
        if len(same) < 2:
            continue
        keys = sorted({k for c in same for k in c.params
                       if len({str(o.params.get(k)) for o in same}) > 1})
        for c in same:
            said = ", ".join(f"{k}={c.params.get(k, '')}" for k in keys)
            c.name = f"{c.name} ({said})"
