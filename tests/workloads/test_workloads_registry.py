"""The workload registry: discovery, manifest validation, parameters, availability, build, CLI."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perflab import workloads
from perflab.cli import app
from perflab.errors import PerflabError
from perflab.workloads import discover, get, load_manifest, parse_assignments

pytestmark = pytest.mark.system

GOOD = """\
name        = "{family}/{runtime}"
family      = "{family}"
runtime     = "{runtime}"
description = "a test workload"
requires    = {requires}
build       = {build}
outputs     = {outputs}
run         = ["{{dir}}/build/x", "--fixed"]
primary     = "ns_per_op"
region_symbol = "*perflab_timed_region*"

[params.depth]
type    = "int"
default = 0
values  = [0, 1, 2, 10, 100]
min     = 0
max     = 100

[params.kind]
type    = "str"
default = "software"
choices = ["software", "hardware", "error"]

[params.ratio]
type    = "float"
default = 0.5
min     = 0.0
max     = 1.0

[params.verbose]
type    = "bool"
default = false
"""

# A build that really makes the declared output (a tiny shell script).
MAKE_X = ('["sh", "-c", "mkdir -p build && printf \'#!/bin/sh\\\\necho ok\\\\n\' > build/x '
          '&& chmod +x build/x"]')


def write(root: Path, family: str, runtime: str, text: str | None = None, *,
          requires: str = '["sh"]', build: str = MAKE_X, outputs: str = '["build/x"]') -> Path:
    d = root / family / runtime
    d.mkdir(parents=True, exist_ok=True)
    body = text if text is not None else GOOD.format(
        family=family, runtime=runtime, requires=requires, build=build, outputs=outputs)
    (d / "workload.toml").write_text(textwrap.dedent(body))
    return d / "workload.toml"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PERFLAB_WORKLOADS_DIR", str(tmp_path))
    return tmp_path


# -- discovery -----------------------------------------------------------------------------------
@pytest.mark.unit
def test_the_repository_manifests_are_valid() -> None:
    d = discover(Path(__file__).resolve().parents[2] / "workloads")
    assert not d.errors, [e.line() for e in d.errors]
    for name in ("eh/cpp", "eh/c", "eh/rust", "eh/go"):
        wl = d.workloads[name]
        assert wl.primary == "ns_per_op"
        assert wl.region_symbol == "*perflab_timed_region*"
        assert list(wl.params["depth"].values) == [0, 1, 2, 10, 100]
        assert {"depth", "kind", "threads", "iterations"} <= set(wl.params)


@pytest.mark.unit
def test_discovery_uses_the_env_root(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "other")
    assert workloads.names() == ["fam/other", "fam/sh"]
    wl = get("fam/sh")
    assert wl.dir == root / "fam" / "sh"
    assert wl.defaults() == {"depth": 0, "kind": "software", "ratio": 0.5, "verbose": False}


@pytest.mark.unit
def test_unknown_workload_suggests_a_close_name(root: Path) -> None:
    write(root, "eh", "cpp")
    with pytest.raises(PerflabError) as e:
        get("eh/cp")
    assert "unknown workload 'eh/cp'" in e.value.problem and "eh/cpp" in e.value.fix


HEAD = 'name="f/r"\nfamily="f"\nruntime="r"\ndescription="d"\nrun=["a"]\n'
BAD_CASES = {
    "toml": ('name = "x', "invalid TOML"),
    "missing_run": ('name="f/r"\nfamily="f"\nruntime="r"\ndescription="d"\n', "missing key 'run'"),
    "name": ('name="f/x"\nfamily="f"\nruntime="r"\ndescription="d"\nrun=["a"]\n',
             "must be '<family>/<runtime>'"),
    "unknown_key": (HEAD + 'biuld=["x"]\n', "unknown key 'biuld'"),
    "param_type": (HEAD +
                   '[params.depth]\ntype="integer"\ndefault=0\n', "is not a parameter type"),
    "default_type": (HEAD +
                     '[params.depth]\ntype="int"\ndefault="zero"\n', "is not of type int"),
    "default_range": (HEAD +
                      '[params.depth]\ntype="int"\ndefault=7\nmin=0\nmax=5\n',
                      "params.depth.default = 7 is not allowed"),
    "value_choice": (HEAD +
                     '[params.kind]\ntype="str"\ndefault="a"\nchoices=["a","b"]\nvalues=["c"]\n',
                     "params.kind.values = c is not allowed"),
    "no_default": (HEAD +
                   '[params.depth]\ntype="int"\n', "has no default"),
    "outputs_escape": (HEAD +
                       'build=["true"]\noutputs=["../x"]\n', "outside the workload's directory"),
    "metric_direction": (HEAD + '[metrics.rss_kib]\nunit="KiB"\ndirection="smaller"\n',
                         "metrics.rss_kib.direction = 'smaller' is not a direction"),
    "metric_key": (HEAD + '[metrics.rss_kib]\nunits="KiB"\n', "metrics.rss_kib: unknown key"),
    "needs_value": (HEAD + '[params.rt]\ntype="str"\ndefault="a"\nchoices=["a"]\n'
                    'needs={b=["x"]}\n', "params.rt.needs names 'b'"),
    "needs_list": (HEAD + '[params.rt]\ntype="str"\ndefault="a"\nchoices=["a"]\n'
                   'needs={a="x"}\n', "params.rt.needs.a must be a list"),
    "only_param": (HEAD + '[params.k]\ntype="str"\ndefault="a"\nonly="rt=b"\n',
                   "params.k.only names 'rt'"),
    "only_value": (HEAD + '[params.rt]\ntype="str"\ndefault="a"\nchoices=["a"]\n'
                   '[params.k]\ntype="str"\ndefault="a"\nonly="rt=b"\n',
                   "params.k.only = rt=b is not a value of rt"),
    "only_form": (HEAD + '[params.k]\ntype="str"\ndefault="a"\nonly="rt"\n',
                  "params.k.only must be 'PARAM=VALUE'"),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_a_malformed_manifest_is_one_clear_line(root: Path, case: str) -> None:
    text, expected = BAD_CASES[case]
    path = write(root, "f", "r", text)
    write(root, "ok", "sh")
    d = discover()
    assert list(d.workloads) == ["ok/sh"]  # the good one is still there
    assert len(d.errors) == 1
    err = d.errors[0]
    assert str(path) in err.problem and expected in err.problem
    assert err.fix and "\n" not in err.line()
    with pytest.raises(PerflabError) as e:  # asking for it by name gives the same reason
        get("f/r")
    assert expected in e.value.problem
    with pytest.raises(PerflabError):
        load_manifest(path)


@pytest.mark.unit
def test_family_runtime_must_match_the_directory(root: Path) -> None:
    write(root, "eh", "cpp", GOOD.format(family="eh", runtime="c", requires='["sh"]',
                                         build=MAKE_X, outputs='["build/x"]'))
    (err,) = discover().errors
    assert "do not match the directory eh/cpp" in err.problem


# -- parameters ----------------------------------------------------------------------------------
def test_command_fills_defaults_and_types_values(root: Path) -> None:
    write(root, "fam", "sh")
    wl = get("fam/sh")
    wl.build()
    argv, typed = wl.command({"depth": "10", "verbose": "yes", "ratio": "0.25"})
    assert typed == {"depth": 10, "kind": "software", "ratio": 0.25, "verbose": True}
    assert argv == [str(wl.dir / "build/x"), "--fixed", "--depth=10", "--kind=software",
                    "--ratio=0.25", "--verbose=true"]
    # Already typed values (from a suite's matrix) are accepted as they are.
    _, typed = wl.command({"depth": 2, "kind": "error"})
    assert typed["depth"] == 2 and typed["kind"] == "error"


@pytest.mark.parametrize(("params", "problem", "fix"), [
    ({"depth": "101"}, "depth=101 is out of range", "[0, 100]"),
    ({"depth": "-1"}, "depth=-1 is out of range", "[0, 100]"),
    ({"depth": "ten"}, "depth='ten' is not an integer", "[0, 100]"),
    ({"depth": "1.5"}, "depth='1.5' is not an integer", "[0, 100]"),
    ({"depth": True}, "is not an integer", "[0, 100]"),
    ({"kind": "soft"}, "kind=soft is not allowed", "software, hardware, error"),
    ({"ratio": "2"}, "ratio=2.0 is out of range", "[0.0, 1.0]"),
    ({"ratio": "nan"}, "is not a number", "[0.0, 1.0]"),
    ({"verbose": "maybe"}, "is not a boolean", "true or false"),
    ({"depht": "1"}, "has no parameter 'depht'", "depth, kind, ratio, verbose"),
])
def test_bad_parameters_name_the_parameter_and_the_allowed_values(
        root: Path, params: dict[str, object], problem: str, fix: str) -> None:
    write(root, "fam", "sh")
    wl = get("fam/sh")
    wl.build()
    with pytest.raises(PerflabError) as e:
        wl.command(params)
    assert problem in e.value.problem
    assert fix in e.value.fix


@pytest.mark.unit
def test_parse_assignments() -> None:
    assert parse_assignments(["depth=10", "kind = error", "x=a=b"]) == {
        "depth": "10", "kind": "error", "x": "a=b"}
    with pytest.raises(PerflabError):
        parse_assignments(["depth"])


# -- availability and build ----------------------------------------------------------------------
@pytest.mark.unit
def test_a_missing_runtime_is_reported_not_run(root: Path) -> None:
    write(root, "fam", "ghost", requires='["sh", "perflab-no-such-runtime-xyz"]')
    wl = get("fam/ghost")
    ok, why = wl.available()
    assert not ok and "perflab-no-such-runtime-xyz not found" in why
    assert not wl.is_available()
    with pytest.raises(PerflabError) as e:
        wl.command({})
    assert "cannot run here" in e.value.problem
    with pytest.raises(PerflabError):
        wl.build()


RUNTIMES = """\
name = "fam/rt"
family = "fam"
runtime = "rt"
description = "one program, two runtimes"
run = ["sh", "-c", "echo", "{coreclr}"]

[params.runtime]
type = "str"
default = "plain"
choices = ["plain", "ghost", "coreclr"]
needs = { plain = ["sh"], ghost = ["perflab-no-such-runtime-xyz"], coreclr = ["@coreclr"] }

[params.knob]
type = "str"
default = "default"
choices = ["default", "on", "off"]
only = "runtime=coreclr"
"""


@pytest.mark.unit
def test_a_value_that_needs_a_missing_runtime_is_one_line(root: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    write(root, "fam", "rt", RUNTIMES)
    monkeypatch.setenv("PERFLAB_CORECLR_ROOT", str(root / "no-dotnet-here"))
    wl = get("fam/rt")
    assert wl.available().ok  # the defaults need nothing missing
    assert wl.command({})[1]["runtime"] == "plain"
    with pytest.raises(PerflabError) as e:
        wl.command({"runtime": "ghost"})
    assert "runtime=ghost needs perflab-no-such-runtime-xyz" in e.value.problem
    with pytest.raises(PerflabError) as e:
        wl.command({"runtime": "coreclr"})
    assert "runtime=coreclr needs CoreCLR 3.1.23, which is not installed" in e.value.problem
    assert "make setup" in e.value.fix and "dotnetcore2==3.1.23" in e.value.fix
    assert "\n" not in e.value.line()


@pytest.mark.unit
def test_a_knob_of_another_runtime_is_one_line(root: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "fam", "rt", RUNTIMES)
    # A folder laid out as CoreCLR's (dotnet + the shared framework), so runtime=coreclr is
    # available and {coreclr} expands to it.
    fake = root / "dotnet-root"
    (fake / "shared" / "Microsoft.NETCore.App" / "3.1.23").mkdir(parents=True)
    (fake / "dotnet").write_text("#!/bin/sh\n")
    (fake / "dotnet").chmod(0o755)
    monkeypatch.setenv("PERFLAB_CORECLR_ROOT", str(fake))
    wl = get("fam/rt")
    with pytest.raises(PerflabError) as e:
        wl.command({"knob": "off"})
    assert e.value.problem == ("fam/rt: knob=off is a knob of runtime=coreclr; runtime=plain "
                               "has no such knob")
    assert e.value.fix == "add runtime=coreclr, or drop knob"
    assert wl.command({"knob": "default"})[1]["knob"] == "default"  # the default is no knob
    argv, typed = wl.command({"runtime": "coreclr", "knob": "off"})
    assert typed["knob"] == "off" and argv[3] == str(fake.resolve())
    with pytest.raises(PerflabError) as e:
        wl.command({"runtime": "jvm"})
    assert "runtime='jvm'" in e.value.problem or "runtime=jvm" in e.value.problem
    assert "plain, ghost, coreclr" in e.value.fix


def test_not_built_says_how_to_build(root: Path) -> None:
    write(root, "fam", "sh")
    wl = get("fam/sh")
    assert not wl.is_built()
    with pytest.raises(PerflabError) as e:
        wl.command({})
    assert "perflab workloads build fam/sh" in e.value.fix
    r = wl.build()
    assert wl.is_built() and r.log.exists()
    assert (wl.dir / "build" / "x").exists()


def test_a_failing_build_is_one_line_with_the_log(root: Path) -> None:
    write(root, "fam", "broken", build='["sh", "-c", "echo compiling; echo error: boom >&2; '
                                      'exit 3"]')
    wl = get("fam/broken")
    with pytest.raises(PerflabError) as e:
        wl.build()
    assert "failed (exit 3)" in e.value.problem and "error: boom" in e.value.problem
    assert str(wl.dir / "build" / "perflab-build.log") in e.value.fix
    assert e.value.exit_code == 1


def test_a_build_without_its_output_fails(root: Path) -> None:
    write(root, "fam", "lazy", build='["true"]')
    with pytest.raises(PerflabError) as e:
        get("fam/lazy").build()
    assert "did not produce build/x" in e.value.problem


@pytest.mark.unit
def test_nothing_to_build_is_always_built(root: Path) -> None:
    text = ('name="fam/script"\nfamily="fam"\nruntime="script"\ndescription="d"\n'
            'requires=["sh"]\nrun=["sh", "{dir}/x.sh"]\n')
    write(root, "fam", "script", text)
    wl = get("fam/script")
    assert wl.is_built()
    argv, typed = wl.command({})
    assert argv == ["sh", str(wl.dir / "x.sh")] and typed == {}


# -- the command line ----------------------------------------------------------------------------
def test_cli_build_skips_missing_runtimes_and_builds_the_rest(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "ghost", requires='["perflab-no-such-runtime-xyz"]')
    r = CliRunner().invoke(app, ["workloads", "build"])
    assert r.exit_code == 0, r.output
    assert "skipped fam/ghost: perflab-no-such-runtime-xyz not found" in r.output
    assert "built fam/sh" in r.output
    assert get("fam/sh").is_built()


def test_cli_build_fails_when_an_available_workload_fails(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "broken", build='["false"]')
    r = CliRunner().invoke(app, ["workloads", "build"])
    assert r.exit_code == 1
    assert "building fam/broken failed" in r.output
    assert get("fam/sh").is_built()  # the others still built


def test_cli_build_named_only(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "other")
    r = CliRunner().invoke(app, ["workloads", "build", "fam/other"])
    assert r.exit_code == 0, r.output
    assert get("fam/other").is_built() and not get("fam/sh").is_built()


def test_cli_list_shows_built_and_why_not(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "ghost", requires='["perflab-no-such-runtime-xyz"]')
    get("fam/sh").build()
    r = CliRunner().invoke(app, ["workloads", "list", "--json"])
    assert r.exit_code == 0, r.output
    import json

    rows = {w["name"]: w for w in json.loads(r.output)["workloads"]}
    assert rows["fam/sh"]["built"] and rows["fam/sh"]["available"]
    assert not rows["fam/ghost"]["available"]
    assert "not found" in rows["fam/ghost"]["why_not"]
    assert rows["fam/sh"]["params"]["depth"]["values"] == [0, 1, 2, 10, 100]
    r = CliRunner().invoke(app, ["workloads", "list"])
    assert r.exit_code == 0 and "fam/ghost" in r.output


@pytest.mark.unit
def test_cli_list_exits_non_zero_on_a_malformed_manifest(root: Path) -> None:
    write(root, "fam", "sh")
    write(root, "fam", "bad", 'name = "x')
    r = CliRunner().invoke(app, ["workloads", "list"])
    assert r.exit_code == 2  # a usage error, as every other
    assert "invalid TOML" in r.output and "fam/sh" in r.output


@pytest.mark.unit
def test_declared_metrics_give_units_and_directions(root: Path) -> None:
    # A workload's [metrics.*] reach the result's MetricInfo: unit KiB, lower is better; a
    # bookkeeping count has no direction; an undeclared *_kib key still reads as KiB.
    from perflab.runner.declared import metric_info

    text = HEAD.replace('name="f/r"', 'name="mem/r"').replace('family="f"', 'family="mem"') + (
        '[metrics.committed_kib]\nunit="KiB"\ndirection="lower"\nhelp="after GC"\n'
        '[metrics.allocs_per_s]\nunit="1/s"\ndirection="higher"\n'
        '[metrics.compiled]\nunit="count"\ndirection="none"\n')
    write(root, "mem", "r", text)
    wl = get("mem/r")
    assert wl.metrics["committed_kib"].unit == "KiB"
    info = metric_info("committed_kib", "mem/r", False)
    assert (info.unit, info.higher_is_better, info.description) == ("KiB", False, "after GC")
    assert metric_info("allocs_per_s", "mem/r", False).higher_is_better
    assert metric_info("compiled", "mem/r", False).unit == "count"
    assert metric_info("other_kib", "mem/r", False).unit == "KiB"
    assert metric_info("committed_kib", "./a.out --x", False).unit == "KiB"  # a command


# -- staleness: outputs are keyed by a content hash of the sources -------------------------------
# A build like a Makefile that lists no dependency: it writes build/x only when build/x is missing,
# copying src.txt (the "source") into it, so a stale output shows in its content.
COPY_IF_MISSING = ('["sh", "-c", "test -e build/x || { mkdir -p build && '
                   '{ printf \'#!/bin/sh\\\\n\'; cat src.txt; } > build/x && chmod +x build/x; }"]')


def _copying_workload(root: Path, runtime: str = "cp") -> workloads.Workload:
    write(root, "fam", runtime, build=COPY_IF_MISSING)
    (root / "fam" / runtime / "src.txt").write_text("echo one\n")
    return get(f"fam/{runtime}")


def test_an_edited_source_makes_the_build_stale_and_build_rebuilds_it(root: Path) -> None:
    wl = _copying_workload(root)
    wl.build()
    assert wl.is_built() and "echo one" in (wl.dir / "build" / "x").read_text()
    (wl.dir / "src.txt").write_text("echo two\n")
    assert not wl.is_built()
    with pytest.raises(PerflabError, match="out of date") as e:
        wl.command({})
    assert "perflab workloads build fam/cp" in e.value.fix
    wl.build()  # the build's own check would keep the old file: build() removed it first
    assert wl.is_built() and "echo two" in (wl.dir / "build" / "x").read_text()


def test_a_touched_but_unchanged_source_is_not_stale(root: Path) -> None:
    wl = _copying_workload(root)
    wl.build()
    src = wl.dir / "src.txt"
    src.write_text(src.read_text())
    os.utime(src, (1e9, 1e9))
    assert get("fam/cp").is_built()


def test_an_edited_shared_helper_of_its_language_makes_a_build_stale(root: Path) -> None:
    common = root / "common"
    for lang in ("c", "python"):
        (common / lang).mkdir(parents=True)
        (common / lang / "helper").write_text("1\n")
    c, cpp = _copying_workload(root, "c"), _copying_workload(root, "cpp")
    c.build()
    cpp.build()
    (common / "python" / "helper").write_text("2\n")  # not a C helper
    assert get("fam/c").is_built() and get("fam/cpp").is_built()
    (common / "c" / "helper").write_text("2\n")
    assert not get("fam/c").is_built() and not get("fam/cpp").is_built()  # C++ uses common/c
    (common / "c" / "__pycache__").mkdir()  # output directories are not sources
    (common / "c" / "__pycache__" / "h.pyc").write_bytes(b"x")
    get("fam/c").build()
    (common / "c" / "__pycache__" / "h.pyc").write_bytes(b"changed")
    assert get("fam/c").is_built()


def test_outputs_without_a_stamp_are_rebuilt(root: Path) -> None:
    wl = _copying_workload(root)
    (wl.dir / "build").mkdir()
    (wl.dir / "build" / "x").write_text("#!/bin/sh\necho from an old checkout\n")
    assert not wl.is_built()
    CliRunner().invoke(app, ["workloads", "build", "fam/cp"])
    assert wl.is_built() and "echo one" in (wl.dir / "build" / "x").read_text()


def test_the_stamp_is_the_hash_taken_before_the_build(root: Path) -> None:
    # A source edited while the build runs (here: by the build itself) leaves the output stale.
    write(root, "fam", "edit", build='["sh", "-c", "mkdir -p build && touch build/x && '
                                     'echo more >> src.txt"]')
    (root / "fam" / "edit" / "src.txt").write_text("a\n")
    wl = get("fam/edit")
    wl.build()
    assert not get("fam/edit").is_built()


def test_cli_build_leaves_up_to_date_workloads_alone(root: Path) -> None:
    write(root, "fam", "edit", build='["sh", "-c", "mkdir -p build && echo x >> build/x"]')
    (root / "fam" / "edit" / "src.txt").write_text("a\n")
    runs = root / "fam" / "edit" / "build" / "x"
    assert CliRunner().invoke(app, ["workloads", "build"]).exit_code == 0
    r = CliRunner().invoke(app, ["workloads", "build"])
    assert "up to date fam/edit" in r.output and "0 built, 1 up to date" in r.output
    assert runs.read_text() == "x\n"  # the build did not run again
    (root / "fam" / "edit" / "src.txt").write_text("b\n")
    assert "built fam/edit" in CliRunner().invoke(app, ["workloads", "build"]).output
    assert "built fam/edit" in CliRunner().invoke(app, ["workloads", "build", "--force"]).output


@pytest.mark.unit
def test_no_workloads_directory_says_where_workloads_come_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip-installed perflab printed an empty table for .../lib/python3.11/workloads, exit 0
    (issue 25): now one line naming what is missing and how to point at workloads."""
    monkeypatch.setenv("PERFLAB_WORKLOADS_DIR", str(tmp_path / "nowhere"))
    r = CliRunner().invoke(app, ["workloads", "list"])
    assert r.exit_code == 2  # a usage error, as every other
    text = " ".join(r.output.split())
    assert "workloads in" not in text  # no empty table
    assert "a pip-installed perflab does not have" in text and "PERFLAB_WORKLOADS_DIR" in text
