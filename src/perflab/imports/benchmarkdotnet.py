"""BenchmarkDotNet full JSON (``*-report-full.json``, ``JsonExporter.Full``): {"Title",
"HostEnvironmentInfo": {"OsVersion", "ProcessorName", "Architecture", "RuntimeVersion",
"LogicalCoreCount"...}, "Benchmarks": [{"FullName", "DisplayInfo", "Parameters", "Memory":
{"BytesAllocatedPerOperation", "Gen0Collections"..., "TotalOperations"}, "Measurements":
[{"IterationMode", "IterationStage", "LaunchIndex", "IterationIndex", "Operations",
"Nanoseconds"}]}]}.

The samples are the measurements of IterationMode "Workload" and IterationStage "Result"
(the engine's overhead subtracted, its outliers removed), each Nanoseconds / Operations ->
ns_per_op; the other stages (jitting, pilot, warm-up, overhead, actual) are not samples.
The memory diagnoser's figures are one per benchmark: bytes_per_op and GC collections per
1000 operations, stored on every sample and compared exactly (no spread is known)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from perflab import notes as said
from perflab.format import fmt_plain
from perflab.imports.common import bad, is_num, mtime, need, read_json
from perflab.metrics import MetricInfo, metric_direction
from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

FORMAT = "benchmarkdotnet"
SOURCE = "BenchmarkDotNet"
# BenchmarkDotNet's Architecture -> the machine name perflab's own fingerprints use
ARCH = {"X64": "x86_64", "Arm64": "aarch64", "X86": "i686", "Arm": "armv7l"}
GC = {"Gen0Collections": "gen0_per_1k_op", "Gen1Collections": "gen1_per_1k_op",
      "Gen2Collections": "gen2_per_1k_op"}


def _metric(name: str, unit: str, description: str, deterministic: bool = False) -> MetricInfo:
    return MetricInfo(name, unit, SOURCE, deterministic=deterministic, description=description,
                      direction=metric_direction(name))


METRICS = {
    "ns_per_op": _metric("ns_per_op", "ns", "time of one operation (a Workload Result "
                         "iteration's nanoseconds / operations)"),
    "bytes_per_op": _metric("bytes_per_op", "B", "bytes allocated per operation (memory "
                            "diagnoser; one figure per benchmark)", deterministic=True),
    **{m: _metric(m, "count", f"{k[:4]} collections per 1000 operations (memory diagnoser; "
                  "one figure per benchmark)", deterministic=True) for k, m in GC.items()},
}


def sniff(head: str) -> bool:
    return (head.lstrip().startswith("{") and '"HostEnvironmentInfo"' in head
            and '"Benchmarks"' in head)


def _fingerprint(host: dict[str, Any]) -> dict[str, Any]:
    """HostEnvironmentInfo as perflab's fingerprint keys (the rest kept under their names)."""
    cpu = host.get("ProcessorName")
    if isinstance(cpu, dict):  # BenchmarkDotNet before 0.10 wrote a Lazy: {"Value": ...}
        cpu = cpu.get("Value")
    arch = host.get("Architecture")
    fp: dict[str, Any] = {
        "cpu_model": cpu if isinstance(cpu, str) else None,
        "cpu_count": int(host["LogicalCoreCount"]) if is_num(host.get("LogicalCoreCount"))
        else None,
        "arch": ARCH.get(arch, arch) if isinstance(arch, str) else None,
        "os": host.get("OsVersion") if isinstance(host.get("OsVersion"), str) else None,
        "benchmarkdotnet_version": host.get("BenchmarkDotNetVersion"),
        "dotnet_sdk": host.get("DotNetCliVersion"),
    }
    return {k: v for k, v in fp.items() if v is not None}


def _parameters(text: str) -> dict[str, str]:
    """"Size=16&Mode=fast" (ParameterInstances.PrintInfo) -> {"Size": "16", "Mode": "fast"}."""
    params = {}
    for item in text.split("&") if text else []:
        k, _, v = item.partition("=")
        params[k] = v
    return params


def _job(display: Any) -> str:
    """The job of "Type.Method: DefaultJob [Size=16]" (DisplayInfo): "DefaultJob"."""
    m = re.search(r": (.+?)(?: \[.*\])?$", display) if isinstance(display, str) else None
    return m.group(1) if m else ""


def _samples(bench: dict[str, Any], where: str, path: Path) -> list[float]:
    """ns per operation of each Workload Result measurement, in the file's order."""
    out = []
    for j, m in enumerate(need(bench, "Measurements", "a list", where, path, FORMAT)):
        at = f"{where}.Measurements[{j}]"
        if not isinstance(m, dict):
            raise bad(path, FORMAT, f"{at} is not an object")
        mode = need(m, "IterationMode", "text", at, path, FORMAT)
        stage = need(m, "IterationStage", "text", at, path, FORMAT)
        if (mode, stage) != ("Workload", "Result"):
            continue
        ops = need(m, "Operations", "a number", at, path, FORMAT)
        ns = need(m, "Nanoseconds", "a number", at, path, FORMAT)
        if ops <= 0 or ns < 0:
            raise bad(path, FORMAT, f"{at} has {fmt_plain(ns)} ns for {fmt_plain(ops)} "
                      "operations (both > 0)")
        out.append(ns / ops)
    if not out:
        raise bad(path, FORMAT, f"{where} has no Workload Result measurements")
    return out


def _memory(bench: dict[str, Any], where: str, path: Path) -> dict[str, float]:
    """The memory diagnoser's figures: bytes_per_op and collections per 1000 operations."""
    if bench.get("Memory") is None:
        return {}
    at = f"{where}.Memory"
    memory = need(bench, "Memory", "an object", where, path, FORMAT)
    out: dict[str, float] = {}
    if memory.get("BytesAllocatedPerOperation") is not None:  # null: not measurable (WASM)
        out["bytes_per_op"] = float(need(memory, "BytesAllocatedPerOperation", "a number", at,
                                         path, FORMAT))
    ops = need(memory, "TotalOperations", "a number", at, path, FORMAT)
    if ops > 0:
        for key, metric in GC.items():
            out[metric] = need(memory, key, "a number", at, path, FORMAT) * 1000.0 / ops
    return out


def _configuration(bench: Any, where: str, path: Path, seq: int, benchmark: str | None
                   ) -> tuple[Configuration, set[str]]:
    if not isinstance(bench, dict):
        raise bad(path, FORMAT, f"{where} is not a benchmark object")
    full = need(bench, "FullName", "text", where, path, FORMAT)
    params = _parameters(need(bench, "Parameters", "text", where, path, FORMAT)
                         if bench.get("Parameters") is not None else "")
    job = _job(bench.get("DisplayInfo"))
    name = full if job in ("", "DefaultJob") else f"{full} [{job}]"
    if job:
        params["job"] = job
    samples = _samples(bench, where, path)
    memory = _memory(bench, where, path)
    cfg = Configuration(name=name, command=[full], benchmark=benchmark or name, params=params,
                        cell=name, is_baseline=True)
    cfg.runs = [Run(seq=seq + k, values={"ns_per_op": v, **memory})
                for k, v in enumerate(samples)]
    return cfg, {"ns_per_op", *memory}


def read(path: Path, benchmark: str | None) -> ResultSet:
    data = read_json(path, FORMAT)
    if not isinstance(data, dict):
        raise bad(path, FORMAT, "not a JSON object")
    host = need(data, "HostEnvironmentInfo", "an object", "", path, FORMAT)
    benches = need(data, "Benchmarks", "a list", "", path, FORMAT)
    if not benches:
        raise bad(path, FORMAT, "Benchmarks is empty")
    title = data.get("Title")
    rs = ResultSet(kind="import", created_at=mtime(path),
                   label=f"BenchmarkDotNet {title if isinstance(title, str) else path.name}",
                   settings=Settings(file=str(path), import_format=FORMAT, interleaved=False))
    seq = 0
    for i, bench in enumerate(benches):
        cfg, metrics = _configuration(bench, f"Benchmarks[{i}]", path, seq, benchmark)
        if any(c.name == cfg.name for c in rs.configurations):
            raise bad(path, FORMAT, f"Benchmarks[{i}] repeats the benchmark {cfg.name}")
        seq += len(cfg.runs)
        rs.configurations.append(cfg)
        for m in sorted(metrics):
            rs.metrics.setdefault(m, METRICS[m])
    fp = _fingerprint(host)
    runtime = host.get("RuntimeVersion")
    if isinstance(runtime, str):
        fp["runtimes"] = {c.name: runtime for c in rs.configurations}
    rs.fingerprint = Fingerprint.from_json(fp)
    memory = ("; memory diagnoser figures are one per benchmark, compared exactly"
              if "bytes_per_op" in rs.metrics or "gen0_per_1k_op" in rs.metrics else "")
    rs.notes.add(said.imported(
        "imported from BenchmarkDotNet: ns_per_op from the Workload Result iterations (overhead "
        f"subtracted, outliers removed by BenchmarkDotNet){memory}"))
    return rs
