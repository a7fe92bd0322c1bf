"""The metrics a measurement can produce: the registry's (perflab.metrics) and the ones a
workload declares in its manifest ([metrics.NAME])."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from perflab.errors import PerflabError
from perflab.metrics import (
    BUILTIN_METRICS,
    DERIVED_METRICS,
    MetricInfo,
    declared_metric,
    in_family,
    named_metric,
    perflab_defines,
)
from perflab.model import ResultSet

if TYPE_CHECKING:
    from perflab.workloads.manifest import MetricDecl


def metric_info(name: str, benchmark: str, region_used: bool) -> MetricInfo:
    """What the registry knows of ``name`` (named_metric), or what the workload declares of a
    key of its own ([metrics.NAME] of its manifest)."""
    decl = None if perflab_defines(name) else _declared_metric(benchmark, name)
    if decl is not None:
        return declared_metric(name, benchmark, decl.unit, decl.direction, decl.help)
    return named_metric(name, benchmark, region_used)



def known_metrics(benchmarks: list[str]) -> dict[str, MetricInfo]:
    """The metrics a measurement of these benchmarks can produce, as far as is known before it
    runs: the collectors', the derived ones and what each workload declares."""
    out = dict(BUILTIN_METRICS)
    for b in dict.fromkeys(benchmarks):
        for name in (*DERIVED_METRICS, *_declared(b)):
            out.setdefault(name, metric_info(name, b, False))
    return out


def _declared(benchmark: str) -> dict[str, MetricDecl]:
    """The [metrics.*] of the workload named `benchmark` ({} for a command or a broken one);
    a command's name reads no manifest (nor imports the workload registry)."""
    if "/" not in benchmark or " " in benchmark:
        return {}
    from perflab.workloads import registry

    return _declared_metrics(benchmark, str(registry.workloads_root()))


@functools.lru_cache(maxsize=64)
def _declared_metrics(benchmark: str, root: str) -> dict[str, MetricDecl]:
    """_declared's, kept per workload and workloads root."""
    from perflab.workloads import registry

    try:
        return dict(registry.get(benchmark).metrics)
    except PerflabError:
        return {}


def _declared_metric(benchmark: str, name: str) -> MetricDecl | None:
    return _declared(benchmark).get(name)



def family_members(rs: ResultSet, family: str) -> list[str]:
    """The metrics of ``rs`` in ``family``: the metric itself, or a harness run's
    per-benchmark metrics of it (metrics.in_family)."""
    return [m for m in rs.metrics if in_family(m, family)]

