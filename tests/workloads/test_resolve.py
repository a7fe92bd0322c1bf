"""workloads.resolve: the one spec -> argv, primary metric and region symbol, and its four
callers (stat/compare through session, profile record, a suite's plan, bisect) agreeing on it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.workloads import resolve

pytestmark = pytest.mark.unit

MANIFEST = """\
name = "syn/c"
family = "syn"
runtime = "c"
description = "a synthetic workload"
run = ["{dir}/prog", "--fixed"]
primary = "ns_per_op"
region_symbol = "*perflab_timed_region*"

[params.depth]
type = "int"
default = 1
min = 0

[params.kind]
type = "str"
default = "a"
choices = ["a", "b"]
"""


def _root(top: Path) -> Path:
    wdir = top / "workloads" / "syn" / "c"
    wdir.mkdir(parents=True)
    (wdir / "workload.toml").write_text(MANIFEST)
    (wdir / "prog").write_text("#!/bin/sh\necho '{\"ns_per_op\": 1}'\n")
    (wdir / "prog").chmod(0o755)
    return top / "workloads"


def test_resolve_fills_defaults_and_reads_the_manifest(tmp_path: Path) -> None:
    root = _root(tmp_path)
    r = resolve("syn/c", {"depth": "3"}, root)
    assert r.argv == [str(root / "syn" / "c" / "prog"), "--fixed", "--depth=3", "--kind=a"]
    assert r.params == {"depth": 3, "kind": "a"}
    assert r.primary == "ns_per_op" and r.region_symbol == "*perflab_timed_region*"
    assert r.workload.name == "syn/c"


def test_resolve_refuses_bad_input(tmp_path: Path) -> None:
    root = _root(tmp_path)
    with pytest.raises(PerflabError, match="unknown workload 'syn/x'"):
        resolve("syn/x", {}, root)
    with pytest.raises(PerflabError, match="no parameter 'width'"):
        resolve("syn/c", {"width": "2"}, root)
    with pytest.raises(PerflabError, match="kind"):
        resolve("syn/c", {"kind": "z"}, root)


@pytest.mark.system
def test_the_four_callers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _root(tmp_path)
    monkeypatch.setenv("PERFLAB_WORKLOADS_DIR", str(root))
    want = resolve("syn/c", {"depth": "3"}).argv

    # stat / compare (perflab.session)
    from perflab import session

    cfg, r = session.workload_config("syn/c depth=3", {}, None, valgrind=False)
    assert cfg.command == want and r.argv == want and cfg.params == {"depth": 3, "kind": "a"}

    # profile record --workload
    from perflab.cli.profile import record_argv

    assert record_argv([], "syn/c", ["depth=3"], "") == (want, "syn/c")

    # a suite's plan
    from perflab.suites.plan import make_plan
    from perflab.suites.spec import parse_suite

    suite = parse_suite('[suite]\nbaseline = "w"\n[measure]\nruns = 2\n'
                        '[configurations.w]\nworkload = "syn/c"\nparams = { depth = 3 }\n',
                        tmp_path / "s.toml")
    plan = make_plan(suite)
    assert [p.argv for c in plan.cells for p in c.configs] == [want]

    # bisect: the checkout's own workloads/ (root= the checkout)
    from perflab.history.bisect import BisectSpec, _Target

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    target = _Target(BisectSpec(repo=tmp_path, good="HEAD", bad="HEAD", build="true",
                                workload="syn/c", params={"depth": "3"}), tmp_path)
    assert target.argv(tmp_path) == want
    assert target.primary == "ns_per_op" and target.region_symbol == "*perflab_timed_region*"
