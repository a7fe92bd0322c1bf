"""JMH JSON imports: the real files JMH 1.37 wrote (tests/fixtures/imports/README.md), and bad
files refused in one line naming the field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from import_helpers import refused, stores_nothing
from perflab.imports import detect_format, import_file, jmh
from perflab.metrics import ns_in, unit_kind

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "imports" / "jmh"


@pytest.mark.parametrize(("name", "metric", "unit", "direction"), [
    ("jmh-avgt.json", "ns_per_op", "ns", "lower"),
    ("jmh-thrpt.json", "ops_per_s", "ops/s", "higher"),
])
def test_a_real_jmh_file(name: str, metric: str, unit: str, direction: str) -> None:
    raw = json.loads((FIX / name).read_text())
    assert detect_format(FIX / name) == "jmh"
    rs = import_file(FIX / name, None)
    assert rs.source == "jmh" and rs.settings.interleaved is False
    assert [c.name for c in rs.configurations] == [
        f"{b['benchmark']}(size={b['params']['size']})" for b in raw]
    assert rs.metrics[metric].unit == unit and rs.metrics[metric].direction == direction
    assert rs.metrics["bytes_per_op"].unit == "B"
    assert rs.metrics["bytes_per_op"].direction == "lower"
    for cfg, b in zip(rs.configurations, raw, strict=True):
        assert cfg.params == {"size": b["params"]["size"]}
        # one sample per fork and measurement iteration: -f 2 -i 3
        samples = [v for fork in b["primaryMetric"]["rawData"] for v in fork]
        assert len(samples) == 6
        assert cfg.samples(metric) == pytest.approx(samples)  # ns/op and ops/s as written
        norm = b["secondaryMetrics"]["gc.alloc.rate.norm"]["rawData"]
        assert cfg.samples("bytes_per_op") == pytest.approx([v for f in norm for v in f])
    concat = rs.configurations[1].samples("bytes_per_op")
    assert 250 < min(concat) and max(concat) < 400  # a 256-char string and its copy
    fp = rs.fingerprint
    assert fp.extra["jdk_version"] == raw[0]["jdkVersion"]
    assert fp.extra["vm_name"] == raw[0]["vmName"] and fp.extra["jvm"] == raw[0]["jvm"]
    assert fp.runtimes and set(fp.runtimes) == {c.name for c in rs.configurations}
    assert raw[0]["vmVersion"] in fp.runtimes[rs.configurations[0].name]


def test_units_become_perflab_units() -> None:
    assert jmh.score_metric("us/op") == ("ns_per_op", 1e3)
    assert jmh.score_metric("s/op") == ("ns_per_op", 1e9)
    assert jmh.score_metric("ops/ms") == ("ops_per_s", 1e3)
    assert jmh.score_metric("ops/us") == ("ops_per_s", 1e6)
    assert jmh.score_metric("ops/s") == ("ops_per_s", 1.0)
    assert jmh.score_metric("MB/sec") is None
    # JMH's longer TimeUnit labels are read from harness output, never a band's unit
    assert jmh.score_metric("min/op") == ("ns_per_op", 60e9)
    assert jmh.score_metric("ops/day") == ("ops_per_s", 1e9 / 86400e9)
    assert ns_in("µs") == 1e3 and ns_in("min") is None and unit_kind("min") is None


def _edited(tmp_path: Path, edit: Callable[[Any], Any]) -> Path:
    raw = json.loads((FIX / "jmh-avgt.json").read_text())
    edit(raw)
    out = tmp_path / "bad-jmh.json"
    out.write_text(json.dumps(raw))
    return out


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r[1]["primaryMetric"].pop("rawData"), "[1].primaryMetric.rawData is missing"),
    (lambda r: r[2]["primaryMetric"].update(scoreUnit=3), "[2].primaryMetric.scoreUnit is the "
     "number 3, not text"),
    (lambda r: r[0]["primaryMetric"]["rawData"][1].__setitem__(2, "fast"),
     "[0].primaryMetric.rawData[1][2] is 'fast', not a number"),
    (lambda r: r[3].pop("benchmark"), "[3].benchmark is missing"),
    (lambda r: r[0]["primaryMetric"].update(scoreUnit="MB/sec"), "[0].primaryMetric.scoreUnit "
     "is 'MB/sec'"),
])
def test_a_bad_field_is_named_and_nothing_is_stored(
        tmp_path: Path, edit: Callable[[Any], Any], field: str) -> None:
    bad = _edited(tmp_path, edit)
    refused(bad, None, field)
    stores_nothing(tmp_path / "r.sqlite", str(FIX / "jmh-thrpt.json"), str(bad))
