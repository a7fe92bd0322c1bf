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
higher is better when the unit is a rate ("/s"), else lower.  A result line is read by
collectors.harness.go_result, as a harness run's output is (``compare --harness gobench``)."""

from __future__ import annotations

import re
from pathlib import Path

from perflab import notes as said
from perflab.collectors.harness import GO_RESULT_LINE as RESULT_LINE
from perflab.collectors.harness import HarnessOutputError, go_result
from perflab.imports.common import bad, mtime, text_lines
from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

FORMAT = "gobench"

FINGERPRINT_KEYS = {"goos": "os", "goarch": "arch", "cpu": "cpu_model"}
CONFIG_LINE = re.compile(r"([a-z][^\sA-Z:]*):(?:[ \t]+(.*)|$)")


def sniff(head: str) -> bool:
    lines = head.splitlines()
    return any(RESULT_LINE.match(line) for line in lines) and (
        any(line.startswith(("goos:", "goarch:", "pkg:")) for line in lines)
        or any(re.match(r"Benchmark\S*\s+\d+\s+\S+ ns/op", line) for line in lines))


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
            try:
                got = go_result(line)
            except HarnessOutputError as e:
                raise bad(path, FORMAT, f"line {lineno} (Benchmark{e.name}) {e.what}") from None
            if got is None:
                # A name alone, or followed by the benchmark's own output (go test prints the
                # result on a later line): benchstat skips it too.
                unparsed += 1
                continue
            name, values = got
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
    rs.notes.add(said.imported(
        f"imported from go test -bench: one run per result line ({most} at most "
        "per benchmark: -count)"))
    if most < 2:
        rs.notes.add(said.imported(
            "one result per benchmark: no spread to judge a change by (run with "
            "-count 10)"))
    if unparsed:
        rs.notes.add(said.imported(
            f"{unparsed} 'Benchmark...' lines without results were ignored (a "
            "benchmark's own output, or a failed benchmark)"))
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
