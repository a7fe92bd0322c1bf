"""Suite parsing and validation: every bad input names FILE:LINE and the fix; plans expand the
matrix with ranges and exclusions."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.suites.execute import describe_plan
from perflab.suites.plan import make_plan
from perflab.suites.spec import LineIndex, load_suite, parse_suite
from perflab.workloads import coreclr

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
[suite]
name = "t"
baseline = "a"

[measure]
runs = 3
warmup = 0

[matrix]
n = [1, 2, 3]
size = { start = 1, stop = 8, factor = 2 }
exclude = [{ n = 3, size = 8 }, { configuration = "b", n = 1 }]

[configurations.a]
command = "echo {n} {size}"

[configurations.b]
command = ["echo", "{n}", "{size}", "{{literal}}"]
env = { X = "{n}" }
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "suite.toml"
    p.write_text(text)
    return p


def error_of(tmp_path: Path, text: str, *, plan: bool = False, build: bool = False) -> str:
    p = write(tmp_path, text)
    with pytest.raises(PerflabError) as ei:
        s = load_suite(p)
        if plan:
            make_plan(s, build=build)
    return ei.value.line()


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(needle)


def assert_at(msg: str, path: Path, line: int) -> None:
    m = re.match(r"(.+?):(\d+): ", msg)
    assert m, msg
    assert m.group(1) == str(path), msg
    assert int(m.group(2)) == line, msg


def test_good_suite_parses_and_plans(tmp_path: Path) -> None:
    s = load_suite(write(tmp_path, GOOD))
    assert [c.name for c in s.configurations] == ["a", "b"]
    assert s.measure == {"runs": 3, "warmup": 0}
    plan = make_plan(s)
    # n x size = 3 x 4 = 12 cells, minus (n=3, size=8) = 11; b also skips n=1 (4 cells).
    keys = [c.params for c in plan.cells]
    assert len(keys) == 11
    assert {"n": 3, "size": 8} not in keys
    assert sorted({c["size"] for c in keys}) == [1, 2, 4, 8]
    per_cfg = {name: sum(1 for c in plan.cells for p in c.configs if p.name == name)
               for name in ("a", "b")}
    assert per_cfg == {"a": 11, "b": 7}
    cell = next(c for c in plan.cells if c.params == {"n": 2, "size": 4})
    b = next(p for p in cell.configs if p.name == "b")
    assert b.argv == ["echo", "2", "4", "{literal}"]
    assert b.env == {"X": "2"}  # placeholders are filled in environment values too
    a = next(p for p in cell.configs if p.name == "a")
    assert a.argv == ["echo", "2", "4"] and a.is_baseline


def test_linear_range_and_dry_run_text(tmp_path: Path) -> None:
    text = GOOD.replace("size = { start = 1, stop = 8, factor = 2 }",
                        "size = { start = 0, stop = 10, step = 5 }").replace("size = 8",
                                                                            "size = 10")
    plan = make_plan(load_suite(write(tmp_path, text)))
    assert sorted({c.params["size"] for c in plan.cells}) == [0, 5, 10]
    lines = describe_plan(plan)
    assert lines[0].startswith("suite t") and "10 cells" not in lines[0]
    assert f"{len(plan.cells)} cells" in lines[0]
    assert "estimated time" in lines[-1]
    assert any("echo 2 5" in line for line in lines)


def test_range_up_to_nproc(tmp_path: Path) -> None:
    """stop = "nproc": the CPUs this process may run on (the timers suites' 1..nproc threads)."""
    text = GOOD.replace("size = { start = 1, stop = 8, factor = 2 }",
                        'size = { start = 1, stop = "nproc" }').replace("size = 8", "size = 1")
    axis = next(a for a in load_suite(write(tmp_path, text)).axes if a.name == "size")
    assert axis.values == list(range(1, len(os.sched_getaffinity(0)) + 1))
    bad = GOOD.replace("size = { start = 1, stop = 8, factor = 2 }",
                       'size = { start = 1, stop = "ncpu" }')
    said = error_of(tmp_path, bad)
    assert "range 'size' needs numeric start and stop (or stop = \"nproc\")" in said


# A [benchmark] command before the [matrix] that defines its placeholder: the matrix's own
# problem must be the one reported, not "placeholder {p} is not a matrix parameter".
BENCH_FIRST = """\
[suite]
name = "t"

[benchmark]
command = "true {p}"

[matrix]
p = AXIS

[configurations.a]
"""


@pytest.mark.parametrize("axis, said", [
    ("{ start = 1, stop = 100000000 }", "range 'p' has 100,000,000 values, more than 10,000"),
    ("{ start = 1, stop = 1e12, factor = 1.0000001 }", "range 'p' has 276,310,"),
    ("{ start = 1, stop = inf }", "range 'p' needs finite start and stop"),
    ("{ start = 1, stop = 10, step = nan }", "range 'p' needs a positive step"),
    ("[]", "matrix parameter 'p' has no values"),
])
def test_a_bad_axis_is_the_reason_given_and_ranges_are_counted_first(
        tmp_path: Path, axis: str, said: str) -> None:
    """A range is counted before it is expanded: a 1e12-value range used to fill 8 GB."""
    import tracemalloc

    text = BENCH_FIRST.replace("AXIS", axis)
    tracemalloc.start()
    try:
        msg = error_of(tmp_path, text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert said in msg and "placeholder" not in msg, msg
    assert_at(msg, tmp_path / "suite.toml", line_of(text, "p = "))
    assert peak < 20 << 20, peak


def test_counted_ranges_expand_to_the_same_values(tmp_path: Path) -> None:
    def values(axis: str) -> list[object]:
        suite = load_suite(write(tmp_path, BENCH_FIRST.replace("AXIS", axis)))
        return next(a for a in suite.axes if a.name == "p").values

    assert values("{ start = 1, stop = 1024, factor = 2 }") == [2 ** i for i in range(11)]
    assert values("{ start = 1, stop = 1000, factor = 10 }") == [1, 10, 100, 1000]
    assert values("{ start = 0.5, stop = 2, step = 0.5 }") == [0.5, 1.0, 1.5, 2.0]
    assert values("{ start = 0, stop = 9, step = 3 }") == [0, 3, 6, 9]
    assert values("{ start = 1, stop = 10000 }") == list(range(1, 10001))


# Each bad input: (what GOOD becomes, the line the message must name, what it must say).
BAD_AT_LINE = {
    "unknown_key": (("warmup = 0", "warmup = 0\nbudjet = 5"), "budjet",
                    ["unknown key 'budjet'", "did you mean 'budget'"]),
    "unknown_key_in_configuration": (('env = { X = "{n}" }', 'env = { X = "{n}" }\nenviron = 1'),
                                     "environ = 1", ["[configurations.b]"]),
    "missing_placeholder": (('command = "echo {n} {size}"', 'command = "echo {nn} {size}"'),
                            "echo {nn}", ["{nn}", "did you mean {n}"]),
    "type_error": (("runs = 3", 'runs = "three"'), "runs =", ["'runs' must be an integer"]),
    "mixed_types_in_matrix": (("n = [1, 2, 3]", 'n = [1, "two", 3]'), "n = [1,", ["one type"]),
    "empty_matrix_axis": (("n = [1, 2, 3]", "n = []"), "n = []", ["no values"]),
    "exclusions_removing_everything": (
        ('exclude = [{ n = 3, size = 8 }, { configuration = "b", n = 1 }]',
         "exclude = [{ n = [1, 2, 3] }]"), "exclude =", ["matrix is empty"]),
    "toml_syntax_error": (("runs = 3", "runs = "), "runs =", ["not valid TOML"]),
    "bad_baseline": (('baseline = "a"', 'baseline = "aa"'), 'baseline = "aa"',
                     ["did you mean 'a'"]),
}


@pytest.mark.parametrize("case", list(BAD_AT_LINE))
def test_bad_input_names_its_line(tmp_path: Path, case: str) -> None:
    (old, new), needle, said = BAD_AT_LINE[case]
    text = GOOD.replace(old, new)
    assert text != GOOD
    p = write(tmp_path, text)
    msg = error_of(tmp_path, text)
    assert_at(msg, p, line_of(text, needle))
    for part in said:
        assert part in msg, msg


def test_exclusion_of_unknown_parameter(tmp_path: Path) -> None:
    text = GOOD.replace("{ n = 3, size = 8 }", "{ n = 3, sise = 8 }")
    msg = error_of(tmp_path, text)
    assert "'sise'" in msg and "did you mean 'size'" in msg


@pytest.mark.system
def test_unbuildable_configuration(tmp_path: Path) -> None:
    text = GOOD.replace('command = "echo {n} {size}"',
                        'command = "echo {n} {size}"\n'
                        'build = ["sh", "-c", "echo oops >&2; exit 3"]')
    p = write(tmp_path, text)
    # A dry run does not build; a real run builds first and refuses.
    make_plan(load_suite(p), build=False)
    msg = error_of(tmp_path, text, plan=True, build=True)
    assert_at(msg, p, line_of(text, "build ="))
    assert "cannot be built" in msg and "exited 3" in msg and "oops" in msg


@pytest.mark.system
def test_missing_build_tool(tmp_path: Path) -> None:
    text = GOOD.replace('command = "echo {n} {size}"',
                        'command = "echo {n} {size}"\nbuild = "no-such-tool-xyz --all"')
    msg = error_of(tmp_path, text, plan=True, build=True)
    assert "no-such-tool-xyz not found" in msg


def test_all_problems_are_counted(tmp_path: Path) -> None:
    text = GOOD.replace("runs = 3", "runs = -1").replace("warmup = 0", "warmup = 0\nfoo = 1")
    msg = error_of(tmp_path, text)
    assert "and 1 more" in msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="not found"):
        load_suite(tmp_path / "nope.toml")


def test_line_index_headers_and_dotted_keys() -> None:
    text = '[a]\nx = 1\n[b.c]\n"quoted key" = 2\nd.e = { f = 3 }\n[[g]]\nh = 4\n'
    li = LineIndex(text)
    assert li.line("a", "x") == 2
    assert li.line("b", "c", "quoted key") == 4
    assert li.line("b", "c", "d", "e", "f") == 5
    assert li.line("g", "h") == 7
    assert li.line("b", "c", "nothing") == 3


def test_unknown_workload_is_skipped_with_one_line(tmp_path: Path) -> None:
    text = GOOD + '\n[configurations.ghost]\nworkload = "eh/nonexistent"\n'
    plan = make_plan(load_suite(write(tmp_path, text)))
    assert len(plan.skipped) == 1 and "ghost" in plan.skipped[0]
    assert all(p.name != "ghost" for c in plan.cells for p in c.configs)
    strict = text.replace('name = "t"', 'name = "t"\nunavailable = "error"')
    p = write(tmp_path, strict)
    with pytest.raises(PerflabError) as ei:
        make_plan(load_suite(p))
    assert_at(ei.value.line(), p, line_of(strict, '"eh/nonexistent"'))


def test_workload_rejected_values_are_skipped(tmp_path: Path) -> None:
    text = """\
[suite]
baseline = "cpp"
[matrix]
depth = [0, 1]
kind = ["software", "no-such-kind"]
[configurations.cpp]
workload = "eh/cpp"
params = { iterations = 10 }
"""
    plan = make_plan(load_suite(write(tmp_path, text)))
    assert [c.params for c in plan.cells] == [{"depth": 0, "kind": "software"},
                                            {"depth": 1, "kind": "software"}]
    assert "2 cell(s)" in plan.skipped[0]
    cfg = plan.cells[0].configs[0]
    assert "--iterations=10" in cfg.argv and "--depth=0" in cfg.argv


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "suites").glob("*.toml")))
def test_shipped_suites_validate(name: str) -> None:
    if name == "memory-coreclr.toml" and coreclr.root() is None:
        # Every configuration runs on CoreCLR (the others skip their CoreCLR rows).
        pytest.skip(f"CoreCLR {coreclr.VERSION} not installed -- {coreclr.INSTALL_HINT}")
    path = ROOT / "suites" / name
    suite = load_suite(path)
    plan = make_plan(suite)
    assert plan.cells, path


def test_eh_study_covers_the_matrix() -> None:
    plan = make_plan(load_suite(ROOT / "suites" / "eh-study.toml"))
    depths = sorted({c.params["depth"] for c in plan.cells})
    assert depths == [0, 1, 2, 10, 100]
    assert {c.params["threads"] for c in plan.cells} == {1, 2}
    assert {c.params["kind"] for c in plan.cells} == {"software", "hardware"}
    assert all(any(p.is_baseline for p in c.configs) for c in plan.cells)


def test_parse_suite_rejects_non_table_configuration() -> None:
    with pytest.raises(PerflabError, match="must be a table"):
        parse_suite('[suite]\nbaseline = "a"\n[configurations]\na = 1\n', Path("x.toml"))


WL_SUITE = """\
[suite]
baseline = "cpp"
[matrix]
depth = [0, 1]
[configurations.cpp]
workload = "eh/cpp"
params = { iterations = 10 }
"""


def test_matrix_value_of_the_wrong_type_for_a_workload(tmp_path: Path) -> None:
    text = WL_SUITE.replace("depth = [0, 1]", 'depth = ["zero", "one"]')
    p = write(tmp_path, text)
    msg = error_of(tmp_path, text, plan=True)
    assert_at(msg, p, line_of(text, "depth = ["))
    assert "'zero'" in msg and "takes int values" in msg and "an integer" in msg


def test_fixed_parameter_of_the_wrong_type(tmp_path: Path) -> None:
    text = WL_SUITE.replace("iterations = 10", 'iterations = "many"')
    p = write(tmp_path, text)
    msg = error_of(tmp_path, text, plan=True)
    assert_at(msg, p, line_of(text, '"many"'))
    assert "'iterations'" in msg


def test_estimator_key(tmp_path: Path) -> None:
    good = GOOD.replace('baseline = "a"', 'baseline = "a"\nestimator = "trim:0:0.25"')
    s = load_suite(write(tmp_path, good))
    assert s.estimator == "trim:0:0.25" and s.threshold == 0.01  # the one default band
    text = GOOD.replace('baseline = "a"', 'baseline = "a"\nestimator = "mode"')
    p = write(tmp_path, text)
    msg = error_of(tmp_path, text)
    assert_at(msg, p, line_of(text, "estimator"))
    assert "unknown estimator 'mode'" in msg and "median, mean, trim" in msg
    # Trimming that leaves fewer than 6 of the runs: refused where the estimator is named.
    text = GOOD.replace('baseline = "a"', 'baseline = "a"\nestimator = "trim:0.25:0.25"'
                        ).replace("runs = 3", "runs = 8")
    p = write(tmp_path, text)
    msg = error_of(tmp_path, text)
    assert_at(msg, p, line_of(text, "estimator"))
    assert "leaves 4 of 8 runs" in msg and "at least 10 runs" in msg


def test_bands_key(tmp_path: Path) -> None:
    good = GOOD.replace('baseline = "a"',
                        'baseline = "a"\nbands = { max_rss = "64KiB", memory = "0.5%" }')
    s = load_suite(write(tmp_path, good))
    assert s.bands == {"max_rss": "64KiB", "memory": "0.5%"}
    for band, problem in (('{ task_clock = "5KiB" }', "is memory, but the metric is measured"),
                          ('{ nosuch = "1%" }', "no metric 'nosuch' here"),
                          ('{ max_rss = "-2%" }', "a band must be positive")):
        text = GOOD.replace('baseline = "a"', f'baseline = "a"\nbands = {band}')
        p = write(tmp_path, text)
        msg = error_of(tmp_path, text)
        assert_at(msg, p, line_of(text, "bands"))
        assert problem in msg, msg
