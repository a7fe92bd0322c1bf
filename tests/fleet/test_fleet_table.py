"""The fleet table people paste into an issue (issue 20, item 7): one row per machine keyed by
what the machine is (OS and version, architecture, CPU model from its stored fingerprint, its
name), base and diff both absolute with the ratio [CI] and the verdict, several metrics side
by side, rows in name order; as GitHub Markdown (report --markdown), in the terminal and in
HTML."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from perflab.cli import app
from perflab.fleet.permachine import build, print_terminal, render_html, render_markdown
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.unit

# name -> (os, arch, cpu, wall-time ratio of pr to main, max_rss ratio)
FLEET = {
    "x64-linux": ("Ubuntu 24.04.1 LTS", "x86_64", "AMD EPYC 7763 64-Core Processor", 1.20, 1.0),
    "arm64-mac": ("Darwin", "arm64", "Apple M2", 1.0, 1.0),
    "arm64-linux": ("Debian GNU/Linux 12 (bookworm)", "aarch64", "Neoverse-N1", 1.0, 1.30),
}


def machine(name: str, seed: int, submission: str = "") -> ResultSet:
    os_name, arch, cpu, wall, rss = FLEET[name]
    rng = np.random.default_rng(seed)
    fp: dict[str, object] = {"hostname": "h-" + name, "machine_name": name, "os": os_name,
                             "arch": arch, "cpu_model": cpu, "cpu_count": 8,
                             "kernel": "23.6.0" if os_name == "Darwin" else "6.8.0"}
    if submission:
        fp["fleet_submission"] = submission
    rs = ResultSet(kind="compare", fingerprint=fp,
                   metrics={m: BUILTIN_METRICS[m] for m in ("wall_time", "max_rss")},
                   status="complete",
                   settings={"primary_metric": "wall_time", "interleaved": False})
    for cname, (w, r) in {"main": (1.0, 1.0), "pr": (wall, rss)}.items():
        cfg = Configuration(name=cname, command=["bench", cname], benchmark="bench", cell="{}",
                            is_baseline=cname == "main")
        cfg.runs = [Run(seq=i, values={"wall_time": 0.05 * w * (1 + 0.002 * z),
                                       "max_rss": 20480.0 * r * (1 + 0.001 * z)})
                    for i, z in enumerate(rng.standard_normal(12))]
        rs.configurations.append(cfg)
    return rs


def fleet(submission: str = "", commits: tuple[str, str] | None = None) -> list[ResultSet]:
    out = [machine(n, k, submission) for k, n in enumerate(FLEET)]
    for rs in out:
        for cfg, commit in zip(rs.configurations, commits or (None, None), strict=True):
            cfg.commit = commit
    return out


MAIN, PR = "1a2b3c4d5e6f7a8b9c0d" * 2, "9f8e7d6c5b4a3f2e1d0c" * 2


def table_rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in md.splitlines()
            if ln.startswith("| ") and not ln.startswith("| machine ")]


def tables(md: str) -> dict[str, list[list[str]]]:
    """Each ### table's rows by its title."""
    out: dict[str, list[list[str]]] = {}
    for part in md.split("\n### ")[1:]:
        title, _, body = part.partition("\n")
        out[title] = table_rows(body)
    return out


def test_markdown_has_one_row_per_machine_with_what_it_is() -> None:
    pm = build(fleet(), metrics=["wall_time", "max_rss"])
    md = render_markdown(pm)
    assert "┃" not in md and "│" not in md  # GitHub Markdown, not rich boxes
    # one table per metric, each as narrow as a table of one
    heads = [ln for ln in md.splitlines() if ln.startswith("| machine ")]
    # the modality of the table's runs (ResultsComparer's column) beside the first metric
    heads_of = "| machine | OS | arch | CPU | base (main) | diff (pr) | ratio [95% CI] | verdict |"
    assert heads == [heads_of + " modality (wall_time) |", heads_of]
    assert md.count("|---|---|---|---|---:|---:|---:|---|---|\n") == 1
    assert md.count("|---|---|---|---|---:|---:|---:|---|\n") == 1
    by_table = tables(md)
    assert list(by_table) == ["pr vs main (wall_time)", "pr vs main (max_rss)"]
    rows = by_table["pr vs main (wall_time)"]
    # sorted by name, whatever order the results came in
    assert [r[0] for r in rows] == ["arm64-linux", "arm64-mac", "x64-linux"]
    by = {r[0]: r for r in rows}
    assert by["x64-linux"][1:4] == ["Ubuntu 24.04.1 LTS", "x86_64",
                                    "AMD EPYC 7763 64-Core Processor"]
    assert by["arm64-mac"][1] == "Darwin 23.6.0"  # an OS name without its version gets one
    # "slower on x64, same on Arm64": base and diff absolute, the ratio, the verdict
    assert by["x64-linux"][4].endswith(" ms") and by["x64-linux"][5].endswith(" ms")
    assert float(by["x64-linux"][4][:-3]) == pytest.approx(50, rel=0.01)
    assert float(by["x64-linux"][5][:-3]) == pytest.approx(60, rel=0.01)
    assert float(by["x64-linux"][6].split("x [")[0]) == pytest.approx(1.20, rel=0.01)
    assert by["x64-linux"][7].startswith("slower")
    assert by["arm64-linux"][7].startswith("equivalent")
    # the second metric: larger on the one machine whose memory grew
    rss = {r[0]: r for r in by_table["pr vs main (max_rss)"]}
    assert rss["arm64-linux"][4].endswith(" MiB") and rss["arm64-linux"][7].startswith("larger")
    assert rss["x64-linux"][7].startswith("equivalent")
    assert "- slower on 1 of 3 machines" in md
    assert "- larger on 1 of 3 machines; equivalent on 2" in md
    assert "**3 machines**" in md and len(rows) == 3


def test_the_commit_range_when_the_builds_are_commits(tmp_path: Path) -> None:
    assert "commits" not in render_markdown(build(fleet()))  # builds that are not commits
    md = render_markdown(build(fleet(commits=(MAIN, PR))))
    assert "- commits main..pr: 1a2b3c4d5e..9f8e7d6c5b\n" in md
    results = fleet(commits=(MAIN, PR))
    results[1].configurations[1].commit = "abcdef0123" * 4  # arm64-mac measured another PR
    results[2].configurations[1].commit = None  # arm64-linux did not say
    pm = build(results)
    assert pm.blocks[0].commit_range == ("arm64-mac 1a2b3c4d5e..abcdef0123; x64-linux "
                                         "1a2b3c4d5e..9f8e7d6c5b; not recorded on arm64-linux")
    page = render_html(pm, tmp_path / "out").read_text()
    assert "commits main..pr: arm64-mac 1a2b3c4d5e..abcdef0123" in page


def test_user_text_is_escaped_and_missing_rows_say_so() -> None:
    results = fleet()
    results[0].fingerprint.machine_name = "evil|<b>x</b>"
    del results[2].configurations[1]  # arm64-linux never measured pr
    results[2].configurations.append(Configuration(name="other", command=["o"], benchmark="b",
                                                   cell="{}", runs=results[0]
                                                   .configurations[0].runs))
    md = render_markdown(build(results))
    # escaped in the prose; verbatim only inside the reproduce commands' code fence
    prose, fenced = md.split("```sh\n")
    assert "evil\\|\\<b>x\\</b>" in prose and "<b>" not in prose.replace("\\<", "")
    assert fenced.endswith("```\n") and fenced.count("```") == 1
    rows = {r[0]: r for r in table_rows(md)}
    assert rows["arm64-linux"][4] == "missing"
    assert len(rows["evil\\|\\<b>x\\</b>"]) == 9  # the pipe did not split the cell


def test_terminal_and_html_show_the_same_columns(tmp_path: Path) -> None:
    pm = build(fleet(), metrics=["wall_time", "max_rss"])
    con = Console(record=True, width=400, color_system=None)
    print_terminal(pm, con)
    text = con.export_text()
    line = next(ln for ln in text.splitlines() if "x64-linux" in ln and "x86_64" in ln)
    assert "AMD EPYC 7763" in line and " ms " in line and "slower (regression" in line
    assert text.index("arm64-linux") < text.index("arm64-mac") < text.index("│ x64-linux ")
    # a narrow terminal stacks the cells instead of cutting them
    narrow = Console(record=True, width=80, color_system=None)
    print_terminal(pm, narrow)
    out = narrow.export_text()
    assert "  CPU: AMD EPYC 7763 64-Core Processor" in out and "…" not in out
    page = render_html(pm, tmp_path / "out").read_text()
    assert "<th class='l'>arch</th>" in page and "<td class='l'>aarch64</td>" in page
    assert page.count("<tr>") == 1 + 3 and "class='l larger'" in page


def test_report_markdown_over_several_ids_prints_markdown(tmp_path: Path) -> None:
    store = Store(tmp_path / "f.sqlite")
    ids = [store.save(r) for r in fleet()]
    res = CliRunner().invoke(app, ["report", *map(str, ids), "--db", store.location,
                                   "--markdown", "--no-plots", "-m", "wall_time",
                                   "-m", "max_rss", "--out", str(tmp_path / "rep")],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("**3 machines**") and "┃" not in res.stdout
    assert "### pr vs main (max_rss)" in res.stdout
    assert (tmp_path / "rep" / "machines.html").exists()
    bad = CliRunner().invoke(app, ["report", *map(str, ids), "--db", store.location,
                                   "-m", "nope", "--out", str(tmp_path / "rep2")])
    assert bad.exit_code != 0 and "no machine measured nope" in str(bad.exception)


@pytest.mark.system
def test_report_submission_markdown_from_postgresql(pg_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PERFLAB_DB", None)
    run = [sys.executable, "-m", "perflab"]
    init = subprocess.run([*run, "fleet", "init", "--db", pg_url], capture_output=True,
                          text=True, env=env, timeout=120)
    assert init.returncode == 0, init.stderr
    store = Store(pg_url)
    for r in fleet("20261126-105000-ab12", commits=(MAIN, PR)):
        store.save(r)
    store.save(machine("x64-linux", 9, "20261126-999999-other"))  # another submission
    p = subprocess.run([*run, "report", "--submission", "20261126-105000-ab12", "--db", pg_url,
                        "--markdown", "-m", "wall_time", "-m", "max_rss",
                        "--out", str(tmp_path / "rep")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    by_table = tables(p.stdout)
    rows, rss = by_table["pr vs main (wall_time)"], by_table["pr vs main (max_rss)"]
    assert [r[0] for r in rows] == ["arm64-linux", "arm64-mac", "x64-linux"]
    assert [r[2] for r in rows] == ["aarch64", "arm64", "x86_64"]
    assert rows[2][7].startswith("slower") and rss[0][7].startswith("larger")
    assert "┃" not in p.stdout and "report: " in p.stderr and "report: " not in p.stdout
    assert "- commits main..pr: 1a2b3c4d5e..9f8e7d6c5b" in p.stdout


# (build, configuration) -> (wall-time factor, writable mappings): pr is 10% slower on
# x64-linux only (FLEET's wall ratio is 1.20 there: take 1.10), W^X on has 4 writable maps
GRID = {("main", "wx-off"): (1.0, 1.0), ("main", "wx-on"): (1.0, 4.0),
        ("pr", "wx-off"): (1.10, 1.0), ("pr", "wx-on"): (1.10, 4.0)}
MAPS = MetricInfo("maps_writable", "", "workload")


def grid_machine(name: str, seed: int) -> ResultSet:
    """A W^X suite's result on one machine: builds main/pr x configurations wx-off/wx-on."""
    rs = machine(name, seed)
    rs.kind = "suite"
    rs.metrics["maps_writable"] = MAPS
    rng = np.random.default_rng(seed)
    slow = FLEET[name][3] > 1
    rs.configurations = []
    for (b, c), (w, maps) in GRID.items():
        cfg = Configuration(name=f"{b}/{c}", command=["prog", b, c], params={"kind": "stub"},
                            is_baseline=(b, c) == ("main", "wx-off"))
        w = w if slow else 1.0
        cfg.runs = [Run(seq=i, values={"wall_time": 0.05 * w * (1 + 0.002 * z),
                                       "maps_writable": maps})
                    for i, z in enumerate(rng.standard_normal(12))]
        rs.configurations.append(cfg)
    return rs


def test_a_build_by_configuration_grid_is_one_table(tmp_path: Path) -> None:
    pm = build([grid_machine(n, k) for k, n in enumerate(FLEET)],
               metrics=["wall_time", "maps_writable"])
    md = render_markdown(pm)
    # one table per metric, not one per candidate, nor both metrics side by side (24 columns)
    grid = "### builds main, pr x configurations wx-off, wx-on [kind=stub] ({}); ratios " \
        "against main/wx-off"
    assert md.count("### ") == 2
    assert grid.format("wall_time") in md and grid.format("maps_writable") in md
    heads = [ln for ln in md.splitlines() if ln.startswith("| machine ")]
    assert heads[0] == heads[1]
    cols = [c.strip() for c in heads[0].strip("|").split(" | ")]
    assert cols[:5] == ["machine", "OS", "arch", "CPU", "main/wx-off"]
    assert cols[5:8] == ["main/wx-on", "main/wx-on ratio [95% CI]", "main/wx-on verdict"]
    assert len(cols) == 4 + 1 + 3 * 3
    by_table = tables(md)
    wall = {r[0]: dict(zip(cols, r, strict=True))
            for r in by_table[grid.format("wall_time")[4:]]}
    maps = {r[0]: dict(zip(cols, r, strict=True))
            for r in by_table[grid.format("maps_writable")[4:]]}
    assert list(wall) == list(maps) == ["arm64-linux", "arm64-mac", "x64-linux"]
    x64 = wall["x64-linux"]
    assert x64["arch"] == "x86_64" and x64["OS"] == "Ubuntu 24.04.1 LTS"
    assert float(x64["main/wx-off"][:-3]) == pytest.approx(50, rel=0.01)
    assert float(x64["pr/wx-on"][:-3]) == pytest.approx(55, rel=0.01)
    assert x64["pr/wx-on ratio [95% CI]"].startswith("1.1")
    assert x64["pr/wx-off verdict"].startswith("slower")
    assert x64["main/wx-on verdict"].startswith("equivalent")
    # "slower on x64, same on Arm64"; the second metric in its own table
    assert wall["arm64-linux"]["pr/wx-off verdict"].startswith("equivalent")
    arm = maps["arm64-linux"]
    assert arm["main/wx-off"] == "1" and arm["pr/wx-on"] == "4"
    assert arm["pr/wx-on verdict"].startswith("larger")
    assert arm["pr/wx-off verdict"].startswith("equivalent")
    assert "- pr/wx-off: slower on 1 of 3 machines" in md
    page = render_html(pm, tmp_path / "out").read_text()
    assert page.count("<h2>") == 1 and page.count("<tr>") == 1 + 3
    assert "<th>maps_writable pr/wx-on</th>" in page and "class='l larger'" in page
    for width in (600, 120):  # a table, or its cells stacked: the same title as written
        con = Console(record=True, width=width, color_system=None)
        print_terminal(pm, con)
        assert "builds main, pr x configurations wx-off, wx-on [kind=stub] (" in con.export_text()


def test_the_grid_gives_its_commit_range_by_build() -> None:
    results = [grid_machine(n, k) for k, n in enumerate(FLEET)]
    for rs in results:
        for cfg in rs.configurations:
            cfg.commit = MAIN if cfg.name.startswith("main/") else PR
    md = render_markdown(build(results))
    assert md.count("- commits main..pr: 1a2b3c4d5e..9f8e7d6c5b\n") == 1
    # reproduce: each commit's worktree, built, and the (commit, command) pairs compared
    # with the plan the machines were judged with; each worktree in a new private directory
    assert ('perflab compare -m wall_time --threshold 0.01 --correction holm --estimator trim '
            '-n main/wx-off -n pr/wx-on --shell '
            '"cd \\"$tree_1a2b3c4d5e\\" && prog main wx-off" '
            '"cd \\"$tree_9f8e7d6c5b\\" && prog pr wx-on"') in md
    assert ('{ tree_9f8e7d6c5b=$(mktemp -d) && git -C REPO worktree add --detach '
            f'"$tree_9f8e7d6c5b" {PR}; }}') in md
    assert "perflab-" not in md


def test_configurations_not_named_build_slash_configuration_stay_one_table_each() -> None:
    results = [grid_machine(n, k) for k, n in enumerate(FLEET)]
    for rs in results:
        for cfg in rs.configurations:
            cfg.name = cfg.name.replace("/", "-")
    assert render_markdown(build(results)).count("### ") == 3
