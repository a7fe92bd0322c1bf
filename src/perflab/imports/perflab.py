"""perflab's own ``--export-json`` (schema perflab-result/1, docs/export-schema.md)."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.imports.common import END, bad, is_num, json_events, mtime
from perflab.metrics import (
    BUILTIN_METRICS,
    MetricInfo,
    former_unit_divisor,
    in_today_unit,
    metric_direction,
)
from perflab.model import Configuration, Fingerprint, ResultSet, RunColumns, Settings

FORMAT = "perflab"


def sniff(head: str) -> bool:
    return '"schema": "perflab-result/' in head


def read(path: Path, benchmark: str | None) -> ResultSet:
    """perflab's own ``--export-json`` (schema perflab-result/1, docs/export-schema.md): the
    samples of each configuration and metric become runs again, run i holding every metric's
    i-th sample (the export keeps samples in run order).  The source stays perflab.  Read one
    configuration at a time (json_events), its samples streamed into columns (RunColumns)."""
    top: dict[str, Any] = {}
    configs: list[Configuration] = []
    failed = False  # a configuration had failed runs
    metrics: dict[str, MetricInfo] = {}
    c: dict[str, Any] = {}  # the configuration being read: its members but metrics
    meta: dict[str, dict[str, Any]] = {}  # its metrics' members but samples
    columns: dict[str, array[float]] = {}
    seq = 0
    for where, v, names in json_events(path, "perflab", _STREAMED):
        if where == "configurations[]/metrics/*/samples[]":
            columns.setdefault(names[0], array("d")).append(float(v) if is_num(v) else math.nan)
        elif where == "configurations[]/metrics/*/samples":
            columns.setdefault(names[0], array("d"))
            meta.setdefault(names[0], {})["samples"] = v is END
        elif where == "configurations[]/metrics/*" and v is not END:
            meta[names[0]] = {}  # no object: it has no samples
        elif where.startswith("configurations[]/metrics/*/"):
            meta.setdefault(names[0], {})[where.rsplit("/", 1)[1]] = v
        elif where == "configurations[]/metrics":
            c["metrics"] = v is END
        elif where.startswith("configurations[]/"):
            c[where.split("/", 1)[1]] = v
        elif where == "configurations[]":
            read_in = _Element(c if v is END else {}, meta, columns)
            cfg = _configuration(path, benchmark, read_in, len(configs), metrics, seq)
            seq += len(cfg.runs)
            failed = failed or bool(c.get("failed_runs"))
            configs.append(cfg)
            c, meta, columns = {}, {}, {}
        elif where == "configurations":
            top[where] = v is END
        elif where:
            top[where] = v
    if not str(top.get("schema", "")).startswith("perflab-result/") \
            or not top.get("configurations"):
        raise bad(path, "perflab", "no 'schema': 'perflab-result/1' with 'configurations'")
    return _result_set(path, top, configs, metrics, failed)


_STREAMED = ("configurations[]/metrics/*/samples[]",)


@dataclass(frozen=True)
class _Element:
    """One element of ``configurations`` as read: its members but metrics (``c``), its metrics'
    members but samples (``meta``), and their samples (``columns``)."""
    c: dict[str, Any]
    meta: dict[str, dict[str, Any]]
    columns: dict[str, array[float]]


def _configuration(path: Path, benchmark: str | None, element: _Element, i: int,
                   metrics: dict[str, MetricInfo], seq: int) -> Configuration:
    """The ``i``-th element of configurations, its runs numbered from ``seq``; its metrics'
    facts are added to ``metrics``."""
    c, meta, columns = element.c, element.meta, element.columns
    if c.get("metrics") is not True:
        raise bad(path, "perflab", f"configuration {i + 1} has no 'metrics'")
    name = str(c.get("name") or f"configuration {i + 1}")
    for m, v in meta.items():
        if v.get("samples") is not True:
            raise bad(path, "perflab", f"'{name}' metric '{m}' has no 'samples'")
        unit = str(v.get("unit", ""))
        # An export of an older perflab (task_clock in ms): stored in today's unit, so its
        # history compares like with like (the store's migration does the same).
        divisor = former_unit_divisor(m, unit)
        if divisor is not None:
            unit = BUILTIN_METRICS[m].unit
            col = columns[m]
            for k, x in enumerate(col):
                col[k] = in_today_unit(x, divisor) if math.isfinite(x) else x
        if m not in metrics:
            metrics[m] = MetricInfo(m, unit, str(v.get("source", "")),
                                    deterministic=bool(v.get("deterministic")),
                                    direction=metric_direction(m))
    cfg = Configuration(name=name, command=[str(a) for a in c.get("command") or [name]],
                        benchmark=benchmark or str(c.get("benchmark") or name),
                        params=dict(c.get("params") or {}), cell=str(c.get("cell") or ""),
                        is_baseline=bool(c.get("is_baseline")), commit=c.get("commit"),
                        runs=RunColumns.of_samples(columns, seq))
    if not cfg.measured_count():
        raise bad(path, "perflab", f"configuration '{name}' has no samples")
    return cfg


def _result_set(path: Path, top: dict[str, Any], configs: list[Configuration],
                metrics: dict[str, MetricInfo], failed: bool) -> ResultSet:
    # The exported settings come back (primary metric, threshold, correction, looks,
    # interleaving, estimator), so the imported result is judged as it was when it was made.
    stored = top.get("settings")
    settings = Settings.from_dict(stored if isinstance(stored, dict) else None)
    settings.import_format = "perflab"
    settings.owner = None
    settings.file = str(path)
    settings.extra["original"] = {"id": top.get("id"), "kind": top.get("kind")}
    if failed:
        # The export keeps the samples of successful runs only: which round a failed run
        # left out is not known, so its samples cannot be paired by round again.
        settings.interleaved = False
    rs = ResultSet(kind="import", created_at=float(top.get("created_at") or mtime(path)),
                   label=str(top.get("label") or f"perflab {path.name}"),
                   fingerprint=Fingerprint.from_json(top.get("environment")), settings=settings,
                   notes=[str(n) for n in top.get("notes") or []], metrics=metrics,
                   configurations=configs)
    if not rs.configurations:
        raise bad(path, "perflab", "no configurations")
    return rs
