"""JMH JSON (``-rf json``): a list of benchmark objects {"benchmark", "mode", "params",
"jvm", "jdkVersion", "vmName", "vmVersion", "primaryMetric": {"scoreUnit", "rawData":
[[fork 1's iterations], [fork 2's]...]}, "secondaryMetrics": {name: {same}}}.

Every measurement iteration of every fork (``rawData``) is one sample: a TIME/op unit becomes
ns_per_op (lower is better), an ops/TIME unit ops_per_s (higher is better).  The sample mode
writes ``rawDataHistogram`` instead: an iteration's sample is the mean of its histogram.  The
``-prof gc`` metric gc.alloc.rate.norm (B/op) becomes bytes_per_op, iteration by iteration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab import notes as said
from perflab.format import fmt_plain
from perflab.imports.common import bad, first_negative, is_num, mtime, need, read_json
from perflab.metrics import MetricInfo, metric_direction, ns_in
from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

FORMAT = "jmh"
SOURCE = "JMH"

# secondary metrics kept: JMH's name (older JMH prefixes a middle dot) -> perflab metric
SECONDARY = {"gc.alloc.rate.norm": "bytes_per_op"}
METRICS = {
    "ns_per_op": MetricInfo("ns_per_op", "ns", SOURCE, description="time of one operation "
                            "(one JMH measurement iteration's score)",
                            direction=metric_direction("ns_per_op")),
    "ops_per_s": MetricInfo("ops_per_s", "ops/s", SOURCE, description="operations per second "
                            "(one JMH measurement iteration's score)",
                            direction=metric_direction("ops_per_s")),
    "bytes_per_op": MetricInfo("bytes_per_op", "B", SOURCE, description="bytes allocated per "
                               "operation (JMH -prof gc: gc.alloc.rate.norm)",
                               direction=metric_direction("bytes_per_op")),
}


def sniff(head: str) -> bool:
    return (head.lstrip().startswith("[") and '"benchmark"' in head
            and '"primaryMetric"' in head)


def score_metric(unit: str) -> tuple[str, float] | None:
    """The perflab metric of a JMH score unit and the factor to its unit: "us/op" ->
    (ns_per_op, 1000), "ops/ms" -> (ops_per_s, 1000); None for a unit of neither form."""
    num, _, den = unit.partition("/")
    # JMH's time labels (TimeUnit short names) are the registry's, with its longer ones
    if den == "op" and (ns := ns_in(num, longer=True)) is not None:
        return "ns_per_op", ns
    if num == "ops" and (ns := ns_in(den, longer=True)) is not None:
        return "ops_per_s", 1e9 / ns
    return None


def _iterations(metric: dict[str, Any], where: str, path: Path) -> list[list[float]]:
    """A metric's values per fork and iteration (rawData, or the means of rawDataHistogram)."""
    if "rawData" not in metric and isinstance(metric.get("rawDataHistogram"), list):
        hist = need(metric, "rawDataHistogram", "a list", where, path, FORMAT)
        return [[_histogram_mean(it, f"{where}.rawDataHistogram[{f}][{i}]", path)
                 for i, it in enumerate(_forks(fork, f"{where}.rawDataHistogram[{f}]", path))]
                for f, fork in enumerate(hist)]
    raw = need(metric, "rawData", "a list", where, path, FORMAT)
    forks = []
    for f, fork in enumerate(raw):
        values = _forks(fork, f"{where}.rawData[{f}]", path)
        for i, v in enumerate(values):
            if not is_num(v):
                raise bad(path, FORMAT, f"{where}.rawData[{f}][{i}] is {v!r}, not a number")
        forks.append([float(v) for v in values])
    return forks


def _forks(fork: Any, where: str, path: Path) -> list[Any]:
    if not isinstance(fork, list):
        raise bad(path, FORMAT, f"{where} is not a list of iterations")
    return fork


def _histogram_mean(iteration: Any, where: str, path: Path) -> float:
    """The mean of one iteration's [[value, count]...] histogram."""
    pairs = _forks(iteration, where, path)
    if not pairs or not all(isinstance(p, list) and len(p) == 2 and is_num(p[0]) and is_num(p[1])
                            for p in pairs):
        raise bad(path, FORMAT, f"{where} is not a list of [value, count] pairs")
    total = sum(p[1] for p in pairs)
    return sum(p[0] * p[1] for p in pairs) / total if total else float("nan")


def _runtime(bench: dict[str, Any]) -> dict[str, str]:
    keys = {"jvm": "jvm", "jdkVersion": "jdk_version", "vmName": "vm_name",
            "vmVersion": "vm_version", "jmhVersion": "jmh_version"}
    return {ours: str(bench[k]) for k, ours in keys.items() if isinstance(bench.get(k), str)}


def _name(bench: dict[str, Any], params: dict[str, str], mode_needed: bool) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    name = str(bench["benchmark"]) + (f"({shown})" if shown else "")
    return f"{name} [{bench['mode']}]" if mode_needed else name


def _params(bench: dict[str, Any], where: str, path: Path) -> dict[str, str]:
    if bench.get("params") is None:
        return {}
    params = need(bench, "params", "an object", where, path, FORMAT)
    return {str(k): str(v) for k, v in params.items()}


@dataclass(frozen=True)
class _Entry:
    """One benchmark object of the file: the object, where it sits (``[3]``), its parameters."""
    bench: dict[str, Any]
    where: str
    params: dict[str, str]


def _configuration(rs: ResultSet, entry: _Entry, path: Path, seq: int, name: str,
                   benchmark: str | None) -> Configuration:
    bench, where, params = entry.bench, entry.where, entry.params
    primary = need(bench, "primaryMetric", "an object", where, path, FORMAT)
    unit = need(primary, "scoreUnit", "text", f"{where}.primaryMetric", path, FORMAT)
    known = score_metric(unit)
    if known is None:
        raise bad(path, FORMAT, f"{where}.primaryMetric.scoreUnit is {unit!r}, not TIME/op or "
                  "ops/TIME")
    metric, factor = known
    columns = {metric: [v * factor for fork in _iterations(primary, f"{where}.primaryMetric",
                                                           path) for v in fork]}
    secondary = bench.get("secondaryMetrics") or {}
    if not isinstance(secondary, dict):
        raise bad(path, FORMAT, f"{where}.secondaryMetrics is not an object")
    for raw_name, sec in secondary.items():
        ours = SECONDARY.get(str(raw_name).lstrip("\u00b7"))
        if ours is None:
            continue
        if not isinstance(sec, dict):
            raise bad(path, FORMAT, f"{where}.secondaryMetrics.{raw_name} is not an object")
        columns[ours] = [v for fork in _iterations(sec, f"{where}.secondaryMetrics.{raw_name}",
                                                   path) for v in fork]
    for m, values in columns.items():
        if not values:
            raise bad(path, FORMAT, f"{where} ({name}) has no {m} samples in rawData")
        if (neg := first_negative(values)) is not None:
            raise bad(path, FORMAT, f"{where} ({name}) has a negative {m} ({fmt_plain(neg)})")
        rs.metrics.setdefault(m, METRICS[m])
    cfg = Configuration(name=name, command=[str(bench["benchmark"])], benchmark=benchmark or name,
                        params=params, cell=name, is_baseline=True)
    for k in range(len(columns[metric])):
        values = {m: xs[k] for m, xs in columns.items() if k < len(xs) and is_num(xs[k])}
        cfg.runs.append(Run(seq=seq + k, values=values))
    return cfg


def read(path: Path, benchmark: str | None) -> ResultSet:
    data = read_json(path, FORMAT)
    if not isinstance(data, list) or not data:
        raise bad(path, FORMAT, "not a list of benchmarks")
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"jmh {path.name}",
                   settings=Settings(file=str(path), import_format=FORMAT, interleaved=False))
    heads = []
    for i, bench in enumerate(data):
        where = f"[{i}]"
        if not isinstance(bench, dict):
            raise bad(path, FORMAT, f"{where} is not a benchmark object")
        need(bench, "benchmark", "text", where, path, FORMAT)
        need(bench, "mode", "text", where, path, FORMAT)
        heads.append(_Entry(bench, where, _params(bench, where, path)))
    # The same benchmark and parameters in several modes (-bm avgt,thrpt): the mode is named.
    seen: dict[str, set[str]] = {}
    for e in heads:
        seen.setdefault(_name(e.bench, e.params, False), set()).add(e.bench["mode"])
    runtimes: dict[str, str] = {}
    seq = 0
    for e in heads:
        name = _name(e.bench, e.params, len(seen[_name(e.bench, e.params, False)]) > 1)
        cfg = _configuration(rs, e, path, seq, name, benchmark)
        seq += len(cfg.runs)
        rs.configurations.append(cfg)
        rt = _runtime(e.bench)
        runtimes[name] = " ".join(rt[k] for k in ("vm_name", "vm_version") if k in rt)
    first = _runtime(heads[0].bench)
    fp: dict[str, Any] = {k: v for k, v in first.items() if k != "jmh_version"}
    if any(runtimes.values()):
        fp["runtimes"] = {k: v for k, v in runtimes.items() if v}
    rs.fingerprint = Fingerprint.from_json(fp)
    if "jmh_version" in first:
        rs.settings.extra["jmh_version"] = first["jmh_version"]
    rs.notes.add(said.imported("imported from JMH: one sample per fork and measurement iteration; "
                               + ", ".join(f"{m} ({i.unit}, {i.direction} is better)"
                                           for m, i in sorted(rs.metrics.items()))))
    return rs
