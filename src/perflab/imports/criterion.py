"""criterion.rs output (``target/criterion/<benchmark>/new/``): ``sample.json``
{"sampling_mode", "iters": [n...], "times": [ns...]} (sample i ran ``iters[i]`` iterations in
``times[i]`` ns) beside ``benchmark.json`` {"group_id", "function_id", "value_str",
"full_id"...}.

Each sample is one ns_per_op value, times[i] / iters[i] (lower is better); ``full_id`` names
the configuration and group / function / value are its parameters.  The path given may be a
``sample.json`` (or the ``benchmark.json`` beside it), one benchmark's directory, or the whole
``target/criterion`` directory: a directory is read as every ``new/sample.json`` under it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perflab import notes as said
from perflab.format import fmt_plain
from perflab.imports.common import bad, is_num, mtime, need, read_json
from perflab.metrics import MetricInfo, metric_direction
from perflab.model import Configuration, ResultSet, Run, Settings

FORMAT = "criterion"
NS_PER_OP = MetricInfo("ns_per_op", "ns", "criterion", direction=metric_direction("ns_per_op"),
                       description="time of one iteration (a criterion sample's time / iters)")


def sniff(head: str) -> bool:
    text = head.lstrip()
    return text.startswith("{") and (('"iters"' in head and '"times"' in head)
                                      or ('"full_id"' in head and '"directory_name"' in head))


def sample_files(path: Path) -> list[Path]:
    """Every benchmark's latest samples under a directory (``target/`` holds ``criterion/``)."""
    root = path / "criterion" if (path / "criterion").is_dir() else path
    return sorted(root.rglob("new/sample.json"))


def sniff_dir(path: Path) -> bool:
    return next(iter(sample_files(path)), None) is not None


def _samples(path: Path) -> list[float]:
    data = read_json(path, FORMAT)
    if not isinstance(data, dict):
        raise bad(path, FORMAT, "not a JSON object")
    iters = need(data, "iters", "a list", "", path, FORMAT)
    times = need(data, "times", "a list", "", path, FORMAT)
    if len(iters) != len(times) or not iters:
        raise bad(path, FORMAT, f"iters has {len(iters)} values and times {len(times)} (one "
                  "each per sample)")
    out = []
    for i, (n, t) in enumerate(zip(iters, times, strict=True)):
        for key, v in (("iters", n), ("times", t)):
            if not is_num(v):
                raise bad(path, FORMAT, f"{key}[{i}] is {v!r}, not a number")
        if n <= 0 or t < 0:
            raise bad(path, FORMAT, f"sample {i} ran {fmt_plain(n)} iterations in "
                      f"{fmt_plain(t)} ns (iters > 0, times >= 0)")
        out.append(t / n)
    return out


def _identity(path: Path) -> tuple[str, dict[str, str]]:
    """benchmark.json's full_id and its group / function / value as parameters."""
    if not path.is_file():
        raise bad(path, FORMAT, "benchmark.json is missing beside sample.json")
    data = read_json(path, FORMAT)
    if not isinstance(data, dict):
        raise bad(path, FORMAT, "not a JSON object")
    full_id = need(data, "full_id", "text", "", path, FORMAT)
    params = {"group": need(data, "group_id", "text", "", path, FORMAT)}
    for key, ours in (("function_id", "function"), ("value_str", "value")):
        value: Any = data.get(key)
        if value is not None:
            params[ours] = need(data, key, "text", "", path, FORMAT)
    return full_id, params


def read(path: Path, benchmark: str | None) -> ResultSet:
    if path.is_dir():
        files = sample_files(path)
        if not files:
            raise bad(path, FORMAT, "no <benchmark>/new/sample.json under the directory")
    else:
        files = [path.parent / "sample.json" if path.name == "benchmark.json" else path]
    rs = ResultSet(kind="import", created_at=max(mtime(f) for f in files),
                   label=f"criterion {path.name}",
                   settings=Settings(file=str(path), import_format=FORMAT, interleaved=False))
    rs.metrics["ns_per_op"] = NS_PER_OP
    seq = 0
    for f in files:
        samples = _samples(f)
        name, params = _identity(f.parent / "benchmark.json")
        if any(c.name == name for c in rs.configurations):
            raise bad(f, FORMAT, f"the benchmark {name} is read twice")
        cfg = Configuration(name=name, command=[name], benchmark=benchmark or name,
                            params=params, cell=name, is_baseline=True)
        cfg.runs = [Run(seq=seq + k, values={"ns_per_op": v}) for k, v in enumerate(samples)]
        seq += len(samples)
        rs.configurations.append(cfg)
    rs.notes.add(said.imported(
        "imported from criterion: ns_per_op per sample (time / iterations); no "
        "machine fingerprint (pass --this-machine if measured here)"))
    return rs
