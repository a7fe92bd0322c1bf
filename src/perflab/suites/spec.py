"""The suite file: parse a TOML suite, validate every key, and say where a mistake is.

tomllib gives values without positions, so :class:`LineIndex` scans the text once and maps each
key path (``configurations.rust.workload``) to the line that defines it; every problem is then
reported as ``FILE:LINE: problem -- fix``.  A suite with any problem never runs.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_count, fmt_plain
from perflab.judging import (
    DEFAULT_CORRECTION,
    DEFAULT_ESTIMATOR,
    DEFAULT_THRESHOLD,
    ESTIMATOR_CHOICES,
    MIN_RUNS,
    check_estimator_runs,
    parse_estimator,
)

# The keys each table accepts; anything else is a typo we can name.
SUITE_KEYS = {"name", "description", "baseline", "metrics", "primary", "threshold",
              "bands", "correction", "estimator", "unavailable"}
MEASURE_KEYS = {"warmup", "runs", "min_runs", "max_runs", "precision", "budget", "timeout",
                "calibrate", "calibrate_on",
                "pin", "counters", "instructions", "seed", "expected_run_s", "region",
                "ignore_failure"}
BENCHMARK_KEYS = {"workload", "command", "params", "shell"}
CONFIG_KEYS = {"workload", "command", "prefix", "binary", "env", "flags", "build", "params",
               "description", "shell"}
REPORT_KEYS = {"x", "scaling", "kinds", "log_x", "log_y", "metrics", "title"}
KINDS_KEYS = {"param", "a", "b"}
RANGE_KEYS = {"start", "stop", "step", "factor"}
MAX_RANGE_VALUES = 10_000  # values one range axis may have
TOP_KEYS = {"suite", "measure", "benchmark", "matrix", "configurations", "report"}

PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
BUILTIN_PLACEHOLDERS = {"binary", "config"}

Scalar = int | float | str | bool


@dataclass
class Problem:
    line: int
    problem: str
    fix: str


class LineIndex:
    """Map dotted key paths to the line defining them (1-based), by scanning the TOML text.

    Hand-written because tomllib keeps no positions and tomlkit's positions are not public; it
    understands table headers, arrays of tables, dotted and quoted keys, which is what suites use.
    Keys inside inline tables resolve to the line of the enclosing key.
    """

    _header = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    _key = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
                      r"""(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")

    def __init__(self, text: str) -> None:
        self.paths: dict[tuple[str, ...], int] = {}
        current: tuple[str, ...] = ()
        for no, line in enumerate(text.splitlines(), start=1):
            m = self._header.match(line)
            if m and not self._key.match(line):
                current = self._split(m.group(1))
                self.paths.setdefault(current, no)
                continue
            k = self._key.match(line)
            if k:
                path = current + self._split(k.group(1))
                for i in range(len(current) + 1, len(path) + 1):
                    self.paths.setdefault(path[:i], no)
                # Inline tables on one line: record their keys at this line too.
                rest = line[k.end():]
                for inner in re.finditer(r"([A-Za-z0-9_-]+)\s*=", rest):
                    self.paths.setdefault(path + (inner.group(1),), no)

    @staticmethod
    def _split(dotted: str) -> tuple[str, ...]:
        parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', dotted)
        return tuple(a or b or c for a, b, c in parts)

    def line(self, *path: str) -> int:
        """The line of the longest known prefix of ``path`` (1 when nothing matches)."""
        p = tuple(path)
        while p:
            if p in self.paths:
                return self.paths[p]
            p = p[:-1]
        return 1


@dataclass
class ParamAxis:
    name: str
    values: list[Scalar]
    line: int
    from_manifest: bool = False


@dataclass
class ConfigSpec:
    name: str
    line: int
    workload: str | None = None
    command: list[str] | None = None  # template tokens with {param} placeholders
    shell: bool = False
    prefix: list[str] = field(default_factory=list)
    binary: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    build: list[str] | None = None
    params: dict[str, Scalar] = field(default_factory=dict)
    description: str = ""


@dataclass
class Exclusion:
    match: dict[str, list[Scalar]]
    configurations: list[str] | None
    line: int

    def excludes(self, config: str | None, params: dict[str, Any]) -> bool:
        if self.configurations is not None and (config is None or config not in
                                                self.configurations):
            return False
        return all(params.get(k) in vs for k, vs in self.match.items())


@dataclass
class Suite:
    path: Path
    text: str
    lines: LineIndex
    name: str
    description: str = ""
    baseline: str = ""
    metrics: list[str] = field(default_factory=list)
    primary: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    bands: dict[str, str] = field(default_factory=dict)  # metric or kind -> band (judging.Plan)
    correction: str = DEFAULT_CORRECTION  # the primary metric's family across the matrix
    estimator: str = str(DEFAULT_ESTIMATOR)
    unavailable: str = "skip"
    measure: dict[str, Any] = field(default_factory=dict)
    axes: list[ParamAxis] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    configurations: list[ConfigSpec] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)

    def where(self, *path: str) -> str:
        return f"{self.path}:{self.lines.line(*path)}"

    def error(self, problem: str, fix: str, *path: str) -> PerflabError:
        return PerflabError(f"{self.where(*path)}: {problem}", fix)

    def config(self, name: str) -> ConfigSpec:
        for c in self.configurations:
            if c.name == name:
                return c
        raise KeyError(name)


# --------------------------------------------------------------------------------------------
class _Checker:
    """Collects every problem of a suite file so the user sees them all in one go."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = LineIndex(text)
        self.problems: list[Problem] = []
        # Matrix parameters written but refused (an empty list, a bad range): still names a
        # command may use, so the parameter's own problem is the one reported, not a
        # "placeholder is not a matrix parameter" that only follows from it.
        self.refused_axes: set[str] = set()

    def add(self, path: tuple[str, ...], problem: str, fix: str) -> None:
        self.problems.append(Problem(self.lines.line(*path), problem, fix))

    def keys(self, table: dict[str, Any], allowed: set[str], path: tuple[str, ...],
             where: str) -> None:
        for k in table:
            if k not in allowed:
                close = difflib.get_close_matches(k, sorted(allowed), n=1)
                hint = f"did you mean '{close[0]}'?" if close else "remove it"
                self.add(path + (k,), f"unknown key '{k}' in {where}",
                         f"{hint} (allowed: {', '.join(sorted(allowed))})")

    def table(self, v: Any, path: tuple[str, ...], fix: str, allowed: set[str] | None = None,
              where: str = "") -> dict[str, Any] | None:
        """``v`` when it is a table (its keys checked against ``allowed``, named ``where`` in
        the message); else None, with "'<last key>' must be a table" and ``fix``."""
        if not isinstance(v, dict):
            self.add(path, f"'{path[-1]}' must be a table", fix)
            return None
        if allowed is not None:
            self.keys(v, allowed, path, where)
        return v

    def typed_into(self, out: dict[str, Any], table: dict[str, Any], keys: tuple[str, ...],
                   types: tuple[type, ...], what: str, path: tuple[str, ...]) -> None:
        """Copy each of ``keys`` that ``table`` holds with one of ``types`` into ``out``."""
        for key in keys:
            v = self.typed(table, key, types, what, path)
            if v is not None:
                out[key] = v

    def choice(self, table: dict[str, Any], key: str, choices: tuple[str, ...], what: str,
               path: tuple[str, ...], problem: str, fix: str) -> str | None:
        """``table[key]`` when it is one of ``choices``; else None, with ``problem`` (where
        ``{v}`` stands for the value) and ``fix`` (a value of another type: "must be ``what``")."""
        v = self.typed(table, key, (str,), what, path)
        if v is not None and v not in choices:
            self.add(path + (key,), problem.format(v=v), fix)
            return None
        return v

    def typed(self, table: dict[str, Any], key: str, types: tuple[type, ...], what: str,
              path: tuple[str, ...]) -> Any:
        if key not in table:
            return None
        v = table[key]
        # bool is an int in Python; a suite saying runs = true is a mistake.
        if isinstance(v, bool) and bool not in types:
            ok = False
        else:
            ok = isinstance(v, types)
        if not ok:
            self.add(path + (key,), f"'{key}' must be {what}, not {_tname(v)} ({v!r})",
                     f"write {key} = <{what}>")
            return None
        return v


def _tname(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def _argv(v: Any) -> list[str] | None:
    if isinstance(v, str):
        try:
            return shlex.split(v)
        except ValueError:  # unbalanced quotes: see _argv_problem
            return None
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return None


def _argv_problem(key: str, v: Any) -> tuple[str, str]:
    """Why ``v`` is not a command (problem, fix) for a key that _argv refused."""
    if isinstance(v, str):
        try:
            shlex.split(v)
        except ValueError as e:
            return (f"'{key}' = {v!r} cannot be split into arguments ({e})",
                    "balance the quotes, or write it as a list of strings")
    return (f"'{key}' must be a non-empty string or a list of strings",
            f'write {key} = "python3 -c pass {{n}}"' if key == "command" else
            f'write {key} = ["..."]')


def _bands(meta: dict[str, Any], suite: Suite, ck: Any) -> None:
    """[suite] bands = { max_rss = "64KiB", memory = "0.5%" }: each metric's (or kind's) band,
    checked as --threshold METRIC=BAND is (validate.thresholds)."""
    from perflab.runner import known_metrics
    from perflab.validate import thresholds

    bands = ck.typed(meta, "bands", (dict,), 'a table: bands = { max_rss = "64KiB" }',
                     ("suite",))
    if not bands:
        return
    known = known_metrics([c.workload for c in suite.configurations if c.workload])
    try:
        _, suite.bands = thresholds([f"{k}={v}" for k, v in bands.items()], known,
                                    option="bands:")
    except PerflabError as e:
        ck.add(("suite", "bands"), e.problem, e.fix)


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file; raises PerflabError naming FILE:LINE and the fix."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PerflabError(f"suite file {p} not found",
                           "pass the path of a suite TOML file (examples in suites/)") from None
    except OSError as e:
        raise PerflabError(f"cannot read suite file {p}: {e.strerror}",
                           "check the path and its permissions") from None
    except UnicodeDecodeError as e:
        raw = p.read_bytes()
        line = raw[:e.start].count(b"\n") + 1
        raise PerflabError(f"{p}:{line}: the suite file is not UTF-8 (byte 0x{raw[e.start]:02x})",
                           "save it as UTF-8 (TOML files must be UTF-8)") from None
    return parse_suite(text, p)


def toml_error_line(e: tomllib.TOMLDecodeError, text: str) -> tuple[int, bool]:
    """The line a TOML error is at, and whether tomllib found it at the end of the file (an
    array, string or table left open: the last line with text).  tomllib says where in its
    message, "(at line N, column M)" or "(at end of document)"."""
    lineno = getattr(e, "lineno", None)  # Python 3.14 gives it as an attribute
    if isinstance(lineno, int) and lineno > 0:
        return lineno, False
    m = re.search(r"\(at line (\d+), column \d+\)", str(e))
    if m:
        return int(m.group(1)), False
    return max(1, len(text.rstrip().splitlines())), True


def parse_suite(text: str, path: Path) -> Suite:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, at_end = toml_error_line(e, text)
        fix = ("close what is left open above it (an array's ], a string's quote, a table's })"
               if at_end else "fix the syntax at that line (strings need quotes, tables [name])")
        raise PerflabError(f"{path}:{line}: not valid TOML ({e})", fix) from None
    ck = _Checker(path, text)
    suite = _build(data, ck, path, text)
    if ck.problems:
        ck.problems.sort(key=lambda pr: pr.line)
        first = ck.problems[0]
        more = len(ck.problems) - 1
        extra = ""
        if more:
            rest = "; ".join(f"line {pr.line}: {pr.problem}" for pr in ck.problems[1:4])
            extra = f" (and {more} more: {rest})"
        raise PerflabError(f"{path}:{first.line}: {first.problem}{extra}", first.fix)
    return suite


def _build(data: dict[str, Any], ck: _Checker, path: Path, text: str) -> Suite:
    ck.keys(data, TOP_KEYS, (), "the suite file")
    meta = ck.table(data.get("suite", {}), ("suite",), "write [suite] with name = ...",
                    SUITE_KEYS, "[suite]") or {}
    name = ck.typed(meta, "name", (str,), "a string", ("suite",)) or path.stem
    suite = Suite(path=path, text=text, lines=ck.lines, name=name)
    suite.description = ck.typed(meta, "description", (str,), "a string", ("suite",)) or ""
    suite.baseline = ck.typed(meta, "baseline", (str,), "a configuration name", ("suite",)) or ""
    metrics = ck.typed(meta, "metrics", (list,), "a list of metric names", ("suite",))
    if metrics is not None:
        if not all(isinstance(m, str) for m in metrics):
            ck.add(("suite", "metrics"), "'metrics' must list metric names as strings",
                   'write metrics = ["ns_per_op", "wall_time"]')
        else:
            suite.metrics = list(metrics)
    suite.primary = ck.typed(meta, "primary", (str,), "a metric name", ("suite",))
    thr = ck.typed(meta, "threshold", (int, float), "a number (0.02 = 2%)", ("suite",))
    if thr is not None:
        if not 0 < thr < 1:
            ck.add(("suite", "threshold"), f"threshold {thr} is outside (0, 1)",
                   "give a fraction: threshold = 0.02 means +-2%")
        else:
            suite.threshold = float(thr)
    corr = ck.choice(meta, "correction", ("holm", "bh"), "'holm' or 'bh'", ("suite",),
                     "unknown correction '{v}'",
                     "use 'holm' (family-wise) or 'bh' (Benjamini-Hochberg)")
    if corr is not None:
        suite.correction = corr
    est = ck.typed(meta, "estimator", (str,), "'median', 'mean', 'trim' or 'trim:LOW:HIGH'",
                   ("suite",))
    if est is not None:
        try:
            suite.estimator = str(parse_estimator(est))
        except ValueError as e:
            ck.add(("suite", "estimator"), str(e), f"use one of: {ESTIMATOR_CHOICES}")
    una = ck.choice(meta, "unavailable", ("skip", "error"), "'skip' or 'error'", ("suite",),
                    "unavailable = '{v}' is not a policy",
                    "use 'skip' (report and skip) or 'error' (refuse to run)")
    if una is not None:
        suite.unavailable = una

    suite.measure = _measure(ck.table(data.get("measure", {}), ("measure",),
                                      "write [measure] with runs = 5", MEASURE_KEYS, "[measure]")
                             or {}, ck)
    bench = ck.table(data.get("benchmark", {}), ("benchmark",),
                     'write [benchmark] with workload = "eh/cpp" or command = "..."',
                     BENCHMARK_KEYS, "[benchmark]") or {}
    suite.axes, suite.exclusions = _matrix(data.get("matrix", {}), ck)
    suite.configurations = _configs(data.get("configurations"), bench, ck)
    suite.report = _report(ck.table(data.get("report", {}), ("report",),
                                    'write [report] with x = "depth"', REPORT_KEYS, "[report]")
                           or {}, ck)
    _bands(meta, suite, ck)
    _cross_check(suite, ck)
    return suite


def _measure(m: dict[str, Any], ck: _Checker) -> dict[str, Any]:
    """The [measure] table's settings that are valid, by key."""
    out: dict[str, Any] = {}
    path = ("measure",)
    for key in ("warmup", "runs", "min_runs", "max_runs", "seed"):
        v = ck.typed(m, key, (int,), "an integer", path)
        if v is not None:
            if v < 0 or (key in ("runs", "min_runs", "max_runs") and v < 1):
                ck.add(path + (key,), f"'{key}' = {v} is out of range",
                       f"give {key} a positive integer")
            else:
                out[key] = v
    for key in ("precision", "budget", "timeout", "expected_run_s", "calibrate"):
        v = ck.typed(m, key, (int, float), "a number", path)
        if v is not None:
            if not v > 0 or v == float("inf"):  # NaN and inf are valid TOML floats
                ck.add(path + (key,), f"'{key}' = {v} must be a positive, finite number",
                       f"give {key} a positive number")
            elif key == "precision" and v >= 1:
                ck.add(path + (key,), f"'precision' = {v} is a fraction, not a percentage",
                       f"write precision = {fmt_plain(v / 100)} for {fmt_plain(v)}%")
            else:
                out[key] = float(v)
    for key, choices, what, fix in (
            ("calibrate_on", ("each", "baseline"), "'each' or 'baseline'",
             "use 'each' (a count per configuration) or 'baseline' (the baseline's count "
             "for every configuration of the cell)"),
            ("counters", ("auto", "none"), "'auto' or 'none'", "use 'auto' or 'none'"),
            ("instructions", ("valgrind",), "'valgrind'",
             "use instructions = 'valgrind' or leave it out")):
        v = ck.choice(m, key, choices, what, path, key + " = '{v}' is unknown", fix)
        if v is not None:
            out[key] = v
    pin = ck.typed(m, "pin", (list,), "a list of CPU numbers", path)
    if pin is not None:
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in pin):
            ck.add(path + ("pin",), "'pin' must list CPU numbers",
                   "write pin = [0] or pin = [0, 1]")
        else:
            out["pin"] = pin
    ck.typed_into(out, m, ("region", "ignore_failure"), (bool,), "true or false", path)
    if "min_runs" in out and "max_runs" in out and out["min_runs"] > out["max_runs"]:
        ck.add(path + ("min_runs",), "min_runs is larger than max_runs",
               "make min_runs <= max_runs")
    return out


def _scalar_list(v: Any) -> bool:
    if not isinstance(v, list) or not v:
        return False
    if not all(isinstance(x, int | float | str | bool) for x in v):
        return False
    kinds = {"num" if isinstance(x, int | float) and not isinstance(x, bool) else type(x)
             for x in v}
    return len(kinds) == 1


def _range_values(name: str, r: dict[str, Any], ck: _Checker) -> list[Scalar] | None:
    path = ("matrix", name)
    ck.keys(r, RANGE_KEYS, path, f"the range of '{name}'")
    start, stop = r.get("start"), r.get("stop")
    if stop == "nproc":
        # The CPUs this process may run on (not os.cpu_count(): a container or taskset limits
        # them), so `threads = { start = 1, stop = "nproc" }` is 1..nproc on every machine.
        stop = len(os.sched_getaffinity(0))
    nums = (int, float)
    if not isinstance(start, nums) or not isinstance(stop, nums) or isinstance(start, bool):
        ck.add(path, f"range '{name}' needs numeric start and stop (or stop = \"nproc\")",
               f"write {name} = {{ start = 1, stop = 10, step = 1 }}")
        return None
    if "step" in r and "factor" in r:
        ck.add(path, f"range '{name}' has both step and factor", "keep one of them")
        return None
    if not all(math.isfinite(x) for x in (start, stop)):
        ck.add(path, f"range '{name}' needs finite start and stop",
               f"write {name} = {{ start = 1, stop = 10, step = 1 }}")
        return None
    # The values are counted before any is made, so a range of a billion values is refused at
    # once (expanding first took 4.8 GB for stop = 1e8).
    values: list[Scalar] = []
    if "factor" in r:
        f = r["factor"]
        if not isinstance(f, nums) or not math.isfinite(f) or f <= 1 or start <= 0:
            ck.add(path, f"geometric range '{name}' needs factor > 1 and start > 0",
                   f"write {name} = {{ start = 1, stop = 1024, factor = 2 }}")
            return None
        count = (math.floor(math.log(stop * (1 + 1e-9) / start) / math.log(f)) + 1
                 if stop >= start else 0)
    else:
        step = r.get("step", 1)
        if not isinstance(step, nums) or not math.isfinite(step) or step <= 0:
            ck.add(path, f"range '{name}' needs a positive step",
                   f"write {name} = {{ start = {start}, stop = {stop}, step = 1 }}")
            return None
        count = int((stop - start) / step + 1e-9) + 1 if stop >= start else 0
    if count <= 0:
        ck.add(path, f"range '{name}' is empty (stop < start)",
               "make stop >= start")
        return None
    if count > MAX_RANGE_VALUES:
        ck.add(path, f"range '{name}' has {fmt_count(count)} values, more than "
                     f"{fmt_count(MAX_RANGE_VALUES)}",
               "use a larger step or factor")
        return None
    if "factor" in r:
        # Repeated products (start, start*f, start*f*f...: stored parameter values stay
        # comparable across results, so the arithmetic must not change); the count
        # bounds the loop, with one spare for a product that rounds below the logs' count.
        x = start
        while x <= stop * (1 + 1e-9) and len(values) < count + 1:
            values.append(x)
            x = x * f
    else:
        values = [start + i * step for i in range(count)]
        if all(isinstance(x, int) for x in (start, stop, step)):
            values = [int(x) for x in values]
    return values


def _matrix(m: Any, ck: _Checker) -> tuple[list[ParamAxis], list[Exclusion]]:
    if ck.table(m, ("matrix",), "write [matrix] with depth = [0, 1]") is None:
        return [], []
    axes: list[ParamAxis] = []
    for name, v in m.items():
        if name == "exclude":
            continue
        line = ck.lines.line("matrix", name)
        ck.refused_axes.add(name)  # until it becomes an axis below
        if isinstance(v, dict) and v.get("manifest") is True and len(v) == 1:
            axes.append(ParamAxis(name, [], line, from_manifest=True))
        elif isinstance(v, dict):
            vals = _range_values(name, v, ck)
            if vals is not None:
                axes.append(ParamAxis(name, vals, line))
        elif isinstance(v, list) and not v:
            ck.add(("matrix", name), f"matrix parameter '{name}' has no values",
                   f"list at least one value: {name} = [1, 2]")
        elif _scalar_list(v):
            if len(set(map(repr, v))) != len(v):
                ck.add(("matrix", name), f"matrix parameter '{name}' repeats a value",
                       "list each value once")
            axes.append(ParamAxis(name, list(v), line))
        elif isinstance(v, int | float | str | bool):
            axes.append(ParamAxis(name, [v], line))
        else:
            ck.add(("matrix", name),
                   f"matrix parameter '{name}' must be a list of values of one type, a range "
                   f"or {{ manifest = true }}, not {_tname(v)}",
                   f"write {name} = [0, 1, 2] or {name} = {{ start = 0, stop = 10 }}")
    ck.refused_axes -= {a.name for a in axes}
    excl: list[Exclusion] = []
    ex = m.get("exclude", [])
    if not isinstance(ex, list) or not all(isinstance(e, dict) for e in ex):
        ck.add(("matrix", "exclude"), "'exclude' must be a list of tables",
               'write exclude = [{ kind = "hardware", threads = 2 }]')
        ex = []
    names = {a.name for a in axes}
    for e in ex:
        line = ck.lines.line("matrix", "exclude")
        match: dict[str, list[Scalar]] = {}
        cfgs: list[str] | None = None
        for k, v in e.items():
            vals = v if isinstance(v, list) else [v]
            if k == "configuration":
                if not all(isinstance(x, str) for x in vals):
                    ck.add(("matrix", "exclude"), "an exclusion's 'configuration' must be a name",
                           'write { configuration = "rust", kind = "hardware" }')
                cfgs = [str(x) for x in vals]
            elif k not in names:
                close = difflib.get_close_matches(k, sorted(names), n=1)
                ck.add(("matrix", "exclude"),
                       f"exclusion names '{k}', which is not a matrix parameter",
                       (f"did you mean '{close[0]}'?" if close else
                        f"use one of: {', '.join(sorted(names)) or '(none)'}, configuration"))
            else:
                match[k] = list(vals)
        excl.append(Exclusion(match, cfgs, line))
    return axes, excl


def _configs(c: Any, bench: dict[str, Any], ck: _Checker) -> list[ConfigSpec]:
    default_cmd = _argv(bench.get("command")) if "command" in bench else None
    if "command" in bench and default_cmd is None:
        ck.add(("benchmark", "command"), *_argv_problem("command", bench.get("command")))
    default_wl = bench.get("workload")
    if default_wl is not None and not isinstance(default_wl, str):
        ck.add(("benchmark", "workload"), "'workload' must be a workload name",
               'write workload = "eh/cpp" (see perflab workloads list)')
        default_wl = None
    if default_wl and default_cmd:
        ck.add(("benchmark",), "[benchmark] has both workload and command", "keep one of them")
    bparams = ck.table(bench.get("params", {}), ("benchmark", "params"),
                       "write params = { n = 1 }") or {}
    # typed, not bool(): shell = "false" is a non-empty string, and would turn the shell ON.
    bshell = ck.typed(bench, "shell", (bool,), "true or false", ("benchmark",)) or False
    if c is None:
        # One implicit configuration: the benchmark as it is.
        if not (default_wl or default_cmd):
            ck.add((), "the suite has no benchmark and no configurations",
                   'add [benchmark] with workload = "eh/cpp", or [configurations.NAME] tables')
            return []
        return [ConfigSpec(name="default", line=ck.lines.line("benchmark"), workload=default_wl,
                           command=default_cmd, shell=bshell, params=dict(bparams))]
    if not isinstance(c, dict) or not c:
        ck.add(("configurations",), "'configurations' must hold at least one table",
               'write [configurations.cpp] with workload = "eh/cpp"')
        return []
    out: list[ConfigSpec] = []
    for name, t in c.items():
        path = ("configurations", name)
        if not isinstance(t, dict):
            ck.add(path, f"configuration '{name}' must be a table",
                   f'write [configurations.{name}] with workload = "..."')
            continue
        ck.keys(t, CONFIG_KEYS, path, f"[configurations.{name}]")
        cfg = ConfigSpec(name=name, line=ck.lines.line(*path))
        wl = ck.typed(t, "workload", (str,), "a workload name", path)
        cmd = None
        if "command" in t:
            cmd = _argv(t["command"])
            if cmd is None or not cmd:
                ck.add(path + ("command",), *_argv_problem("command", t["command"]))
        if wl and cmd:
            ck.add(path, f"configuration '{name}' has both workload and command",
                   "keep one of them")
        if not wl and not cmd:
            wl, cmd = default_wl, default_cmd
        if not wl and not cmd:
            ck.add(path, f"configuration '{name}' has nothing to run",
                   'give it workload = "eh/cpp" or command = "...", or add a [benchmark]')
        cfg.workload, cfg.command = wl, cmd
        own_shell = ck.typed(t, "shell", (bool,), "true or false", path)
        cfg.shell = bshell if own_shell is None else own_shell
        for key in ("prefix", "flags", "build"):
            if key in t:
                v = _argv(t[key])
                if v is None:
                    ck.add(path + (key,), *_argv_problem(key, t[key]))
                elif key == "prefix":
                    cfg.prefix = v
                elif key == "flags":
                    cfg.flags = v
                else:
                    cfg.build = v
        cfg.binary = ck.typed(t, "binary", (str,), "a path", path)
        cfg.description = ck.typed(t, "description", (str,), "a string", path) or ""
        env = t.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            ck.add(path + ("env",), "'env' must be a table of strings",
                   'write env = { NAME = "value" } (quote numbers)')
        else:
            cfg.env = dict(env)
        params = ck.table(t.get("params", {}), path + ("params",), "write params = { n = 1 }")
        if params is not None:
            cfg.params = {**bparams, **params}
        out.append(cfg)
    return out


def _report(r: dict[str, Any], ck: _Checker) -> dict[str, Any]:
    """The [report] table's settings that are valid, by key."""
    out: dict[str, Any] = {}
    ck.typed_into(out, r, ("x", "scaling", "title"), (str,), "a string", ("report",))
    for key in ("log_x", "log_y"):
        if key in r:
            v = r[key]
            if v not in (True, False, "auto"):
                ck.add(("report", key), f"'{key}' must be true, false or \"auto\"",
                       f'write {key} = "auto"')
            else:
                out[key] = v
    if "metrics" in r:
        v = r["metrics"]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            ck.add(("report", "metrics"), "'metrics' must be a list of metric names",
                   'write metrics = ["ns_per_op"]')
        else:
            out["metrics"] = v
    if "kinds" in r:
        k = ck.table(r["kinds"], ("report", "kinds"),
                     'write kinds = { param = "kind", a = "hardware", b = "software" }',
                     KINDS_KEYS, "[report.kinds]")
        if k is not None:
            if not all(isinstance(k.get(x), str) for x in ("param", "a", "b")):
                ck.add(("report", "kinds"), "'kinds' needs param, a and b as strings",
                       'write kinds = { param = "kind", a = "hardware", b = "software" }')
            else:
                out["kinds"] = dict(k)
    return out


def _cross_check(suite: Suite, ck: _Checker) -> None:
    names = [c.name for c in suite.configurations]
    runs = suite.measure.get("runs")
    if runs is not None and runs >= MIN_RUNS:  # below MIN_RUNS: labelled "too few runs"
        why = check_estimator_runs(parse_estimator(suite.estimator), runs)
        if why:
            ck.add(("suite", "estimator"), f"estimator {why}",
                   "raise [measure] runs or choose a lighter trim")
    if suite.baseline:
        if suite.baseline not in names:
            close = difflib.get_close_matches(suite.baseline, names, n=1)
            ck.add(("suite", "baseline"), f"baseline '{suite.baseline}' is not a configuration",
                   f"did you mean '{close[0]}'?" if close else
                   f"name one of: {', '.join(names)}")
    elif len(names) > 1:
        ck.add(("suite",), "the suite has several configurations but no baseline",
               f'add baseline = "{names[0]}" to [suite]')
    elif names:
        suite.baseline = names[0]
    axis_names = {a.name for a in suite.axes}
    for e in suite.exclusions:
        for c in e.configurations or []:
            if c not in names:
                ck.add(("matrix", "exclude"), f"exclusion names configuration '{c}', "
                       "which the suite does not define", f"use one of: {', '.join(names)}")
    for cfg in suite.configurations:
        overlap = axis_names & set(cfg.params)
        for p in sorted(overlap):
            ck.add(("configurations", cfg.name, "params"),
                   f"parameter '{p}' is both a matrix axis and a fixed parameter of "
                   f"'{cfg.name}'", f"remove '{p}' from one of them")
        if cfg.command is None:
            continue
        known = axis_names | ck.refused_axes | set(cfg.params) | BUILTIN_PLACEHOLDERS
        texts = list(cfg.command) + list(cfg.flags) + list(cfg.env.values())
        for t in texts:
            for ph in PLACEHOLDER.findall(t):
                if ph not in known:
                    close = difflib.get_close_matches(ph, sorted(known), n=1)
                    key = "command" if any(ph in x for x in cfg.command) else "flags"
                    where = (("configurations", cfg.name, key)
                             if cfg.line != ck.lines.line("benchmark") else ("benchmark",))
                    if _defined_in_benchmark(cfg, ck):
                        where = ("benchmark", "command")
                    ck.add(where,
                           f"placeholder {{{ph}}} in the command of '{cfg.name}' is not a "
                           "matrix parameter or fixed parameter",
                           (f"did you mean {{{close[0]}}}? " if close else "") +
                           f"add {ph} to [matrix] or params (write {{{{ }}}} for a literal brace)")
        if cfg.binary and "{binary}" not in " ".join(cfg.command):
            ck.add(("configurations", cfg.name, "binary"),
                   f"configuration '{cfg.name}' sets binary but its command has no {{binary}}",
                   "put {binary} in the command template where the program goes")
    kinds = suite.report.get("kinds")
    if kinds and kinds["param"] not in {a.name for a in suite.axes}:
        close = difflib.get_close_matches(kinds["param"], [a.name for a in suite.axes], n=1)
        ck.add(("report", "kinds"),
               f"[report] kinds compares '{kinds['param']}', which is not a [matrix] parameter",
               (f"did you mean '{close[0]}'? " if close else "") +
               "name a parameter of [matrix] (its two values as a and b)")
    elif kinds:
        axis = next(a for a in suite.axes if a.name == kinds["param"])
        missing = [v for v in (kinds["a"], kinds["b"])
                   if not axis.from_manifest and v not in [str(x) for x in axis.values]]
        if missing:
            ck.add(("report", "kinds"),
                   f"[report] kinds: {', '.join(map(repr, missing))} is not a value of "
                   f"[matrix] {axis.name} ({', '.join(map(str, axis.values))})",
                   "give a and b from the matrix's values")
    if suite.configurations and suite.axes:
        if not any(True for _ in expand_matrix(suite, None)) and not any(
                a.from_manifest for a in suite.axes):
            ck.add(("matrix", "exclude"), "the matrix is empty: the exclusions remove every cell",
                   "loosen or remove entries of exclude")


def _defined_in_benchmark(cfg: ConfigSpec, ck: _Checker) -> bool:
    return ("configurations", cfg.name, "command") not in ck.lines.paths


def substitute(tokens: list[str], values: dict[str, Any]) -> list[str]:
    """Fill {name} placeholders in each token; {{ and }} are literal braces."""
    out = []
    for t in tokens:
        t2 = PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values
                             else m.group(0), t)
        out.append(t2.replace("{{", "{").replace("}}", "}"))
    return out


def expand_matrix(suite: Suite, config: str | None) -> Iterator[dict[str, Any]]:
    """Every cell of the matrix (product of the axes) that no exclusion removes."""
    axes = [a for a in suite.axes if not a.from_manifest or a.values]
    names = [a.name for a in axes]
    for combo in itertools.product(*(a.values for a in axes)):
        params = dict(zip(names, combo, strict=True))
        if any(e.excludes(config, params) for e in suite.exclusions
               if (e.configurations is None) or config is not None):
            continue
        yield params
