"""perflab's own ``--export-json`` (schema perflab-result/1, docs/export-schema.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perflab.imports.common import bad, is_num, mtime, read_json
from perflab.metrics import (
    BUILTIN_METRICS,
    MetricInfo,
    former_unit_divisor,
    in_today_unit,
    metric_direction,
)
from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

FORMAT = "perflab"


def sniff(head: str) -> bool:
    return '"schema": "perflab-result/' in head


def read(path: Path, benchmark: str | None) -> ResultSet:
    """perflab's own ``--export-json`` (schema perflab-result/1, docs/export-schema.md): the
    samples of each configuration and metric become runs again, run i holding every metric's
    i-th sample (the export keeps samples in run order).  The source stays perflab."""
    data = read_json(path, "perflab")
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith(
            "perflab-result/") or not isinstance(data.get("configurations"), list):
        raise bad(path, "perflab", "no 'schema': 'perflab-result/1' with 'configurations'")
    # The exported settings come back (primary metric, threshold, correction, looks,
    # interleaving, estimator), so the imported result is judged as it was when it was made.
    stored = data.get("settings")
    settings = Settings.from_dict(stored if isinstance(stored, dict) else None)
    settings.import_format = "perflab"
    settings.owner = None
    settings.file = str(path)
    settings.extra["original"] = {"id": data.get("id"), "kind": data.get("kind")}
    rs = ResultSet(kind="import", created_at=float(data.get("created_at") or mtime(path)),
                   label=str(data.get("label") or f"perflab {path.name}"),
                   fingerprint=Fingerprint.from_json(data.get("environment")), settings=settings,
                   notes=[str(n) for n in data.get("notes") or []])
    seq = 0
    for i, c in enumerate(data["configurations"]):
        if not isinstance(c, dict) or not isinstance(c.get("metrics"), dict):
            raise bad(path, "perflab", f"configuration {i + 1} has no 'metrics'")
        name = str(c.get("name") or f"configuration {i + 1}")
        cfg = Configuration(name=name, command=[str(a) for a in c.get("command") or [name]],
                            benchmark=benchmark or str(c.get("benchmark") or name),
                            params=dict(c.get("params") or {}), cell=str(c.get("cell") or ""),
                            is_baseline=bool(c.get("is_baseline")), commit=c.get("commit"))
        columns: dict[str, list[Any]] = {}
        for m, v in c["metrics"].items():
            samples = v.get("samples") if isinstance(v, dict) else None
            if not isinstance(samples, list):
                raise bad(path, "perflab", f"'{name}' metric '{m}' has no 'samples'")
            unit = str(v.get("unit", ""))
            # An export of an older perflab (task_clock in ms): stored in today's unit, so its
            # history compares like with like (the store's migration does the same).
            divisor = former_unit_divisor(m, unit)
            if divisor is not None:
                unit = BUILTIN_METRICS[m].unit
                samples = [in_today_unit(x, divisor) if is_num(x) else x for x in samples]
            columns[m] = samples
            if m not in rs.metrics:
                rs.metrics[m] = MetricInfo(m, unit, str(v.get("source", "")),
                                           deterministic=bool(v.get("deterministic")),
                                           direction=metric_direction(m))
        for k in range(max((len(xs) for xs in columns.values()), default=0)):
            values = {m: float(xs[k]) for m, xs in columns.items()
                      if k < len(xs) and is_num(xs[k]) and math.isfinite(xs[k])}
            cfg.runs.append(Run(seq=seq, values=values))
            seq += 1
        if not cfg.measured_runs():
            raise bad(path, "perflab", f"configuration '{name}' has no samples")
        if c.get("failed_runs"):
            # The export keeps the samples of successful runs only: which round a failed run
            # left out is not known, so its samples cannot be paired by round again.
            settings.interleaved = False
        rs.configurations.append(cfg)
    if not rs.configurations:
        raise bad(path, "perflab", "no configurations")
    return rs
