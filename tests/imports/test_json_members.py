"""imports.common.json_members: a JSON file's members one at a time, the same values as
json.loads, whatever the chunk boundaries cut (a number, a string, an escape)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from perflab.errors import PerflabError
from perflab.imports import common

pytestmark = pytest.mark.unit


def _value(rnd: random.Random, depth: int = 0) -> Any:
    r = rnd.random()
    if depth > 3 or r < 0.3:
        return rnd.choice([1, -2.5e-7, 'a"b]}\\', None, True, 12345678901234, "ü", float("inf")])
    if r < 0.6:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {f"k{i}": _value(rnd, depth + 1) for i in range(rnd.randint(0, 4))}


@pytest.mark.parametrize("chunk", [1, 3, 65536])
def test_members_and_streamed_array_elements_are_json_loads_values(
        tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "_CHUNK", chunk)
    for seed in range(60):
        rnd = random.Random(seed)
        rows = [_value(rnd) for _ in range(rnd.randint(0, 5))]
        doc = {"context": _value(rnd), "benchmarks": rows, "z": _value(rnd)}
        f = tmp_path / "f.json"
        f.write_text(json.dumps(doc, indent=rnd.choice([None, 2])))
        got: dict[str, Any] = {"benchmarks": []}
        for key, i, v in common.json_members(f, "x", ("benchmarks",)):
            if i is None:
                got[key] = v
            else:
                assert i == len(got[key])
                got[key].append(v)
        assert json.dumps(got, sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_a_top_level_array_streams_its_elements(tmp_path: Path) -> None:
    f = tmp_path / "f.json"
    f.write_text("[1, {\"a\": 2}, [3]]")
    assert list(common.json_members(f, "x")) == [("", 0, 1), ("", 1, {"a": 2}), ("", 2, [3])]


@pytest.mark.parametrize(("text", "said"), [
    ('{"a": 1,\n "b": [1, 2', "invalid JSON at line 2"),
    ('{"a": 1} x', "extra data"),
    ("7", "expected '{' or '['"),
    ('{"a" 1}', "expected ':'"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_bad_json_is_one_line_with_its_line(tmp_path: Path, text: str, said: str) -> None:
    f = tmp_path / "f.json"
    f.write_text(text)
    with pytest.raises(PerflabError) as e:
        list(common.json_members(f, "gbench", ("b",)))
    assert said in e.value.problem and "not a gbench result file" in e.value.problem


@pytest.mark.parametrize("chunk", [1, 7, 65536])
def test_nested_and_wildcard_streams(tmp_path: Path, chunk: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Elements of arrays inside elements of arrays, and arrays under any key ("*"), come one
    at a time and each streamed container ends with END; what is off the streamed paths, or
    of a type the path does not descend into, comes whole."""
    monkeypatch.setattr(common, "_CHUNK", chunk)
    doc = {"results": [{"command": "a", "times": [1.5, 2e-7], "exit_codes": [0, None]},
                       {"times": [], "exit_codes": 7}, "no object"],
           "configurations": [{"metrics": {"w/t": {"unit": "s", "samples": [1, 2]},
                                           "x": {"samples": "none"}}}],
           "tail": {"k": [1, 2]}}
    f = tmp_path / "f.json"
    f.write_text(json.dumps(doc, indent=2))
    streamed = ("results[]/times[]", "results[]/exit_codes[]",
                "configurations[]/metrics/*/samples[]")
    end, m = common.END, "configurations[]/metrics"
    assert list(common.json_events(f, "x", streamed)) == [
        ("results[]/command", "a", ()), ("results[]/times[]", 1.5, ()),
        ("results[]/times[]", 2e-7, ()), ("results[]/times", end, ()),
        ("results[]/exit_codes[]", 0, ()), ("results[]/exit_codes[]", None, ()),
        ("results[]/exit_codes", end, ()), ("results[]", end, ()),
        ("results[]/times", end, ()), ("results[]/exit_codes", 7, ()), ("results[]", end, ()),
        ("results[]", "no object", ()), ("results", end, ()),
        (f"{m}/*/unit", "s", ("w/t",)), (f"{m}/*/samples[]", 1, ("w/t",)),
        (f"{m}/*/samples[]", 2, ("w/t",)), (f"{m}/*/samples", end, ("w/t",)),
        (f"{m}/*", end, ("w/t",)), (f"{m}/*/samples", "none", ("x",)), (f"{m}/*", end, ("x",)),
        (m, end, ()), ("configurations[]", end, ()), ("configurations", end, ()),
        ("tail", {"k": [1, 2]}, ()), ("", end, ())]


def test_a_value_cut_short_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f.json"
    f.write_text('{"results": [{"times": [1, 2,')
    with pytest.raises(PerflabError, match="not a x result file"):
        list(common.json_events(f, "x", ("results[]/times[]",)))


@pytest.mark.parametrize("chunk", [1, 2, 5, 65536])
def test_streamed_numbers_are_json_loads_numbers(tmp_path: Path, chunk: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A streamed array of numbers, whatever the buffer cuts: each element the value and type
    json.loads gives (ints stay ints), with null, NaN and strings among them."""
    monkeypatch.setattr(common, "_CHUNK", chunk)
    text = ('{"t": [1, 2.5e-7 ,-0,null, NaN,3,"x", 12345678901234567890, 1E5, -1.25,\n'
            '  0.000123456789012345678, [], 7]}')
    f = tmp_path / "f.json"
    f.write_text(text)
    got = [v for w, v, _ in common.json_events(f, "x", ("t[]",)) if w == "t[]"]
    want = json.loads(text)["t"]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert type(g) is type(w) and (g == w or (g != g and w != w)), (g, w)
