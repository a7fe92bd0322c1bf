"""criterion.rs imports: the real output criterion 0.8.2 wrote
(tests/fixtures/imports/README.md), read from a sample.json, one benchmark's directory or the
whole target/criterion; bad files refused in one line naming the field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from import_helpers import refused, stores_nothing
from perflab.errors import PerflabError
from perflab.imports import detect_format, import_file

pytestmark = pytest.mark.unit

TARGET = Path(__file__).parents[1] / "fixtures" / "imports" / "criterion" / "target"
BENCH = TARGET / "criterion"


def _expected(new: Path) -> list[float]:
    raw = json.loads((new / "sample.json").read_text())
    return [t / n for n, t in zip(raw["iters"], raw["times"], strict=True)]


@pytest.mark.parametrize("given", [TARGET, BENCH])
def test_the_whole_target_directory(given: Path) -> None:
    rs = import_file(given, None)
    assert rs.source == "criterion" and rs.settings.interleaved is False
    assert [c.name for c in rs.configurations] == ["fib/iterative/20", "fib/iterative/40",
                                                   "sum_1000"]
    assert rs.configurations[0].params == {"group": "fib", "function": "iterative",
                                           "value": "20"}
    assert rs.configurations[2].params == {"group": "sum_1000"}
    for cfg in rs.configurations:
        samples = cfg.samples("ns_per_op")
        assert len(samples) == 20  # sample_size(20)
        assert samples == pytest.approx(_expected(BENCH / cfg.name / "new"))
    info = rs.metrics["ns_per_op"]
    assert (info.unit, info.direction, info.source) == ("ns", "lower", "criterion")
    # fib(40) loops twice as long as fib(20): the per-iteration times say so
    fib20, fib40 = (min(c.samples("ns_per_op")) for c in rs.configurations[:2])
    assert 1.3 < fib40 / fib20 < 4


def test_one_benchmark_directory_a_sample_and_its_benchmark_json() -> None:
    one = BENCH / "fib" / "iterative" / "40"
    for given in (one, one / "new" / "sample.json", one / "new" / "benchmark.json"):
        rs = import_file(given, None)
        assert [c.name for c in rs.configurations] == ["fib/iterative/40"], given
        assert rs.configurations[0].samples("ns_per_op") == pytest.approx(
            _expected(one / "new"))
    assert detect_format(one / "new" / "sample.json") == "criterion"
    # a saved baseline is read by giving its sample.json
    base = import_file(one / "base" / "sample.json", None)
    assert base.configurations[0].samples("ns_per_op") == pytest.approx(_expected(one / "base"))


def test_a_directory_of_no_tool_lists_the_readers_of_directories(tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="directories written by criterion"):
        import_file(tmp_path, None)
    with pytest.raises(PerflabError, match="jmh reads files"):
        import_file(BENCH, "jmh")


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "criterion"
    shutil.copytree(BENCH, out)
    return out


def _edit(file: Path, change: Callable[[Any], Any]) -> None:
    raw = json.loads(file.read_text())
    change(raw)
    file.write_text(json.dumps(raw))


@pytest.mark.parametrize(("file", "change", "field"), [
    ("sum_1000/new/sample.json", lambda r: r.pop("times"), "times is missing"),
    ("fib/iterative/20/new/sample.json", lambda r: r["iters"].__setitem__(3, "many"),
     "iters[3] is 'many', not a number"),
    ("fib/iterative/40/new/sample.json", lambda r: r["times"].pop(),
     "iters has 20 values and times 19"),
    ("fib/iterative/40/new/benchmark.json", lambda r: r.update(full_id=7),
     "full_id is the number 7, not text"),
    ("sum_1000/new/benchmark.json", lambda r: r.pop("group_id"), "group_id is missing"),
])
def test_a_bad_field_is_named_and_nothing_is_stored(
        tmp_path: Path, file: str, change: Callable[[Any], Any], field: str) -> None:
    root = _copy(tmp_path)
    _edit(root / file, change)
    refused(root, None, field, named=root / file)
    stores_nothing(tmp_path / "r.sqlite", str(root))


def test_a_missing_benchmark_json_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "sum_1000" / "new" / "benchmark.json").unlink()
    with pytest.raises(PerflabError, match="benchmark.json is missing"):
        import_file(root, None)
