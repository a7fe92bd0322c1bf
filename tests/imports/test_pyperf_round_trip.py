"""perflab's --export-pyperf read back by `perflab import`: each benchmark keeps the metric it
was exported from (metadata perflab_metric and perflab_unit), in that metric's unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflab.imports import import_file
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run, Settings
from perflab.reports.export.pyperf import result_to_pyperf

pytestmark = pytest.mark.unit


def _result(metric: MetricInfo, samples: list[float]) -> ResultSet:
    rs = ResultSet(kind="stat", settings=Settings(primary_metric=metric.name))
    rs.metrics = {metric.name: metric, "wall_time": BUILTIN_METRICS["wall_time"]}
    cfg = Configuration(name="./prog", command=["./prog", "--n", "3"], is_baseline=True)
    cfg.runs = [Run(seq=i, values={metric.name: v, "wall_time": 0.5 + i})
                for i, v in enumerate(samples)]
    rs.configurations = [cfg]
    return rs


@pytest.mark.parametrize(("metric", "samples"), [
    (BUILTIN_METRICS["task_clock"], [0.0123, 0.0125, 0.0121]),
    (MetricInfo("ns_per_op", "ns", "workload JSON (x)"), [41.5, 40.25, 43.0]),
    (MetricInfo("cpu_ns_per_op", "us", "workload JSON (x)"), [1.5, 1.25, 1.75]),
])
def test_the_exported_metric_comes_back(tmp_path: Path, metric: MetricInfo,
                                        samples: list[float]) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps(result_to_pyperf(_result(metric, samples))))
    back = import_file(f, None)
    assert set(back.metrics) == {metric.name}
    assert back.metrics[metric.name].unit == metric.unit
    assert back.metrics[metric.name].direction == "lower"
    (cfg,) = back.configurations
    assert cfg.samples(metric.name) == pytest.approx(samples, rel=1e-12)
    assert cfg.command == ["./prog", "--n", "3"]


def test_an_export_without_its_unit_takes_the_metrics_usual_unit(tmp_path: Path) -> None:
    doc = result_to_pyperf(_result(BUILTIN_METRICS["task_clock"], [0.25, 0.5]))
    del doc["benchmarks"][0]["metadata"]["perflab_unit"]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(doc))
    back = import_file(f, "pyperf")
    assert back.configurations[0].samples("task_clock") == [0.25, 0.5]


def test_pyperf_s_own_files_are_read_as_before(tmp_path: Path) -> None:
    fix = Path(__file__).parents[1] / "fixtures" / "history" / "pyperf-timeit.json"
    raw = json.loads(fix.read_text())
    back = import_file(fix, None)
    assert set(back.metrics) == {"ns_per_op"}
    values = [v * 1e9 for r in raw["benchmarks"][0]["runs"] for v in r.get("values", [])]
    assert back.configurations[0].samples("ns_per_op") == pytest.approx(values)
