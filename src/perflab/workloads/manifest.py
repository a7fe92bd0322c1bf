"""Workload manifests (``workloads/<family>/<runtime>/workload.toml``): parsing and validation.

The format is documented in docs/workload-manifest.md.  Every mistake in a manifest becomes one
PerflabError line naming the file, the key and the fix, so a typo never surfaces as a traceback
or a silently ignored setting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError

MANIFEST = "workload.toml"
PARAM_TYPES = ("int", "float", "str", "bool")

_TOP_REQUIRED = ("name", "family", "runtime", "description", "run")
_TOP_OPTIONAL = ("requires", "build", "outputs", "primary", "region_symbol", "install_hint",
                 "timeout")
_PARAM_KEYS = ("type", "default", "values", "choices", "min", "max", "help", "needs", "only")
_METRIC_KEYS = ("unit", "direction", "help")
METRIC_DIRECTIONS = ("lower", "higher", "none")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One parameter a workload takes as ``--name=value``."""

    name: str
    type: str
    default: Any
    values: tuple[Any, ...] = ()  # the sweep a study uses (suites pick it up)
    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: float | None = None
    help: str = ""
    # What each value needs to run, beyond the manifest's requires: executables on PATH, or
    # "@coreclr" (a runtime perflab locates itself): {"coreclr": ("@coreclr",)}.
    needs: dict[Any, tuple[str, ...]] = field(default_factory=dict)
    # (parameter, value): a knob that exists only there (e.g. ("runtime", "coreclr")); any
    # value but the default is refused elsewhere.
    only: tuple[str, Any] | None = None

    def allowed(self) -> str:
        """The allowed values in words, for error messages and `perflab workloads list`."""
        if self.choices is not None:
            return "one of " + ", ".join(format_value(c) for c in self.choices)
        if self.type == "bool":
            return "true or false"
        lo = "-inf" if self.min is None else format_value(self.min)
        hi = "inf" if self.max is None else format_value(self.max)
        if self.type in ("int", "float"):
            return f"{'an integer' if self.type == 'int' else 'a number'} in [{lo}, {hi}]"
        return "any string"

    def convert(self, raw: Any, workload: str) -> Any:
        """The typed value of ``raw`` (a string from the command line, or an already typed
        value from a suite), or a PerflabError naming the parameter and the allowed values."""
        try:
            value = _coerce(self.type, raw)
        except ValueError:
            raise PerflabError(
                f"{workload}: parameter {self.name}={raw!r} is not {_article(self.type)}",
                f"give {self.allowed()}",
            ) from None
        if self.choices is not None and value not in self.choices:
            raise PerflabError(f"{workload}: parameter {self.name}={format_value(value)} is not "
                               "allowed", f"give {self.allowed()}")
        if self.type in ("int", "float"):
            if (self.min is not None and value < self.min) or (
                    self.max is not None and value > self.max):
                raise PerflabError(f"{workload}: parameter {self.name}={format_value(value)} is "
                                   "out of range", f"give {self.allowed()}")
        return value


def _article(t: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "a boolean"}.get(t, "a string")


def _coerce(t: str, raw: Any) -> Any:
    """Convert to the parameter type; ValueError when it does not fit."""
    if t == "bool":
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        raise ValueError(raw)
    if isinstance(raw, bool):  # bool is an int subclass: True is not a depth
        raise ValueError(raw)
    if t == "int":
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float):
            if raw.is_integer():
                return int(raw)
            raise ValueError(raw)
        return int(str(raw).strip(), 10)
    if t == "float":
        v = float(raw) if isinstance(raw, int | float) else float(str(raw).strip())
        if not math.isfinite(v):
            raise ValueError(raw)
        return v
    if not isinstance(raw, str | int | float):
        raise ValueError(raw)
    return str(raw)


def format_value(v: Any) -> str:
    """A value as the workload receives it on its command line."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass(frozen=True)
class MetricDecl:
    """What a workload says about one key of its JSON line: its unit and which way is better."""

    name: str
    unit: str = ""
    direction: str = "lower"  # lower | higher | none (bookkeeping: never a regression)
    help: str = ""


@dataclass
class Manifest:
    """The validated content of one workload.toml."""

    path: Path
    name: str
    family: str
    runtime: str
    description: str
    run: list[str]
    requires: list[str] = field(default_factory=list)
    build: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    primary: str = "ns_per_op"
    region_symbol: str | None = None
    install_hint: str = ""
    timeout: float = 600.0  # seconds a build may take
    params: dict[str, Param] = field(default_factory=dict)
    metrics: dict[str, MetricDecl] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.path.parent


def _bad(path: Path, problem: str, fix: str) -> PerflabError:
    return PerflabError(f"{path}: {problem}", fix)


def _str_list(path: Path, data: dict[str, Any], key: str, required: bool = False) -> list[str]:
    v = data.get(key)
    if v is None:
        if required:
            raise _bad(path, f"missing key '{key}'", f'add {key} = ["..."]')
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _bad(path, f"'{key}' must be a list of strings", f'write {key} = ["a", "b"]')
    if required and not v:
        raise _bad(path, f"'{key}' is empty", f'give at least one element: {key} = ["..."]')
    return list(v)


def _check_value(path: Path, pname: str, t: str, key: str, v: Any) -> Any:
    try:
        if t in ("int", "float") and isinstance(v, bool):
            raise ValueError(v)
        if t == "int" and not isinstance(v, int):
            raise ValueError(v)
        if t == "float" and not isinstance(v, int | float):
            raise ValueError(v)
        if t == "bool" and not isinstance(v, bool):
            raise ValueError(v)
        if t == "str" and not isinstance(v, str):
            raise ValueError(v)
    except ValueError:
        raise _bad(path, f"params.{pname}.{key} = {v!r} is not of type {t}",
                   f"write a {t} value (or change params.{pname}.type)") from None
    return float(v) if t == "float" else v


def _check_table(path: Path, where: str, spec: Any, keys: Sequence[str], how: str) -> None:
    """``where`` (e.g. params.depth) is a table with only ``keys``; else one clear line."""
    if not isinstance(spec, dict):
        raise _bad(path, f"{where} must be a table", how)
    unknown = sorted(set(spec) - set(keys))
    if unknown:
        raise _bad(path, f"{where}: unknown key '{unknown[0]}'", f"use only {', '.join(keys)}")


def _parse_param(path: Path, pname: str, spec: Any) -> Param:
    _check_table(path, f"params.{pname}", spec, _PARAM_KEYS,
                 f"write [params.{pname}] with type and default")
    t = spec.get("type")
    if t not in PARAM_TYPES:
        raise _bad(path, f"params.{pname}.type = {t!r} is not a parameter type",
                   f"write type = one of {', '.join(PARAM_TYPES)}")
    if "default" not in spec:
        raise _bad(path, f"params.{pname} has no default", f"add default = ... to "
                   f"[params.{pname}]")
    default = _check_value(path, pname, t, "default", spec["default"])
    choices: tuple[Any, ...] | None = None
    if "choices" in spec:
        if not isinstance(spec["choices"], list) or not spec["choices"]:
            raise _bad(path, f"params.{pname}.choices must be a non-empty list",
                       'write choices = ["a", "b"]')
        choices = tuple(_check_value(path, pname, t, "choices", c) for c in spec["choices"])
    lo = hi = None
    for key in ("min", "max"):
        if key in spec:
            if t not in ("int", "float"):
                raise _bad(path, f"params.{pname}.{key} applies only to int and float",
                           f"remove {key} or use choices")
            v = _check_value(path, pname, t, key, spec[key])
            lo, hi = (v, hi) if key == "min" else (lo, v)
    if lo is not None and hi is not None and lo > hi:
        raise _bad(path, f"params.{pname}: min {lo} is greater than max {hi}", "swap them")
    values: tuple[Any, ...] = ()
    if "values" in spec:
        if not isinstance(spec["values"], list):
            raise _bad(path, f"params.{pname}.values must be a list", "write values = [...]")
        values = tuple(_check_value(path, pname, t, "values", v) for v in spec["values"])
    h = spec.get("help", "")
    if not isinstance(h, str):
        raise _bad(path, f"params.{pname}.help must be a string", 'write help = "..."')
    needs = _parse_needs(path, pname, spec.get("needs", {}), choices)
    only: tuple[str, Any] | None = None
    if "only" in spec:
        other, sep, val = str(spec["only"]).partition("=")
        if not isinstance(spec["only"], str) or not sep or not other.strip():
            raise _bad(path, f"params.{pname}.only must be 'PARAM=VALUE'",
                       'write only = "runtime=coreclr"')
        only = (other.strip(), val.strip())
    p = Param(name=pname, type=t, default=default, values=values, choices=choices, min=lo,
              max=hi, help=h, needs=needs, only=only)
    for key, vs in (("default", (default,)), ("values", values)):
        for v in vs:
            try:
                p.convert(v, "")
            except PerflabError as e:
                raise _bad(path, f"params.{pname}.{key} = {format_value(v)} is not allowed by "
                           "its own choices/min/max", e.fix) from None
    return p


def _parse_needs(path: Path, pname: str, raw: Any,
                 choices: tuple[Any, ...] | None) -> dict[Any, tuple[str, ...]]:
    """params.NAME.needs: {value = ["exe", "@coreclr"]}, each value one of the choices."""
    how = f'write needs = {{ VALUE = ["program"] }} in [params.{pname}]'
    if not isinstance(raw, dict):
        raise _bad(path, f"params.{pname}.needs must be a table", how)
    out: dict[Any, tuple[str, ...]] = {}
    for value, tools in raw.items():
        if choices is None or value not in choices:
            raise _bad(path, f"params.{pname}.needs names {value!r}, which is not one of its "
                       "choices", f"list {value!r} in choices, or remove it from needs")
        if not isinstance(tools, list) or not all(isinstance(x, str) and x for x in tools):
            raise _bad(path, f"params.{pname}.needs.{value} must be a list of program names",
                       how)
        out[value] = tuple(tools)
    return out


def _check_only(path: Path, params: dict[str, Param]) -> dict[str, Param]:
    """Every params.NAME.only names another parameter and one of its values (typed here)."""
    out = dict(params)
    for p in params.values():
        if p.only is None:
            continue
        other, raw = p.only
        target = params.get(other)
        if target is None or other == p.name:
            raise _bad(path, f"params.{p.name}.only names {other!r}, which is not another "
                       "parameter", f"write only = \"PARAM=VALUE\" with one of "
                       f"{', '.join(n for n in params if n != p.name) or 'no parameter'}")
        try:
            typed = target.convert(raw, "")
        except PerflabError as e:
            raise _bad(path, f"params.{p.name}.only = {other}={raw} is not a value of {other}",
                       e.fix) from None
        out[p.name] = replace(p, only=(other, typed))
    return out


def _parse_metric(path: Path, mname: str, spec: Any) -> MetricDecl:
    _check_table(path, f"metrics.{mname}", spec, _METRIC_KEYS,
                 f'write [metrics.{mname}] with unit = "KiB" and direction = "lower"')
    for key in _METRIC_KEYS:
        if key in spec and not isinstance(spec[key], str):
            raise _bad(path, f"metrics.{mname}.{key} must be a string", f'write {key} = "..."')
    direction = spec.get("direction", "lower")
    if direction not in METRIC_DIRECTIONS:
        raise _bad(path, f"metrics.{mname}.direction = {direction!r} is not a direction",
                   f"write direction = one of {', '.join(METRIC_DIRECTIONS)}")
    return MetricDecl(name=mname, unit=spec.get("unit", ""), direction=direction,
                      help=spec.get("help", ""))


def load_manifest(path: Path) -> Manifest:
    """Parse and validate one workload.toml; PerflabError (one line: file, problem, fix)."""
    # Imported here: the runner imports this module for MetricDecl, and tomllib's import was
    # 14 ms of CPU (python -c "import tomllib" 28 ms, python -c pass 13 ms) of every `stat`,
    # which reads no manifest unless it runs a workload.
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise _bad(path, f"invalid TOML: {e}", "fix the syntax (see docs/workload-manifest.md)"
                   ) from None
    except OSError as e:
        raise _bad(path, f"cannot read: {e.strerror}", "check the file's permissions") from None
    unknown = sorted(set(data) - set(_TOP_REQUIRED) - set(_TOP_OPTIONAL) - {"params", "metrics"})
    if unknown:
        raise _bad(path, f"unknown key '{unknown[0]}'",
                   "use only the keys of docs/workload-manifest.md (check the spelling)")
    for key in ("name", "family", "runtime", "description"):
        v = data.get(key)
        if not isinstance(v, str) or not v.strip():
            raise _bad(path, f"missing or empty '{key}'", f'add {key} = "..."')
    family, runtime = data["family"], data["runtime"]
    if data["name"] != f"{family}/{runtime}":
        raise _bad(path, f"name = {data['name']!r} must be '<family>/<runtime>'",
                   f'write name = "{family}/{runtime}"')
    expected = (path.parent.parent.name, path.parent.name)
    if (family, runtime) != expected:
        raise _bad(path, f"family/runtime {family}/{runtime} do not match the directory "
                   f"{expected[0]}/{expected[1]}",
                   f'write family = "{expected[0]}" and runtime = "{expected[1]}", or move it')
    for key in ("primary", "region_symbol", "install_hint"):
        if key in data and not isinstance(data[key], str):
            raise _bad(path, f"'{key}' must be a string", f'write {key} = "..."')
    timeout = data.get("timeout", 600.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise _bad(path, "'timeout' must be a positive number of seconds", "write timeout = 600")
    build = _str_list(path, data, "build")
    outputs = _str_list(path, data, "outputs")
    if outputs and not build:
        raise _bad(path, "'outputs' without 'build'", "add build = [...] or remove outputs")
    for out in outputs:
        if Path(out).is_absolute() or ".." in Path(out).parts:
            raise _bad(path, f"output {out!r} is outside the workload's directory",
                       "list outputs relative to the workload's directory (e.g. build/x)")
    params_raw = data.get("params", {})
    if not isinstance(params_raw, dict):
        raise _bad(path, "'params' must be tables [params.NAME]", "write [params.depth] ...")
    params = {n: _parse_param(path, n, s) for n, s in params_raw.items()}
    params = _check_only(path, params)
    metrics_raw = data.get("metrics", {})
    if not isinstance(metrics_raw, dict):
        raise _bad(path, "'metrics' must be tables [metrics.NAME]",
                   'write [metrics.rss_kib] unit = "KiB" direction = "lower"')
    metrics = {n: _parse_metric(path, n, s) for n, s in metrics_raw.items()}
    return Manifest(
        path=path, name=data["name"], family=family, runtime=runtime,
        description=data["description"].strip(), run=_str_list(path, data, "run", required=True),
        requires=_str_list(path, data, "requires"), build=build, outputs=outputs,
        primary=data.get("primary", "ns_per_op"), region_symbol=data.get("region_symbol"),
        install_hint=data.get("install_hint", ""), timeout=float(timeout), params=params,
        metrics=metrics,
    )
